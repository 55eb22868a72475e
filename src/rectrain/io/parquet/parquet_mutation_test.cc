// Robustness: thousands of random mutations and truncations of real fixtures must each yield OK
// or an error Status — never a crash, hang, sanitizer report or runaway allocation. Run it under
// the ASan/UBSan build (cmake -DRECTRAIN_SANITIZE=address,undefined) as well.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "parquet_test_util.h"
#include "rectrain/base/random.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet {
namespace {

using testing_util::FixtureDir;
using testing_util::ReadFileBytes;

// Tight limits keep each hostile read cheap; real fixture pages are far below them.
ParquetReadOptions Limits() {
  ParquetReadOptions o;
  o.max_page_bytes = 4 << 20;
  o.max_values_per_chunk = 1 << 20;
  o.max_chunk_bytes = 64 << 20;
  return o;
}

// Returns 1 if the whole file decoded, 0 if a Status error came back.
int ReadEverything(const std::vector<uint8_t>& bytes) {
  auto f = ParquetFile::OpenBuffer("mutant", bytes, Limits());
  if (!f.ok()) {
    EXPECT_NE(f.status().code(), StatusCode::kOk);
    EXPECT_EQ(f.status().message().rfind("mutant: ", 0), 0u) << f.status();
    return 0;
  }
  // Both the expanded and the dictionary form (which take different paths through the pages).
  ColumnChunkReader reader(f->get()), dict_reader(f->get());
  dict_reader.set_dictionary_form(true);
  ColumnData d;
  int ok = 1;
  for (int rg = 0; rg < (*f)->num_row_groups(); ++rg) {
    for (int c = 0; c < (*f)->num_columns(); ++c) {
      for (ColumnChunkReader* r : {&reader, &dict_reader}) {
        Status st = r->Read(rg, c, &d);
        if (!st.ok()) {
          EXPECT_EQ(st.message().rfind("mutant: ", 0), 0u) << st;
          ok = 0;
        }
      }
    }
  }
  return ok;
}

int Iterations() {
  if (const char* env = std::getenv("RECTRAIN_PARQUET_MUTATIONS")) return std::atoi(env);
  return 600;
}

class MutationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MutationTest, RandomMutationsNeverCrash) {
  const std::vector<uint8_t> orig = ReadFileBytes(FixtureDir() + "/" + GetParam());
  ASSERT_GT(orig.size(), 100u);
  ASSERT_EQ(ReadEverything(orig), 1);
  Rng rng(HashBytes(GetParam(), 42));
  const int iters = Iterations();
  int decoded = 0;
  for (int it = 0; it < iters; ++it) {
    std::vector<uint8_t> m = orig;
    const uint64_t n = m.size();
    int edits = 1 + static_cast<int>(rng.Below(4));
    for (int e = 0; e < edits; ++e) {
      // Half the edits land in the footer region, where one byte changes structure.
      uint64_t pos = rng.Below(2) ? n - 1 - rng.Below(std::min<uint64_t>(n, 3000)) : rng.Below(n);
      switch (rng.Below(4)) {
        case 0: m[pos] ^= static_cast<uint8_t>(1u << rng.Below(8)); break;
        case 1: m[pos] = static_cast<uint8_t>(rng.Below(256)); break;
        case 2: m[pos] = rng.Below(2) ? 0xff : 0x00; break;
        default:
          for (uint64_t k = pos; k < std::min<uint64_t>(n, pos + 1 + rng.Below(8)); ++k)
            m[k] = static_cast<uint8_t>(rng.Below(256));
      }
    }
    decoded += ReadEverything(m);
  }
  // Truncations at random points.
  for (int it = 0; it < iters / 10; ++it) {
    std::vector<uint8_t> t(orig.begin(), orig.begin() + rng.Below(orig.size()));
    EXPECT_EQ(ReadEverything(t), 0);
  }
  RecordProperty("decoded_ok", decoded);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MutationTest,
                         ::testing::Values("duckdb_zstd_v2.parquet", "duckdb_snappy_v1.parquet",
                                           "pqwasm_gzip_v1.parquet", "pqwasm_lz4_raw_v2.parquet",
                                           "duckdb_uncompressed_v1.parquet",
                                           "pqwasm_uncompressed_v2.parquet"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param.substr(0, param_info.param.size() - 8);
                         });

}  // namespace
}  // namespace rectrain::io::parquet
