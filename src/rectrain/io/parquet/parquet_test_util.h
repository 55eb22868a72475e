// rectrain/io/parquet/parquet_test_util.h: test-only helpers shared by the parquet tests and
// fuzzers (fixture location and names, comparing decoded columns). Not part of the library.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rectrain/io/parquet/parquet_file.h"

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

// "" when a and b hold the same values, nulls and list shapes (in either form; empty validity =
// all present; floats compared bit for bit), else the first difference.
inline std::string ColumnDifference(const ColumnData& a, const ColumnData& b) {
  if (a.kind != b.kind || a.num_rows != b.num_rows || a.is_list != b.is_list || a.num_slots() != b.num_slots()) {
    return "kind, rows, list shape or slot count differ (" + std::to_string(a.num_slots()) + " vs " +
           std::to_string(b.num_slots()) + " slots)";
  }
  if (a.is_list) {
    if (a.list_offsets != b.list_offsets) return "list offsets differ";
    for (int64_t r = 0; r < a.num_rows; ++r) {
      if (a.IsNullList(r) != b.IsNullList(r)) return "null list differs at row " + std::to_string(r);
    }
  }
  for (int64_t s = 0; s < a.num_slots(); ++s) {
    if (a.IsNull(s) != b.IsNull(s)) return "null differs at slot " + std::to_string(s);
    if (a.IsNull(s)) continue;
    const int64_t ea = a.Entry(s), eb = b.Entry(s);
    bool same = true;
    switch (a.kind) {
      case ValueKind::kBool: same = a.bools[ea] == b.bools[eb]; break;
      case ValueKind::kInt32: same = a.int32s[ea] == b.int32s[eb]; break;
      case ValueKind::kInt64: same = a.int64s[ea] == b.int64s[eb]; break;
      case ValueKind::kFloat: same = std::memcmp(&a.floats[ea], &b.floats[eb], 4) == 0; break;
      case ValueKind::kDouble: same = std::memcmp(&a.doubles[ea], &b.doubles[eb], 8) == 0; break;
      case ValueKind::kBinary: same = a.StringAt(s) == b.StringAt(s); break;
    }
    if (!same) return "value differs at slot " + std::to_string(s);
  }
  return "";
}

}  // namespace rectrain::io::parquet::testing_util
