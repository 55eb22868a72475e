// Tests of the gradient checker itself: it passes correct gradients, FAILS deliberately wrong
// ones (a wrong element, a missing term, a layer with a wrong backward), and skips kinks.
#include "rectrain/testing/grad_check.h"

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/nn/dense.h"
#include "rectrain/testing/layer_check.h"

namespace rectrain::testing {
namespace {

TEST(GradCheckTest, PassesCorrectGradientOfSmoothFunction) {
  std::vector<float> x = {0.3f, -1.2f, 2.0f, 0.7f};
  auto loss = [&] {
    double s = 0;
    for (float v : x) s += std::sin(v) * v;
    return s;
  };
  std::vector<float> g;
  for (float v : x) g.push_back(std::cos(v) * v + std::sin(v));
  GradCheckResult r = CheckGradient("f", x, g, loss);
  EXPECT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(r.checked, 4);
  EXPECT_EQ(x[1], -1.2f);  // restored exactly
  GradCheckOptions four;
  four.four_point = true;
  EXPECT_TRUE(CheckGradient("f4", x, g, loss, four).ok());
}

TEST(GradCheckTest, DetectsOneWrongElementAndMissingTerm) {
  std::vector<float> x = {0.3f, -1.2f, 2.0f, 0.7f};
  auto loss = [&] {
    double s = 0;
    for (float v : x) s += v * v * v;
    return s;
  };
  std::vector<float> g;
  for (float v : x) g.push_back(3 * v * v);
  g[2] *= 1.05f;  // 5% off in one element
  GradCheckResult r = CheckGradient("cube", x, g, loss);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.failed, 1);
  EXPECT_NE(r.first_failure.find("cube[2]"), std::string::npos) << r.ToString();

  std::vector<float> g2;
  for (float v : x) g2.push_back(3 * v * v - 0.01f);  // a small missing additive term
  EXPECT_FALSE(CheckGradient("cube", x, g2, loss).ok());
}

TEST(GradCheckTest, SkipsKinksButNotTooMany) {
  std::vector<float> x = {0.0f, 1.0f, 2.0f, 3.0f};
  auto relu_sum = [&] {
    double s = 0;
    for (float v : x) s += v > 0 ? v : 0;
    return s;
  };
  std::vector<float> g = {0.5f, 1.0f, 1.0f, 1.0f};  // any value at the kink
  GradCheckResult r = CheckGradient("relu", x, g, relu_sum);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.checked, 3);
  EXPECT_TRUE(r.ok()) << r.ToString();
  std::vector<float> zeros = {0.0f, 0.0f, 1.0f, 0.0f};
  x = zeros;
  GradCheckResult r2 = CheckGradient("relu", x, g, relu_sum);
  EXPECT_TRUE(r2.too_many_skips);
  EXPECT_FALSE(r2.ok());
}

// A Dense layer whose backward forgets part of the weight gradient: the generic layer harness
// must catch it (and pass the real Dense).
class BrokenDense final : public nn::Layer {
 public:
  BrokenDense() : dense_("broken", 6, 4, nn::Activation::kRelu, nn::WeightInit::kHe, 3) {}
  const std::string& name() const override { return dense_.name(); }
  std::string type() const override { return "broken"; }
  int64_t in_features() const override { return 6; }
  int64_t out_features() const override { return 4; }
  Status Forward(nn::ConstMatrixView x, nn::MatrixView y, const nn::LayerContext& ctx) override {
    return dense_.Forward(x, y, ctx);
  }
  Status Backward(nn::ConstMatrixView x, nn::ConstMatrixView y, nn::MatrixView dy,
                  nn::MatrixView dx, const nn::LayerContext& ctx) override {
    RECTRAIN_RETURN_IF_ERROR(dense_.Backward(x, y, dy, dx, ctx));
    dense_.Params()[0].grad[5] *= 0.9f;  // one weight gradient 10% low
    return OkStatus();
  }
  std::vector<optim::ParamRef> Params() override { return dense_.Params(); }

 private:
  nn::Dense dense_;
};

TEST(GradCheckTest, LayerHarnessCatchesWrongBackward) {
  BrokenDense broken;
  LayerCheckOptions opts;
  opts.grad.max_elements = 1000;  // check every element
  bool any_failed = false;
  for (const GradCheckResult& r : CheckLayerGradients(broken, opts)) {
    if (!r.ok()) {
      any_failed = true;
      EXPECT_EQ(r.name, "broken.weight") << r.ToString();
    }
  }
  EXPECT_TRUE(any_failed);

  nn::Dense good("good", 6, 4, nn::Activation::kRelu, nn::WeightInit::kHe, 3);
  for (const GradCheckResult& r : CheckLayerGradients(good, opts)) {
    EXPECT_TRUE(r.ok()) << r.ToString();
  }
}

}  // namespace
}  // namespace rectrain::testing
