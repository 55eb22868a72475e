// Decode throughput of the hot column shapes: dictionary-encoded strings and int64 (PLAIN and
// DELTA_BINARY_PACKED), from a file written by DuckDB. Bytes/s counts decoded output bytes
// (values + offsets; in the dictionary form indices + the table), items/s counts values.
//   parquet_benchmark [--benchmark_filter=...]  (RECTRAIN_PARQUET_BENCH_FILE=path overrides)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet {
namespace {

std::string BenchFile(const char* name) {
  if (const char* env = std::getenv("RECTRAIN_PARQUET_BENCH_FILE")) return env;
  return std::string(RECTRAIN_PARQUET_FIXTURES) + "/" + name;
}

void ReadColumnBench(benchmark::State& state, const char* file_name, const char* column,
                     bool dictionary_form = false) {
  auto file = ParquetFile::Open(BenchFile(file_name));
  if (!file.ok()) {
    state.SkipWithError(file.status().ToString().c_str());
    return;
  }
  int col = (*file)->FindColumn(column).value();
  ColumnChunkReader reader(file->get());
  reader.set_dictionary_form(dictionary_form);
  ColumnData d;
  int64_t values = 0, bytes = 0;
  for (auto _ : state) {
    for (int rg = 0; rg < (*file)->num_row_groups(); ++rg) {
      Status st = reader.Read(rg, col, &d);
      if (!st.ok()) {
        state.SkipWithError(st.ToString().c_str());
        return;
      }
      values += d.num_slots();
      const int64_t width = d.kind == ValueKind::kInt64 ? 8 : 4;
      bytes += d.kind == ValueKind::kBinary
                   ? static_cast<int64_t>(d.bytes.size() + d.offsets.size() * 8)
                   : d.num_entries() * width;
      bytes += static_cast<int64_t>(d.indices.size() * 4);
    }
  }
  state.SetItemsProcessed(values);
  state.SetBytesProcessed(bytes);
}

BENCHMARK_CAPTURE(ReadColumnBench, dict_string_snappy_v1, "duckdb_snappy_v1.parquet", "c_low");
BENCHMARK_CAPTURE(ReadColumnBench, dict_string_zstd_v2, "duckdb_zstd_v2.parquet", "c_low");
BENCHMARK_CAPTURE(ReadColumnBench, dict_string_snappy_v1_dictionary_form,
                  "duckdb_snappy_v1.parquet", "c_low", true);
BENCHMARK_CAPTURE(ReadColumnBench, plain_string_uncompressed, "duckdb_uncompressed_v1.parquet",
                  "s_high");
BENCHMARK_CAPTURE(ReadColumnBench, int64_plain_uncompressed, "duckdb_uncompressed_v1.parquet",
                  "i64");
BENCHMARK_CAPTURE(ReadColumnBench, int64_plain_snappy, "duckdb_snappy_v1.parquet", "i64");
BENCHMARK_CAPTURE(ReadColumnBench, int64_delta_zstd_v2, "duckdb_zstd_v2.parquet", "i64");
BENCHMARK_CAPTURE(ReadColumnBench, list_int64_delta_v2, "duckdb_zstd_v2.parquet", "seq");

}  // namespace
}  // namespace rectrain::io::parquet
