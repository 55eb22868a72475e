// tests/test_util.h: helpers shared by the integration tests: temp directories, generated
// datasets, file comparison, and a canonical reader of embedding table files.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "rectrain/data/generator.h"

namespace rectrain::testing {

inline std::string TempDir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("rectrain_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Generates `rows` rows of `shape` into dir/name (once per path).
inline std::string Generate(const std::string& dir, const std::string& name, int64_t rows,
                            uint64_t seed, const std::string& shape = "easy") {
  const std::string path = dir + "/" + name;
  if (!std::filesystem::exists(path)) {
    data::GenerateConfig g{.rows = rows, .out = path, .seed = seed, .shape = shape, .num_threads = 2};
    auto r = data::GenerateDataset(g);
    if (!r.ok()) return "";
  }
  return path;
}

// The content of an embedding table file (docs/formats/checkpoint-embedding.md) with rows and
// pending ids sorted by id, so two tables with equal contents compare equal whatever their
// slot order. Empty on a malformed file.
struct CanonicalTable {
  std::string header;  // the header's bytes from the version to the name: dims, counts, tick, counters
  std::string oov;
  std::vector<std::pair<uint64_t, std::string>> rows;     // id -> (updates, tick, payload)
  std::vector<std::pair<uint64_t, std::string>> pending;  // id -> (sightings, tick in version 2)
  bool ok = false;
  bool operator==(const CanonicalTable& o) const {
    return ok && o.ok && header == o.header && oov == o.oov && rows == o.rows && pending == o.pending;
  }
};

inline CanonicalTable ReadCanonicalTable(const std::string& path) {
  CanonicalTable t;
  const std::string d = ReadAll(path);
  if (d.size() < 84 || d.compare(0, 8, "RTEMBTB1") != 0) return t;
  auto u32 = [&](size_t off) { uint32_t v; std::memcpy(&v, d.data() + off, 4); return v; };
  auto u64 = [&](size_t off) { uint64_t v; std::memcpy(&v, d.data() + off, 8); return v; };
  const uint32_t dim = u32(12), width = u32(16), name_len = u32(20);
  const uint64_t row_count = u64(24), pending_count = u64(32);
  // Version 2 added two counters to the header and a tick to pending records.
  const size_t name_at = u32(8) >= 2 ? 96 : 80, pending_bytes = u32(8) >= 2 ? 16 : 12;
  t.header = d.substr(8, name_at - 8 + name_len);
  size_t pos = name_at + name_len + 4;
  const size_t payload = 4 * (dim + width);
  t.oov = d.substr(pos, 4 + payload);
  pos += 4 + payload + 4;
  for (uint64_t left = row_count; left > 0;) {
    const uint32_t n = u32(pos);
    pos += 4;
    for (uint32_t i = 0; i < n; ++i) {
      t.rows.emplace_back(u64(pos), d.substr(pos + 8, 8 + payload));
      pos += 16 + payload;
    }
    pos += 4;
    left -= n;
  }
  for (uint64_t left = pending_count; left > 0;) {
    const uint32_t n = u32(pos);
    pos += 4;
    for (uint32_t i = 0; i < n; ++i) {
      t.pending.emplace_back(u64(pos), d.substr(pos + 8, pending_bytes - 8));
      pos += pending_bytes;
    }
    pos += 4;
    left -= n;
  }
  if (pos + 8 != d.size() || d.compare(pos, 8, "RTEMBEND") != 0) return t;
  std::sort(t.rows.begin(), t.rows.end());
  std::sort(t.pending.begin(), t.pending.end());
  t.ok = true;
  return t;
}

}  // namespace rectrain::testing
