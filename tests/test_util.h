// tests/test_util.h: helpers shared by the integration tests: temp directories, generated
// datasets, file comparison.
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

// CanonicalTable / ReadCanonicalTable (tables compared by id): rectrain/testing/table_file.h.

}  // namespace rectrain::testing
