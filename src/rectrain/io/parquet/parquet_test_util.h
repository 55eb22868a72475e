// rectrain/io/parquet/parquet_test_util.h: test-only helpers shared by the parquet tests
// (fixture location and names). Not part of the library.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rectrain::io::parquet::testing_util {

// tests/parquet_fixtures of the source tree (RECTRAIN_SOURCE_DIR set by ctest, else the
// compile-time path).
inline std::string FixtureDir() {
  if (const char* env = std::getenv("RECTRAIN_SOURCE_DIR")) {
    return std::string(env) + "/tests/parquet_fixtures";
  }
  return RECTRAIN_PARQUET_FIXTURES;
}

// The 20 files of make_fixtures.mjs: {duckdb,pqwasm} x codecs x {v1,v2}.
inline std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  for (const char* writer : {"duckdb", "pqwasm"}) {
    for (const char* codec : {"uncompressed", "snappy", "gzip", "zstd", "lz4_raw"}) {
      for (const char* ver : {"v1", "v2"}) {
        names.push_back(std::string(writer) + "_" + codec + "_" + ver + ".parquet");
      }
    }
  }
  return names;
}

inline std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace rectrain::io::parquet::testing_util
