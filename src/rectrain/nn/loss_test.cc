#include "rectrain/nn/loss.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/testing/grad_check.h"

namespace rectrain::nn {
namespace {

double NaiveBce(double z, double y) {
  const double p = 1.0 / (1.0 + std::exp(-z));
  return -(y * std::log(p) + (1 - y) * std::log(1 - p));
}

TEST(SigmoidCrossEntropyTest, MatchesNaiveFormulaAndIsStableForLargeLogits) {
  std::vector<float> z = {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f};
  std::vector<float> y = {0, 1, 1, 0, 1};
  std::vector<float> dz(z.size()), p(z.size());
  const double loss = SigmoidCrossEntropy(z, y, dz, p, ComputeContext{1});
  double expect = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    expect += NaiveBce(z[i], y[i]) / z.size();
    const double pi = 1.0 / (1.0 + std::exp(-static_cast<double>(z[i])));
    EXPECT_NEAR(p[i], pi, 1e-7);
    EXPECT_NEAR(dz[i], (pi - y[i]) / z.size(), 1e-7);
  }
  EXPECT_NEAR(loss, expect, 1e-7);

  std::vector<float> big = {100.0f, -100.0f, 100.0f, -100.0f};
  std::vector<float> lab = {1, 0, 0, 1};
  std::vector<float> g(4), pr(4);
  const double l2 = SigmoidCrossEntropy(big, lab, g, pr, ComputeContext{1});
  EXPECT_TRUE(std::isfinite(l2));
  EXPECT_NEAR(l2, (0 + 0 + 100 + 100) / 4.0, 1e-6);
  EXPECT_FLOAT_EQ(pr[0], 1.0f);
  EXPECT_NEAR(pr[1], 0.0f, 1e-40);
  EXPECT_FLOAT_EQ(g[2], 0.25f);
  EXPECT_FLOAT_EQ(g[3], -0.25f);
  EXPECT_EQ(SigmoidCrossEntropy({}, {}, {}, {}, ComputeContext{1}), 0.0);
}

TEST(SigmoidCrossEntropyTest, GradientMatchesFiniteDifferences) {
  Rng rng(5);
  std::vector<float> z(33), y(33);
  for (size_t i = 0; i < z.size(); ++i) {
    z[i] = static_cast<float>(rng.Normal() * 2);
    y[i] = rng.Uniform() < 0.4 ? 1.0f : 0.0f;
  }
  std::vector<float> dz(z.size());
  SigmoidCrossEntropy(z, y, dz, {}, ComputeContext{1});
  auto loss = [&] { return SigmoidCrossEntropy(z, y, {}, {}, ComputeContext{1}); };
  testing::GradCheckOptions opts;
  opts.atol = 1e-5;  // the loss is a mean: gradients are O(1/n)
  const auto r = testing::CheckGradient("bce.logits", z, dz, loss, opts);
  EXPECT_TRUE(r.ok()) << r.ToString();
}

TEST(SigmoidCrossEntropyTest, ParallelMatchesSerialClosely) {
  Rng rng(6);
  std::vector<float> z(10000), y(10000);
  for (size_t i = 0; i < z.size(); ++i) {
    z[i] = static_cast<float>(rng.Normal());
    y[i] = rng.Uniform() < 0.3 ? 1.0f : 0.0f;
  }
  std::vector<float> d1(z.size()), d2(z.size());
  const double l1 = SigmoidCrossEntropy(z, y, d1, {}, ComputeContext{1});
  const double l2 = SigmoidCrossEntropy(z, y, d2, {}, ComputeContext{2});
  EXPECT_NEAR(l1, l2, 1e-12);
  EXPECT_EQ(d1, d2);
  EXPECT_EQ(l2, SigmoidCrossEntropy(z, y, {}, {}, ComputeContext{2}));  // deterministic
}

}  // namespace
}  // namespace rectrain::nn
