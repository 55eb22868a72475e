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

double NaiveSoftmaxCe(const float* z, int classes, int y) {
  double denom = 0;
  for (int c = 0; c < classes; ++c) denom += std::exp(static_cast<double>(z[c]));
  return -(static_cast<double>(z[y]) - std::log(denom));
}

TEST(SoftmaxCrossEntropyTest, MatchesNaiveFormulaAndIsStable) {
  const int classes = 4;
  std::vector<float> z = {0.1f, -1.0f, 2.0f, 0.5f, /**/ 3.0f, 3.0f, -2.0f, 0.0f, /**/ 0, 0, 0, 0};
  std::vector<float> y = {2, 0, 3};
  std::vector<float> dz(z.size()), p(z.size());
  const double loss = SoftmaxCrossEntropy(z, classes, y, dz, p, ComputeContext{1});
  double expect = 0;
  for (int i = 0; i < 3; ++i) {
    expect += NaiveSoftmaxCe(z.data() + i * classes, classes, static_cast<int>(y[i])) / 3;
    double psum = 0;
    for (int c = 0; c < classes; ++c) psum += p[i * classes + c];
    EXPECT_NEAR(psum, 1.0, 1e-6);
  }
  EXPECT_NEAR(loss, expect, 1e-6);
  EXPECT_NEAR(p[2 * classes + 1], 0.25f, 1e-7);
  EXPECT_NEAR(dz[2 * classes + 3], (0.25 - 1.0) / 3, 1e-7);
  // Huge logits stay finite.
  std::vector<float> big = {1000.0f, -1000.0f, 0.0f};
  std::vector<float> lb = {1};
  std::vector<float> g(3);
  const double l2 = SoftmaxCrossEntropy(big, 3, lb, g, {}, ComputeContext{1});
  EXPECT_NEAR(l2, 2000.0, 1e-3);
  EXPECT_FLOAT_EQ(g[0], 1.0f);
  EXPECT_FLOAT_EQ(g[1], -1.0f);
}

TEST(SoftmaxCrossEntropyTest, GradientMatchesFiniteDifferences) {
  Rng rng(8);
  const int classes = 5, n = 13;
  std::vector<float> z(n * classes), y(n);
  for (auto& v : z) v = static_cast<float>(rng.Normal() * 2);
  for (auto& v : y) v = static_cast<float>(rng.Below(classes));
  std::vector<float> dz(z.size());
  SoftmaxCrossEntropy(z, classes, y, dz, {}, ComputeContext{1});
  auto loss = [&] { return SoftmaxCrossEntropy(z, classes, y, {}, {}, ComputeContext{1}); };
  testing::GradCheckOptions opts;
  opts.atol = 1e-5;
  const auto r = testing::CheckGradient("softmax_ce.logits", z, dz, loss, opts);
  EXPECT_TRUE(r.ok()) << r.ToString();
}

TEST(SoftmaxCrossEntropyTest, ABadLabelIsNanWithZeroGradient) {
  std::vector<float> z = {0.0f, 1.0f, 0.0f, 1.0f};
  std::vector<float> y = {1, 7};  // 7 is not a class of 2
  std::vector<float> dz(4);
  EXPECT_TRUE(std::isnan(SoftmaxCrossEntropy(z, 2, y, dz, {}, ComputeContext{1})));
  EXPECT_EQ(dz[2], 0.0f);
  EXPECT_EQ(dz[3], 0.0f);
  std::vector<float> frac = {0.5f};
  std::vector<float> z1 = {0.0f, 0.0f};
  EXPECT_TRUE(std::isnan(SoftmaxCrossEntropy(z1, 2, frac, {}, {}, ComputeContext{1})));
}

TEST(SoftmaxCrossEntropyTest, ThreadCountDoesNotChangeTheGradients) {
  Rng rng(9);
  const int classes = 10, n = 3000;
  std::vector<float> z(n * classes), y(n);
  for (auto& v : z) v = static_cast<float>(rng.Normal());
  for (auto& v : y) v = static_cast<float>(rng.Below(classes));
  std::vector<float> d1(z.size()), d2(z.size());
  const double l1 = SoftmaxCrossEntropy(z, classes, y, d1, {}, ComputeContext{1});
  const double l2 = SoftmaxCrossEntropy(z, classes, y, d2, {}, ComputeContext{2});
  EXPECT_NEAR(l1, l2, 1e-12);
  EXPECT_EQ(d1, d2);
}

TEST(MultiTaskLossTest, WeightedSumOfPerTaskMeansAndItsGradient) {
  // 3 rows × 2 tasks, row-major; task 1 weighted 0.5.
  const std::vector<float> logits = {0.3f, -1.2f, 2.0f, 0.1f, -0.7f, 4.0f};
  const std::vector<float> labels = {1, 0, 0, 1, 1, 1};
  const std::vector<float> weights = {1.0f, 0.5f};
  std::vector<float> d(6), p(6);
  std::vector<double> means(2);
  const ComputeContext compute{2};
  const double loss = MultiTaskSigmoidCrossEntropy(logits, 2, labels, weights, d, p, means, compute);
  for (int t = 0; t < 2; ++t) {
    std::vector<float> lt = {logits[t], logits[2 + t], logits[4 + t]}, yt = {labels[t], labels[2 + t], labels[4 + t]};
    std::vector<float> dt(3), pt(3);
    const double m = SigmoidCrossEntropy(lt, yt, dt, pt, compute);
    EXPECT_NEAR(means[t], m, 1e-12) << t;
    for (int r = 0; r < 3; ++r) {
      EXPECT_NEAR(d[r * 2 + t], weights[t] * dt[r], 1e-7) << r << "," << t;  // weight × (p − y) / n
      EXPECT_EQ(p[r * 2 + t], pt[r]);
    }
  }
  EXPECT_NEAR(loss, means[0] + 0.5 * means[1], 1e-12);
  // The gradient is the derivative of the returned loss (central differences).
  for (size_t i = 0; i < logits.size(); ++i) {
    std::vector<float> up = logits, down = logits;
    up[i] += 1e-3f;
    down[i] -= 1e-3f;
    const double fd = (MultiTaskSigmoidCrossEntropy(up, 2, labels, weights, {}, {}, {}, compute) -
                       MultiTaskSigmoidCrossEntropy(down, 2, labels, weights, {}, {}, {}, compute)) / 2e-3;
    EXPECT_NEAR(d[i], fd, 1e-4) << i;
  }
  EXPECT_EQ(MultiTaskSigmoidCrossEntropy({}, 2, {}, weights, {}, {}, means, compute), 0.0);
}

}  // namespace
}  // namespace rectrain::nn
