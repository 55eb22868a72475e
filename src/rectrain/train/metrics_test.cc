#include "rectrain/train/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "rectrain/base/random.h"

namespace rectrain::train {
namespace {

// O(n^2) reference: pairs (positive, negative) with the positive scored higher, ties 1/2.
double BruteAuc(const std::vector<float>& s, const std::vector<float>& y) {
  double pairs = 0, pos = 0, neg = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (y[i] > 0.5f) pos += 1; else neg += 1;
    for (size_t j = 0; j < s.size(); ++j) {
      if (y[i] > 0.5f && y[j] <= 0.5f) pairs += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
    }
  }
  return pairs / (pos * neg);
}

void RandomData(uint64_t seed, int n, int distinct, std::vector<float>* s, std::vector<float>* y) {
  Rng rng(seed);
  s->resize(n);
  y->resize(n);
  for (int i = 0; i < n; ++i) {
    // Few distinct values -> many ties; labels correlated with the score.
    (*s)[i] = static_cast<float>(rng.Below(distinct)) / static_cast<float>(distinct);
    (*y)[i] = rng.Uniform() < 0.2 + 0.6 * (*s)[i] ? 1.0f : 0.0f;
  }
}

TEST(Metrics, AucMatchesBruteForceWithTies) {
  for (int threads : {1, 2, 3}) {
    ComputeContext ctx{.num_threads = threads};
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      for (int distinct : {2, 7, 1000000}) {
        std::vector<float> s, y;
        RandomData(seed, 1500, distinct, &s, &y);
        EXPECT_NEAR(ExactAuc(s, y, ctx), BruteAuc(s, y), 1e-12)
            << "threads=" << threads << " seed=" << seed << " distinct=" << distinct;
      }
    }
  }
}

TEST(Metrics, AucParallelSortLargeInputMatchesSerial) {
  std::vector<float> s, y;
  RandomData(9, 300000, 5000, &s, &y);
  const double serial = ExactAuc(s, y, ComputeContext{.num_threads = 1});
  EXPECT_EQ(ExactAuc(s, y, ComputeContext{.num_threads = 2}), serial);
  EXPECT_EQ(ExactAuc(s, y, ComputeContext{.num_threads = 5}), serial);
}

TEST(Metrics, AucEdgeCases) {
  ComputeContext ctx;
  EXPECT_DOUBLE_EQ(ExactAuc(std::vector<float>{0.1f, 0.9f}, std::vector<float>{0, 1}, ctx), 1.0);
  EXPECT_DOUBLE_EQ(ExactAuc(std::vector<float>{0.9f, 0.1f}, std::vector<float>{0, 1}, ctx), 0.0);
  EXPECT_DOUBLE_EQ(ExactAuc(std::vector<float>{0.5f, 0.5f}, std::vector<float>{0, 1}, ctx), 0.5);
  EXPECT_DOUBLE_EQ(ExactAuc(std::vector<float>{-0.0f, 0.0f}, std::vector<float>{0, 1}, ctx), 0.5);
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{0.1f, 0.2f}, std::vector<float>{1, 1}, ctx)));
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{NAN, 0.2f}, std::vector<float>{0, 1}, ctx)));
  EXPECT_TRUE(std::isnan(ExactAuc(std::vector<float>{}, std::vector<float>{}, ctx)));
}

TEST(Metrics, LogLossCalibrationNe) {
  MetricAccumulator acc;
  std::vector<float> p = {0.2f, 0.8f, 0.5f, 0.1f};
  std::vector<float> y = {0, 1, 1, 0};
  acc.Add(p, y, {});
  EvalMetrics m = acc.Compute(ComputeContext{}, /*with_gauc=*/true);
  const double ll = -(std::log(0.8) + std::log(0.8) + std::log(0.5) + std::log(0.9)) / 4;
  EXPECT_NEAR(m.logloss, ll, 1e-7);
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.positives, 2);
  EXPECT_NEAR(m.calibration, (1.6 / 4) / 0.5, 1e-7);
  EXPECT_NEAR(m.ne, ll / std::log(2.0), 1e-7);
  EXPECT_DOUBLE_EQ(m.auc, 1.0);
  EXPECT_TRUE(std::isnan(m.gauc));  // no group keys
  // Predicting the base rate everywhere gives NE = 1.
  MetricAccumulator base;
  std::vector<float> q(4, 0.5f);
  base.Add(q, y, {});
  EXPECT_NEAR(base.Compute(ComputeContext{}, false).ne, 1.0, 1e-6);
  // Clipping keeps a confident mistake finite.
  EXPECT_NEAR(LogLoss(std::vector<float>{1.0f}, std::vector<float>{0}), -std::log(1e-7), 1e-6);
}

TEST(Metrics, GaucIsImpressionWeightedOverGroupsWithBothClasses) {
  std::vector<float> s, y;
  RandomData(3, 3000, 50, &s, &y);
  std::vector<uint64_t> g(s.size());
  Rng rng(4);
  for (auto& k : g) k = rng.Below(40);
  g[0] = 999;  // a single-row group (one class) must be skipped
  MetricAccumulator acc;
  // Stream in uneven batches.
  for (size_t begin = 0; begin < s.size(); begin += 700) {
    size_t n = std::min<size_t>(700, s.size() - begin);
    acc.Add(std::span(s).subspan(begin, n), std::span(y).subspan(begin, n),
            std::span(g).subspan(begin, n));
  }
  EvalMetrics m = acc.Compute(ComputeContext{.num_threads = 2}, true);
  std::map<uint64_t, std::pair<std::vector<float>, std::vector<float>>> groups;
  for (size_t i = 0; i < s.size(); ++i) {
    groups[g[i]].first.push_back(s[i]);
    groups[g[i]].second.push_back(y[i]);
  }
  double num = 0, den = 0;
  int64_t used = 0;
  for (auto& [k, gs] : groups) {
    double pos = 0;
    for (float v : gs.second) pos += v;
    if (pos == 0 || pos == gs.second.size()) continue;
    num += BruteAuc(gs.first, gs.second) * gs.first.size();
    den += gs.first.size();
    ++used;
  }
  EXPECT_NEAR(m.gauc, num / den, 1e-12);
  EXPECT_EQ(m.gauc_groups, used);
  EXPECT_NEAR(m.auc, BruteAuc(s, y), 1e-12);
}

}  // namespace
}  // namespace rectrain::train
