// libFuzzer target: Parquet as a training input — the data reader's Parquet path (projection,
// row groups, nulls, list columns -> CSR, transforms, filters) over the fixture schema, plus the
// data profile of every column. io/parquet/parquet_fuzzer.cc covers the decoder alone.
// Build: cmake -DRECTRAIN_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
// Run:   ./parquet_reader_fuzzer -max_len=200000 tests/parquet_fixtures/   (seed: the fixtures)
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_util.h"
#include "rectrain/data/profile.h"
#include "rectrain/data/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rectrain::fuzz::WriteScratch(data, size, ".parquet");
  rectrain::data::DataConfig c;
  c.files = {path};
  c.cache_dir = "/nonexistent-rectrain-fuzz-cache";
  c.schema.format = "parquet";
  c.schema.label = "label";
  c.schema.dense = {"i32", "f32", "f64", "i64d"};
  c.schema.sparse = {"i64", "b", "c_low", "s_high", "seq", "tags", "c_x_b"};
  c.schema.group_key = "c_low";
  c.transforms = {{"i64d", "col(i64) | fill(-1) | clip(-5e18, 5e18)"},
                  {"c_x_b", "cross(c_low, b)"},
                  {"tags", "max_len(1)"}};
  c.filters = {"c_low not in [zz]"};
  c.max_bad_rows = 1000000;
  rectrain::data::ReadOptions o;
  o.batch_size = 64;
  auto reader = rectrain::data::OpenBatchReader(c, o);
  if (reader.ok()) {
    for (int i = 0; i < 100000; ++i) {
      auto batch = (*reader)->Next();
      if (!batch.ok() || !batch->has_value()) break;
    }
  }
  auto profile = rectrain::data::ProfileFiles({path}, c.schema, {}, 1);
  if (profile.ok()) (void)rectrain::data::FormatProfileJson(*profile);
  return 0;
}
