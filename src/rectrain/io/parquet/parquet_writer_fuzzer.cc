// libFuzzer target: the writer against the reader. Every row group of any file the reader
// decodes is written again (codec, page and dictionary limits chosen by the input's last byte)
// and read back; the values must be the same, else the target aborts. The writer must never
// crash or produce a file its own reader rejects.
// Build: cmake -DRECTRAIN_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
// Run:   ./parquet_writer_fuzzer -max_len=200000 tests/parquet_fixtures/ fuzz/corpus/parquet/
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "parquet_test_util.h"
#include "rectrain/io/parquet/parquet_file.h"
#include "rectrain/io/parquet/parquet_writer.h"

namespace {

using namespace rectrain::io::parquet;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "parquet_writer_fuzzer: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ParquetReadOptions limits;
  limits.max_page_bytes = 4 << 20;
  limits.max_values_per_chunk = 1 << 20;
  limits.max_chunk_bytes = 64 << 20;
  auto file = ParquetFile::OpenBuffer("fuzz", std::vector<uint8_t>(data, data + size), limits);
  if (!file.ok()) return 0;
  const ParquetFile& f = **file;
  std::vector<int> cols;
  std::vector<WriteColumn> schema;
  for (int c = 0; c < f.num_columns(); ++c) {
    if (!f.schema()[c].unsupported_reason.empty()) continue;
    cols.push_back(c);
    schema.push_back(WriteColumnLike(f.schema()[c]));
  }
  if (cols.empty()) return 0;
  const uint8_t knob = data[size - 1];
  ParquetWriteOptions o;
  o.compression = static_cast<Compression>(knob % 3);
  o.dictionary = (knob & 4) == 0;
  o.page_bytes = (knob & 8) ? 64 : 1 << 20;
  o.dictionary_page_bytes = (knob & 16) ? 32 : 1 << 20;
  StringSink sink;
  auto w = ParquetWriter::Create(schema, o, &sink);
  if (!w.ok()) return 0;  // e.g. two columns of one name
  std::vector<std::vector<ColumnData>> written;
  for (int rg = 0; rg < f.num_row_groups(); ++rg) {
    std::vector<ColumnData> group;
    bool ok = true;
    for (int c : cols) {
      auto d = f.ReadColumn(rg, c);
      ok = ok && d.ok();
      if (ok) group.push_back(std::move(d).value());
    }
    // A corrupt chunk, a column whose row count disagrees, or a null where the schema says
    // required: refused by Encode with a Status, never written.
    if (!ok || !(*w)->WriteRowGroup(group).ok()) continue;
    written.push_back(std::move(group));
  }
  if (!(*w)->Close().ok()) Fail("Close failed");
  const std::string& bytes = sink.data();
  auto back = ParquetFile::OpenBuffer("rewritten", std::vector<uint8_t>(bytes.begin(), bytes.end()));
  if (!back.ok()) Fail("the rewritten file does not open: " + back.status().ToString());
  if ((*back)->num_row_groups() != static_cast<int>(written.size())) Fail("row group count");
  for (int rg = 0; rg < (*back)->num_row_groups(); ++rg) {
    for (size_t i = 0; i < cols.size(); ++i) {
      auto d = (*back)->ReadColumn(rg, static_cast<int>(i));
      if (!d.ok()) Fail("read back: " + d.status().ToString());
      const std::string diff = rectrain::io::parquet::testing_util::ColumnDifference(written[rg][i], *d);
      if (!diff.empty()) Fail("column " + schema[i].name + " row group " + std::to_string(rg) + ": " + diff);
    }
  }
  return 0;
}
