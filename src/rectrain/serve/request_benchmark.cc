// The /v1/predict request parser on a 256-row criteo body: the fast path for {"lines": [...]}
// against the general JSON parser, and by-name rows; then the rows' text parse (RowParser).
// Run: build/release/src/rectrain/serve/request_benchmark
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "rectrain/base/random.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/serve/service.h"

namespace rectrain::serve {
namespace {

struct Bodies {
  std::unique_ptr<data::RowParser> parser;
  std::string lines, rows;
  std::vector<std::string> parsed;

  Bodies() {
    data::DataConfig c;  // criteo
    parser = std::move(data::RowParser::Create(c, {.format = data::DataFormat::kCriteo, .header = {}, .stats = {}})).value();
    Rng rng(5);
    nlohmann::json l = nlohmann::json::array(), r = nlohmann::json::array();
    for (int i = 0; i < 256; ++i) {
      std::string line = "0";
      nlohmann::json row = nlohmann::json::object();
      for (int d = 1; d <= 13; ++d) {
        const int v = static_cast<int>(rng.Below(1000));
        line += "\t" + std::to_string(v);
        row["I" + std::to_string(d)] = v;
      }
      for (int s = 1; s <= 26; ++s) {
        char hex[9];
        std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(rng.Below(1u << 31)));
        line += std::string("\t") + hex;
        row["C" + std::to_string(s)] = hex;
      }
      l.push_back(line);
      r.push_back(row);
      parsed.push_back(line);
    }
    lines = nlohmann::json{{"lines", l}}.dump();
    rows = nlohmann::json{{"rows", r}}.dump();
  }
};

const Bodies& Get() {
  static const Bodies b;
  return b;
}

void BM_ParseRequest(benchmark::State& state) {
  const Bodies& b = Get();
  const int kind = static_cast<int>(state.range(0));  // 0 lines fast, 1 lines general, 2 rows
  const std::string& body = kind == 2 ? b.rows : b.lines;
  for (auto _ : state) {
    auto r = ParsePredictRequest(body, *b.parser, 1000, kind == 1);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * 256);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_ParseRequest)->ArgName("lines_fast0_general1_rows2")->DenseRange(0, 2);

void BM_ParseRows(benchmark::State& state) {
  Bodies& b = const_cast<Bodies&>(Get());
  data::Batch batch;
  for (auto _ : state) {
    benchmark::DoNotOptimize(b.parser->ParseLines(b.parsed, "bench", &batch).ok());
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_ParseRows);

}  // namespace
}  // namespace rectrain::serve
