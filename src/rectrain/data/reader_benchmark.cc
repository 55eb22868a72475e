// Reader and generator throughput in MB/s of Criteo-format text.
//   BM_ParseLines      the parse + transform core on one thread, file already in memory
//   BM_ReadCriteo/T    a full BatchReader pass (pread, T parse workers, batches of 4096)
//   BM_Generate/T      GenerateDataset with T threads (criteo shape)
// The input (criteo shape, 200k rows, ~45 MB) is generated once into $TMPDIR.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "rectrain/data/generator.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

const std::string& InputFile() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string p = std::string(tmp ? tmp : "/tmp") + "/rectrain_reader_bench_" + std::to_string(::getpid()) + ".tsv";
    GenerateConfig c;
    c.out = p;
    c.rows = 200000;
    c.seed = 1;
    c.num_threads = 2;
    auto r = GenerateDataset(c);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::abort();
    }
    std::atexit([] {
      std::filesystem::remove(InputFile());
      std::filesystem::remove(InputFile() + ".prob");
    });
    return p;
  }();
  return path;
}

void BM_ParseLines(benchmark::State& state) {
  const std::string text = io::ReadFileToString(InputFile()).value();
  DataConfig config;
  auto plan = internal::BuildPlan(config, {});
  internal::LineParser parser(&plan.value());
  internal::RowBlock block;
  for (auto _ : state) {
    block.Reset();
    size_t pos = 0;
    int64_t line = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      if (block.rows == 8192) block.Reset();
      parser.ParseLine(std::string_view(text.data() + pos, nl - pos), ++line, false, &block);
      pos = nl + 1;
    }
    benchmark::DoNotOptimize(block.ids.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseLines)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReadCriteo(benchmark::State& state) {
  DataConfig config;
  config.files = {InputFile()};
  ReadOptions opt;
  opt.num_threads = static_cast<int>(state.range(0));
  opt.batch_size = 4096;
  int64_t bytes = 0, rows = 0;
  double wait = 0;
  for (auto _ : state) {
    auto reader = OpenBatchReader(config, opt).value();
    while (true) {
      auto b = reader->Next();
      if (!b.ok() || !b->has_value()) break;
      benchmark::DoNotOptimize((*b)->labels.data());
    }
    bytes += reader->Stats().bytes_read;
    rows += reader->Stats().rows_read;
    wait += reader->Stats().wait_seconds;
  }
  state.SetBytesProcessed(bytes);
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["wait_s"] = wait / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ReadCriteo)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Generate(benchmark::State& state) {
  const std::string out = InputFile() + ".gen.tsv";
  GenerateConfig c;
  c.out = out;
  c.rows = 100000;
  c.num_threads = static_cast<int>(state.range(0));
  int64_t bytes = 0;
  for (auto _ : state) bytes += GenerateDataset(c).value().bytes;
  state.SetBytesProcessed(bytes);
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".prob");
}
BENCHMARK(BM_Generate)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rectrain::data
