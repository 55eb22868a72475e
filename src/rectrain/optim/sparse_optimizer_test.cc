#include "rectrain/optim/sparse_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rectrain::optim {
namespace {

const std::vector<float> kW0 = {1.0f, -2.0f, 0.5f};
const std::vector<std::vector<float>> kGrads = {
    {0.5f, 0.25f, -1.0f}, {0.1f, -0.3f, 0.2f}, {-0.4f, 0.6f, 0.05f}};

struct Golden {
  const char* name;
  SparseOptimizerConfig config;
  float lr;
  // After each step: weights (3) then state (StateWidth(3)); values from independent
  // double-precision formulas (docs/optimizers.md).
  std::vector<std::vector<double>> expected;
};

SparseOptimizerConfig Cfg(const char* type) {
  SparseOptimizerConfig c;
  c.type = *kSparseOptimizerTypes.Find(type);
  c.l2 = 0.01f;
  return c;
}
SparseOptimizerConfig Adagrad() {
  SparseOptimizerConfig c = Cfg("adagrad");
  c.initial_accumulator = 0.1f;
  return c;
}
SparseOptimizerConfig Ftrl() {
  SparseOptimizerConfig c = Cfg("ftrl");
  c.ftrl_alpha = 0.1f;
  c.ftrl_beta = 1.0f;
  c.ftrl_l1 = 0.05f;
  c.ftrl_l2 = 0.1f;
  return c;
}

class SparseGoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(SparseGoldenTest, ThreeSteps) {
  const Golden& g = GetParam();
  auto opt = MakeSparseOptimizer(g.config);
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ((*opt)->name(), kSparseOptimizerTypes.Name(g.config.type));
  const int width = (*opt)->StateWidth(3);
  ASSERT_EQ(static_cast<size_t>(3 + width), g.expected[0].size());
  std::vector<float> w = kW0;
  std::vector<float> state(width, -7.0f);
  (*opt)->InitState(w, state);
  for (int step = 0; step < 3; ++step) {
    // The global step is deliberately far from the row's own count: lazy Adam must use row_step.
    (*opt)->UpdateRow({.step = 1000 + step, .learning_rate = g.lr}, step, w, state,
                      kGrads[step]);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(w[i], g.expected[step][i], 2e-6) << g.name << " step " << step << " w" << i;
    }
    for (int i = 0; i < width; ++i) {
      const double e = g.expected[step][3 + i];
      EXPECT_NEAR(state[i], e, 2e-6 * std::max(1.0, std::fabs(e)))
          << g.name << " step " << step << " state" << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, SparseGoldenTest,
    ::testing::Values(
        Golden{"sgd", Cfg("sgd"), 0.1f,
               {{0.949, -2.023, 0.5995},
                {0.938051, -1.990977, 0.5789005},
                {0.977112949, -2.04898602, 0.5733216}}},
        Golden{"adagrad", Adagrad(), 0.1f,
               {{0.915011805, -2.05881987, 0.595302622, 0.3601, 0.1529, 1.090025},
                {0.897116269, -1.99541803, 0.575949089, 0.372013748, 0.255676793, 1.13244165},
                {0.951087626, -2.07079762, 0.570716513, 0.5249173, 0.592129946, 1.13555077}}},
        Golden{"adam", Cfg("adam"), 0.01f,
               {{0.99, -2.01, 0.51, 0.051, 0.023, -0.0995, 0.0002601, 5.29e-05, 0.000990025},
                {0.981881612, -2.00786443, 0.515059446, 0.05689, -0.01131, -0.06904,
                 0.00027191791, 0.00015531111, 0.00103110098},
                {0.980686251, -2.0122213, 0.518618033, 0.0121828816, 0.0478131356,
                 -0.0566209406, 0.000423887348, 0.000491464578, 0.00103311147}}},
        Golden{"ftrl", Ftrl(), 0.0f,
               {{0.966447368, -2.01854839, 0.549625935, -14.74, 25.08, -11.07, 0.2601, 0.0529,
                 0.990025},
                {0.959287511, -1.99574692, 0.539482975, -14.7429968, 28.0749137, -10.979919,
                 0.272126297, 0.155418744, 1.03225371},
                {0.982783784, -2.02964111, 0.536750812, -16.3796447, 34.7839196, -10.932665,
                 0.42454402, 0.491868082, 1.0353223}}}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(SparseOptimizerTest, FtrlInitStateReproducesWeightsAndL1Zeroes) {
  SparseOptimizerConfig c = Ftrl();
  c.ftrl_l1 = 1.0f;
  c.l2 = 0.0f;  // a zero gradient must really be zero
  auto opt = MakeSparseOptimizer(c);
  ASSERT_TRUE(opt.ok());
  std::vector<float> w = {0.3f, -0.02f, 0.0f};
  std::vector<float> state(6);
  (*opt)->InitState(w, state);
  // A zero gradient leaves n at 0 and z unchanged, so the formula must give back w.
  std::vector<float> zero(3, 0.0f);
  std::vector<float> w2 = w;
  (*opt)->UpdateRow({}, 0, w2, state, zero);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w2[i], w[i], 1e-7) << i;
  // A small gradient pulls |z| under l1 for the tiny weight: it becomes exactly 0.
  std::vector<float> g = {0.0f, -0.5f, 0.0f};
  (*opt)->UpdateRow({}, 1, w2, state, g);
  EXPECT_EQ(w2[1], 0.0f);
}

TEST(SparseOptimizerTest, LazyAdamUsesRowStep) {
  auto opt = MakeSparseOptimizer(Cfg("adam"));
  ASSERT_TRUE(opt.ok());
  std::vector<float> a = kW0, b = kW0, sa(6, 0.0f), sb(6, 0.0f);
  (*opt)->UpdateRow({.step = 0, .learning_rate = 0.01f}, 0, a, sa, kGrads[0]);
  (*opt)->UpdateRow({.step = 0, .learning_rate = 0.01f}, 5, b, sb, kGrads[0]);
  EXPECT_NE(a, b);  // a different row_step changes the bias correction
}

// Convex quadratic per row: every rule decreases it monotonically for a small learning rate.
TEST(SparseOptimizerTest, ConvexQuadraticDecreasesMonotonically) {
  for (const char* type : {"sgd", "adagrad", "adam", "ftrl"}) {
    SparseOptimizerConfig c;
    c.type = *kSparseOptimizerTypes.Find(type);
    c.ftrl_alpha = 0.01f;
    auto opt = MakeSparseOptimizer(c);
    ASSERT_TRUE(opt.ok());
    const int dim = 8;
    std::vector<float> w(dim), g(dim), a(dim), target(dim);
    for (int i = 0; i < dim; ++i) {
      a[i] = 0.5f + 0.25f * i;
      target[i] = float(i) - 3.0f;
      w[i] = target[i] + (i % 2 ? 2.0f : -2.0f);
    }
    std::vector<float> state((*opt)->StateWidth(dim));
    (*opt)->InitState(w, state);
    auto loss = [&] {
      double f = 0;
      for (int i = 0; i < dim; ++i) f += 0.5 * a[i] * (w[i] - target[i]) * (w[i] - target[i]);
      return f;
    };
    double prev = loss();
    const float lr = std::string(type) == "adagrad" ? 0.05f : 1e-3f;
    for (int step = 0; step < 50; ++step) {
      for (int i = 0; i < dim; ++i) g[i] = a[i] * (w[i] - target[i]);
      (*opt)->UpdateRow({.step = step, .learning_rate = lr}, step, w, state, g);
      const double f = loss();
      ASSERT_LT(f, prev) << type << " step " << step;
      prev = f;
    }
  }
}

TEST(SparseOptimizerTest, Errors) {
  SparseOptimizerConfig c;
  c.type = SparseOptimizerType::kFtrl;
  c.ftrl_alpha = 0.0f;
  EXPECT_EQ(MakeSparseOptimizer(c).status().message(),
            "sparse_optimizer.ftrl_alpha must be > 0, got 0");
  c = {};
  c.epsilon = 0.0f;
  EXPECT_EQ(MakeSparseOptimizer(c).status().message(),
            "sparse_optimizer.epsilon must be > 0 for adagrad when "
            "sparse_optimizer.initial_accumulator is 0");
  c.initial_accumulator = 0.1f;
  EXPECT_TRUE(MakeSparseOptimizer(c).ok());
  c = {};
  c.l2 = -1.0f;
  EXPECT_EQ(MakeSparseOptimizer(c).status().message(), "sparse_optimizer.l2 must be >= 0, got -1");
}

}  // namespace
}  // namespace rectrain::optim
