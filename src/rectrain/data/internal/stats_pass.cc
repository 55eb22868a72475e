#include "rectrain/data/internal/stats_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "rectrain/base/random.h"
#include "rectrain/io/file.h"

namespace rectrain::data::internal {
namespace {

constexpr int64_t kReservoir = 1 << 20;

void Add(std::string* s, std::string_view key, std::string_view value) {
  s->append(key);
  s->push_back('=');
  s->append(std::to_string(value.size()));
  s->push_back(':');
  s->append(value);
  s->push_back('\n');
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    s += std::to_string(x.size()) + ":" + x + ",";
  }
  return s;
}

}  // namespace

std::string DataSignature(const DataConfig& c) {
  std::string s = "rectrain-data-v1\n";
  const SchemaConfig& k = c.schema;
  Add(&s, "format", FormatName(k.format));
  Add(&s, "criteo", std::to_string(k.criteo_dense) + "," + std::to_string(k.criteo_sparse));
  Add(&s, "delimiter", std::string(1, k.delimiter));
  Add(&s, "header", k.header ? "1" : "0");
  Add(&s, "label", k.label);
  Add(&s, "dense", Join(k.dense));
  Add(&s, "sparse", Join(k.sparse));
  Add(&s, "group_key", k.group_key);
  Add(&s, "columns", Join(k.columns));
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%.9g,%d,%.9g,%.9g", c.dense.fill, c.dense.log1p ? 1 : 0,
                c.dense.clip_min, c.dense.clip_max);
  Add(&s, "dense_default", buf);
  Add(&s, "hash_seed", std::to_string(c.hash_seed));
  for (const auto& [name, spec] : c.transforms) Add(&s, "transform." + name, spec);
  Add(&s, "filters", Join(c.filters));
  std::snprintf(buf, sizeof(buf), "%.17g", c.negative_downsampling);
  Add(&s, "negative_downsampling", buf);
  return s;
}

std::string CacheDir(const DataConfig& config) {
  if (!config.cache_dir.empty()) return config.cache_dir;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rectrain-cache";
}

namespace {

struct Accumulator {
  bool quantiles = false;
  int64_t n_quantiles = 0;
  int64_t count = 0;
  double mean = 0, m2 = 0;
  std::vector<double> reservoir;
  Rng rng{0};

  void Add(double x) {
    ++count;
    const double d = x - mean;
    mean += d / static_cast<double>(count);
    m2 += d * (x - mean);
    if (!quantiles) return;
    if (static_cast<int64_t>(reservoir.size()) < kReservoir) {
      reservoir.push_back(x);
    } else {
      const uint64_t j = rng.Below(static_cast<uint64_t>(count));
      if (j < static_cast<uint64_t>(kReservoir)) reservoir[j] = x;
    }
  }
  FeatureStats Finish() {
    FeatureStats s;
    s.mean = mean;
    s.std = count > 1 ? std::sqrt(m2 / static_cast<double>(count)) : 1.0;
    if (!(s.std > 0)) s.std = 1.0;
    if (quantiles && !reservoir.empty()) {
      std::sort(reservoir.begin(), reservoir.end());
      const int64_t n = static_cast<int64_t>(reservoir.size());
      for (int64_t k = 1; k < n_quantiles; ++k) {
        // Lower quantile: the value at rank floor(k n / q).
        const int64_t idx = std::min(n - 1, (k * n) / n_quantiles);
        const double b = reservoir[idx];
        if (s.boundaries.empty() || b > s.boundaries.back()) s.boundaries.push_back(b);
      }
    }
    return s;
  }
};

std::string FormatStats(const std::vector<FeatureStats>& stats) {
  std::string out = "rectrain-stats-v1 " + std::to_string(stats.size()) + "\n";
  char buf[64];
  for (const FeatureStats& s : stats) {
    std::snprintf(buf, sizeof(buf), "%.17g %.17g %zu", s.mean, s.std, s.boundaries.size());
    out += buf;
    for (double b : s.boundaries) {
      std::snprintf(buf, sizeof(buf), " %.17g", b);
      out += buf;
    }
    out += "\n";
  }
  return out;
}

bool ParseStats(const std::string& text, size_t expected, std::vector<FeatureStats>* out) {
  std::istringstream in(text);
  std::string magic;
  size_t n = 0;
  if (!(in >> magic >> n) || magic != "rectrain-stats-v1" || n != expected) return false;
  out->resize(n);
  for (FeatureStats& s : *out) {
    size_t nb = 0;
    if (!(in >> s.mean >> s.std >> nb) || nb > (1u << 24)) return false;
    s.boundaries.resize(nb);
    for (double& b : s.boundaries) {
      if (!(in >> b)) return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<FeatureStats>> ComputeFeatureStats(const DataConfig& config,
                                                      const ReadOptions& options,
                                                      const ParsePlan& plan) {
  std::vector<Accumulator> acc;
  for (const std::vector<FeaturePlan>* list : {&plan.dense, &plan.sparse}) {
    for (const FeaturePlan& f : *list) {
      if (f.stats_step < 0) continue;
      Accumulator a;
      const TransformStep& step = f.transform.steps[f.stats_step];
      a.quantiles = step.op == StepOp::kQuantiles;
      a.n_quantiles = a.quantiles ? static_cast<int64_t>(step.args[0]) : 0;
      a.rng = Rng(DeriveSeed(0x7374617473ULL, acc.size()));
      acc.push_back(std::move(a));
    }
  }
  DataConfig sc = config;
  if (!config.stats_files.empty()) sc.files = config.stats_files;
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths(sc.files));
  // The key: what the pass reads (fingerprints) and how (the config).
  std::string key = DataSignature(sc);
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<io::FileFingerprint> fps, io::FingerprintAll(paths));
  for (size_t i = 0; i < paths.size(); ++i) key += paths[i] + "=" + fps[i].ToString() + "\n";
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(HashBytes(key, 0x73746174ULL)));
  const std::string dir = CacheDir(config);
  const std::string path = dir + "/stats-" + hex + ".txt";
  std::vector<FeatureStats> out;
  if (auto text = io::ReadFileToString(path); text.ok() && ParseStats(*text, acc.size(), &out)) {
    return out;
  }
  ReadOptions ro = options;
  ro.shuffle = false;
  ro.skip_rows = 0;
  ro.epoch = 0;
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenStatsPassReader(sc, ro));
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> batch, reader->Next());
    if (!batch) break;
    const int nd = batch->num_dense;
    for (int64_t r = 0; r < batch->size; ++r) {
      for (int j = 0; j < nd; ++j) acc[j].Add(batch->dense[r * nd + j]);
    }
    reader->Recycle(std::move(*batch));
  }
  for (Accumulator& a : acc) out.push_back(a.Finish());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) {
    if (auto w = io::AtomicFileWriter::Create(path); w.ok()) {
      if ((*w)->Append(FormatStats(out)).ok()) (*w)->Commit().IgnoreError();
    }
  }
  return out;
}

}  // namespace rectrain::data::internal
