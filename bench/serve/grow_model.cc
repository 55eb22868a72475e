// bench/serve/grow_model: copies a serving model with its first table replaced by N random rows
// (ids spread over 64 bits, N(0, 0.01) weights) and a fresh manifest, to measure cold start and
// memory of a model larger than any trained here (docs/benchmarks.md "Serving").
// Usage: grow_model MODEL_DIR OUT_DIR ROWS
#include <cstdio>
#include <filesystem>
#include <random>

#include "rectrain/base/random.h"
#include "rectrain/serve/model_package.h"

using namespace rectrain;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: grow_model MODEL_DIR OUT_DIR ROWS\n");
    return 2;
  }
  const std::string in = argv[1], out = argv[2];
  const int64_t rows = std::stoll(argv[3]);
  auto m = serve::ReadManifest(in);
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
    return 1;
  }
  std::filesystem::remove_all(out);
  std::filesystem::copy(in, out, std::filesystem::copy_options::recursive);
  serve::PackageTable& t = m->tables.at(0);
  std::vector<uint64_t> ids(static_cast<size_t>(rows));
  std::vector<float> w(static_cast<size_t>(rows) * static_cast<size_t>(t.dim));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  for (int64_t i = 0; i < rows; ++i) ids[static_cast<size_t>(i)] = Mix64(static_cast<uint64_t>(i) * 2654435761ULL + 1);
  for (float& x : w) x = normal(rng);
  std::vector<float> oov(static_cast<size_t>(t.dim), 0.0f);
  if (auto s = serve::WriteTableFile(out + "/" + t.file.path, t.dim, t.type, ids, w, oov); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  t.rows = rows + 1;
  t.dropped = 0;
  t.file = *serve::DescribeFile(out, t.file.path);
  std::FILE* f = std::fopen((out + "/manifest.json").c_str(), "w");
  const std::string text = serve::ManifestToJson(*m);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  std::printf("%s: table %s with %lld rows of dim %d, %.2f GB\n", out.c_str(), t.name.c_str(),
              static_cast<long long>(rows), t.dim, static_cast<double>(t.file.bytes) / 1e9);
  return 0;
}
