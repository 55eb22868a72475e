// libFuzzer target: opens the input as a Parquet file and decodes every column chunk, expanded
// and in the dictionary form.
// Build: cmake -DRECTRAIN_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
// Run:   ./parquet_fuzzer -max_len=200000 tests/parquet_fixtures/   (seed with the fixtures)
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rectrain/io/parquet/parquet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rectrain::io::parquet;
  ParquetReadOptions opt;
  opt.max_page_bytes = 4 << 20;
  opt.max_values_per_chunk = 1 << 20;
  opt.max_chunk_bytes = 64 << 20;
  auto file = ParquetFile::OpenBuffer("fuzz", std::vector<uint8_t>(data, data + size), opt);
  if (!file.ok()) return 0;
  ColumnChunkReader reader(file->get()), dict_reader(file->get());
  dict_reader.set_dictionary_form(true);
  ColumnData out;
  for (int rg = 0; rg < (*file)->num_row_groups(); ++rg) {
    for (int c = 0; c < (*file)->num_columns(); ++c) {
      reader.Read(rg, c, &out).IgnoreError();
      dict_reader.Read(rg, c, &out).IgnoreError();
    }
  }
  return 0;
}
