#include "rectrain/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rectrain::optim {
namespace {

// Three fixed gradient steps applied to w0 = {1, -2, 0.5}. The expected values were computed
// by hand-checked double-precision formulas (docs/optimizers.md), independent of this code.
const std::vector<float> kW0 = {1.0f, -2.0f, 0.5f};
const std::vector<std::vector<float>> kGrads = {
    {0.5f, 0.25f, -1.0f}, {0.1f, -0.3f, 0.2f}, {-0.4f, 0.6f, 0.05f}};

struct Golden {
  const char* name;
  DenseOptimizerConfig config;
  float lr;
  bool decay;
  std::vector<std::vector<double>> expected;  // after step 1, 2, 3
};

DenseOptimizerConfig Cfg(const char* type, float wd, float momentum = 0.0f, float acc0 = 0.0f) {
  DenseOptimizerConfig c;
  c.type = *kDenseOptimizerTypes.Find(type);
  c.weight_decay = wd;
  c.momentum = momentum;
  c.initial_accumulator = acc0;
  return c;
}

class DenseGoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(DenseGoldenTest, ThreeSteps) {
  const Golden& g = GetParam();
  auto opt = MakeOptimizer(g.config);
  ASSERT_TRUE(opt.ok()) << opt.status();
  std::vector<float> w = kW0;
  std::vector<float> grad(3);
  std::vector<ParamRef> params = {{"p", w, grad, g.decay}};
  ASSERT_TRUE((*opt)->Init(params).ok());
  for (int step = 0; step < 3; ++step) {
    grad = kGrads[step];
    ASSERT_TRUE((*opt)->Update({.step = step, .learning_rate = g.lr}, params, {}).ok());
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(w[i], g.expected[step][i], 2e-6) << g.name << " step " << step << " i " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, DenseGoldenTest,
    ::testing::Values(
        Golden{"sgd", Cfg("sgd", 0.0f), 0.1f, true,
               {{0.95, -2.025, 0.6}, {0.94, -1.995, 0.58}, {0.98, -2.055, 0.575}}},
        Golden{"sgd_momentum_wd", Cfg("sgd", 0.1f, 0.9f), 0.1f, true,
               {{0.94, -2.005, 0.595},
                {0.8666, -1.95945, 0.65455},
                {0.831874, -1.9588605, 0.6965995}}},
        Golden{"adagrad", Cfg("adagrad", 0.01f, 0.0f, 0.1f), 0.1f, true,
               {{0.915011805, -2.05881987, 0.595302622},
                {0.897116269, -1.99541803, 0.575949089},
                {0.951087626, -2.07079762, 0.570716513}}},
        Golden{"adam_l2", Cfg("adam", 0.01f), 0.01f, true,
               {{0.99, -2.01, 0.51},
                {0.981881612, -2.00786443, 0.515059446},
                {0.980686251, -2.0122213, 0.518618033}}},
        Golden{"adamw", Cfg("adamw", 0.1f), 0.01f, true,
               {{0.989, -2.008, 0.5095},
                {0.979980591, -2.00456255, 0.514100761},
                {0.978063616, -2.00731066, 0.517219023}}},
        Golden{"adamw_param_without_decay", Cfg("adamw", 0.1f), 0.01f, false,
               {{0.99, -2.01, 0.51},
                {0.981969591, -2.00857055, 0.515110261},
                {0.981032597, -2.01332323, 0.518742624}}}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

// f(w) = 0.5 * sum a_i (w_i - c_i)^2 is convex; with a small learning rate every optimizer must
// decrease it at every step. Uses a tensor big enough to take the parallel path.
double Quadratic(const std::vector<float>& w, const std::vector<float>& a,
                 const std::vector<float>& c) {
  double f = 0;
  for (size_t i = 0; i < w.size(); ++i) f += 0.5 * a[i] * (double(w[i]) - c[i]) * (w[i] - c[i]);
  return f;
}

TEST(DenseOptimizerTest, ConvexQuadraticDecreasesMonotonically) {
  for (const char* type : {"sgd", "sgd_momentum", "adagrad", "adam", "adamw"}) {
    DenseOptimizerConfig cfg;
    cfg.type = *kDenseOptimizerTypes.Find(std::string(type) == "sgd_momentum" ? "sgd" : type);
    if (std::string(type) == "sgd_momentum") cfg.momentum = 0.5f;
    cfg.weight_decay = 0.0f;
    auto opt = MakeOptimizer(cfg);
    ASSERT_TRUE(opt.ok());
    const int64_t n = 100000;
    std::vector<float> w(n), g(n), a(n), c(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 0.5f + float(i % 7) * 0.25f;
      c[i] = float(i % 13) - 6.0f;
      w[i] = c[i] + ((i % 2) ? 2.0f : -3.0f);
    }
    std::vector<ParamRef> params = {{"w", w, g, true}};
    ASSERT_TRUE((*opt)->Init(params).ok());
    const float lr = cfg.type == DenseOptimizerType::kAdagrad ? 0.05f : 1e-3f;
    double prev = Quadratic(w, a, c);
    for (int step = 0; step < 50; ++step) {
      for (int64_t i = 0; i < n; ++i) g[i] = a[i] * (w[i] - c[i]);
      ASSERT_TRUE((*opt)->Update({.step = step, .learning_rate = lr}, params,
                                 ComputeContext{.num_threads = 2})
                      .ok());
      const double f = Quadratic(w, a, c);
      ASSERT_LT(f, prev) << type << " step " << step;
      prev = f;
    }
  }
}

TEST(DenseOptimizerTest, ThreadCountDoesNotChangeResults) {
  for (const char* type : {"sgd", "adagrad", "adam", "adamw"}) {
    std::vector<float> results[2];
    for (int t = 0; t < 2; ++t) {
      DenseOptimizerConfig cfg;
      cfg.type = *kDenseOptimizerTypes.Find(type);
      cfg.weight_decay = 0.01f;
      auto opt = MakeOptimizer(cfg);
      ASSERT_TRUE(opt.ok());
      std::vector<float> w1(70000, 0.5f), g1(70000), w2(33, -1.0f), g2(33);
      std::vector<ParamRef> params = {{"a", w1, g1, true}, {"b", w2, g2, false}};
      ASSERT_TRUE((*opt)->Init(params).ok());
      for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < g1.size(); ++i) g1[i] = std::sin(float(i + step));
        for (size_t i = 0; i < g2.size(); ++i) g2[i] = std::cos(float(i * step));
        ASSERT_TRUE((*opt)->Update({.step = step, .learning_rate = 0.01f}, params,
                                   ComputeContext{.num_threads = t + 1})
                        .ok());
      }
      results[t] = w1;
      results[t].insert(results[t].end(), w2.begin(), w2.end());
    }
    EXPECT_EQ(results[0], results[1]) << type;
  }
}

TEST(DenseOptimizerTest, StateLayout) {
  std::vector<float> w1(5), g1(5), w2(3), g2(3);
  std::vector<ParamRef> params = {{"a", w1, g1}, {"b", w2, g2}};
  struct Case {
    const char* type;
    float momentum;
    size_t slots;
  };
  for (Case c : {Case{"sgd", 0.0f, 0}, Case{"sgd", 0.9f, 1}, Case{"adagrad", 0.0f, 1},
                 Case{"adam", 0.0f, 2}, Case{"adamw", 0.0f, 2}}) {
    DenseOptimizerConfig cfg;
    cfg.type = *kDenseOptimizerTypes.Find(c.type);
    cfg.momentum = c.momentum;
    cfg.initial_accumulator = 0.25f;
    auto opt = MakeOptimizer(cfg);
    ASSERT_TRUE(opt.ok());
    ASSERT_TRUE((*opt)->Init(params).ok());
    auto state = (*opt)->State();
    ASSERT_EQ(state.size(), c.slots) << c.type;
    for (auto s : state) {
      ASSERT_EQ(s.size(), 8u);
      EXPECT_EQ(s[0], std::string(c.type) == "adagrad" ? 0.25f : 0.0f);
    }
  }
}

TEST(DenseOptimizerTest, Errors) {
  DenseOptimizerConfig cfg;
  cfg.type = DenseOptimizerType::kAdam;
  cfg.beta1 = 1.0f;
  EXPECT_EQ(MakeOptimizer(cfg).status().message(), "optimizer.beta1 must be in [0, 1), got 1");
  cfg = {};
  cfg.momentum = -0.5f;
  cfg.type = DenseOptimizerType::kSgd;
  EXPECT_EQ(MakeOptimizer(cfg).status().message(), "optimizer.momentum must be in [0, 1), got -0.5");

  auto opt = MakeOptimizer(DenseOptimizerConfig{});
  ASSERT_TRUE(opt.ok());
  std::vector<float> w(4), g(3), empty;
  std::vector<ParamRef> bad = {{"mlp.0.weight", w, g}};
  EXPECT_EQ((*opt)->Init(bad).message(),
            "optimizer: parameter 'mlp.0.weight' has 4 values but 3 gradients");
  std::vector<ParamRef> none = {{"bias", empty, empty}};
  EXPECT_EQ((*opt)->Init(none).message(), "optimizer: parameter 'bias' is empty");
  std::vector<float> g4(4);
  std::vector<ParamRef> ok = {{"a", w, g4}};
  EXPECT_EQ((*opt)->Update({}, ok, {}).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*opt)->Init(ok).ok());
  std::vector<ParamRef> two = {{"a", w, g4}, {"a", w, g4}};
  EXPECT_EQ((*opt)->Update({}, two, {}).message(),
            "optimizer: Update got 2 parameters but Init got 1");
}

}  // namespace
}  // namespace rectrain::optim
