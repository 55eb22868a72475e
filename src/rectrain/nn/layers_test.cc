// Generic contract suite over a registry of layers (gradient check of input and every
// parameter, shape errors, determinism), plus forward tests against hand-written loops.
// To add a layer: add one entry to Registry() below.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/activation.h"
#include "rectrain/nn/attention.h"
#include "rectrain/nn/cin.h"
#include "rectrain/nn/cross.h"
#include "rectrain/nn/dense.h"
#include "rectrain/nn/fm.h"
#include "rectrain/nn/interaction.h"
#include "rectrain/nn/layer_norm.h"
#include "rectrain/nn/sequential.h"
#include "rectrain/testing/layer_check.h"

namespace rectrain::nn {
namespace {

struct LayerCase {
  std::string name;
  std::function<std::unique_ptr<Layer>()> make;
  testing::LayerCheckOptions options = {};
};

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

std::vector<LayerCase> Registry() {
  std::vector<LayerCase> cases;
  for (int64_t out : {1, 3, 17}) {
    for (auto act : {Activation::kNone, Activation::kRelu}) {
      const std::string n = "Dense_in7_out" + std::to_string(out) +
                            (act == Activation::kRelu ? "_relu" : "_none");
      cases.push_back({n, [=] {
                         return std::make_unique<Dense>("d", 7, out, act, WeightInit::kHe, 5);
                       }});
    }
  }
  cases.push_back({"Relu_n9", [] { return std::make_unique<Relu>("relu", 9); }});
  cases.push_back({"Dropout_n16_p0.3", [] { return std::make_unique<Dropout>("drop", 16, 0.3f); }});
  cases.push_back({"LayerNorm_n13", [] { return std::make_unique<LayerNorm>("ln", 13); }});
  {
    LayerCase c{"LayerNormScaled_n5", [] {
                  auto ln = std::make_unique<LayerNorm>("ln", 5);
                  for (auto& p : ln->Params()) {
                    for (size_t i = 0; i < p.value.size(); ++i) p.value[i] = 0.5f + 0.1f * i;
                  }
                  return ln;
                }};
    cases.push_back(c);
  }
  cases.push_back({"Cross_n6_l1", [] { return std::make_unique<CrossNetwork>("cross", 6, 1, 3); }});
  {
    LayerCase c{"Cross_n6_l3", [] { return std::make_unique<CrossNetwork>("cross", 6, 3, 3); }};
    c.options.input_scale = 0.5;  // x ⊙ (xW) grows cubically over 3 layers
    cases.push_back(c);
  }
  cases.push_back({"Fm_f4_d3", [] { return std::make_unique<FmInteraction>("fm", 4, 3); }});
  cases.push_back({"Fm_f26_d16", [] { return std::make_unique<FmInteraction>("fm", 26, 16); }});
  cases.push_back({"Dot_n4_d3_keep", [] { return std::make_unique<DotInteraction>("dot", 4, 3, true); }});
  cases.push_back({"Dot_n5_d2", [] { return std::make_unique<DotInteraction>("dot", 5, 2, false); }});
  cases.push_back({"Dot_n27_d16_keep", [] { return std::make_unique<DotInteraction>("dot", 27, 16, true); }});
  cases.push_back({"Attention_f3_d4_h1x2", [] { return std::make_unique<FieldSelfAttention>("att", 3, 4, 1, 2, 9); }});
  cases.push_back({"Attention_f5_d3_h2x4", [] { return std::make_unique<FieldSelfAttention>("att", 5, 3, 2, 4, 9); }});
  cases.push_back({"Attention_f26_d16_h2x8", [] { return std::make_unique<FieldSelfAttention>("att", 26, 16, 2, 8, 9); }});
  {
    // Packed input rows (ld = in): the layer reads x in place instead of copying it.
    LayerCase c{"Attention_f5_d3_h2x4_packed", [] { return std::make_unique<FieldSelfAttention>("att", 5, 3, 2, 4, 9); }};
    c.options.pad = 0;
    cases.push_back(c);
  }
  cases.push_back({"Cin_f3_d2_h4", [] { return std::make_unique<CompressedInteraction>("cin", 3, 2, std::vector<int>{4}, 7); }});
  {
    LayerCase c{"Cin_f4_d3_h3_2_5", [] { return std::make_unique<CompressedInteraction>("cin", 4, 3, std::vector<int>{3, 2, 5}, 7); }};
    c.options.input_scale = 0.5;  // a cubic product over 3 layers
    cases.push_back(c);
  }
  cases.push_back({"Mlp_8_16_1", [] {
                     auto s = std::make_unique<Sequential>("mlp");
                     s->Add(std::make_unique<Dense>("mlp.0", 8, 16, Activation::kRelu,
                                                    WeightInit::kHe, 1));
                     s->Add(std::make_unique<Dropout>("mlp.0.dropout", 16, 0.2f));
                     s->Add(std::make_unique<Dense>("mlp.1", 16, 4, Activation::kNone,
                                                    WeightInit::kHe, 1));
                     s->Add(std::make_unique<LayerNorm>("mlp.1.ln", 4));
                     s->Add(std::make_unique<Relu>("mlp.1.relu", 4));
                     s->Add(std::make_unique<Dense>("mlp.out", 4, 1, Activation::kNone,
                                                    WeightInit::kXavier, 1));
                     return s;
                   }});
  return cases;
}

class LayerContractTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayerContractTest, GradientsMatchFiniteDifferences) {
  for (int threads : {1, 2}) {
    std::unique_ptr<Layer> layer = GetParam().make();
    testing::LayerCheckOptions opts = GetParam().options;
    opts.num_threads = threads;
    const auto results = testing::CheckLayerGradients(*layer, opts);
    ASSERT_EQ(results.size(), 1 + layer->Params().size());
    for (const auto& r : results) {
      EXPECT_TRUE(r.ok()) << layer->type() << " threads=" << threads << ": " << r.ToString();
    }
  }
}

TEST_P(LayerContractTest, ShapeMismatchIsInvalidArgument) {
  std::unique_ptr<Layer> layer = GetParam().make();
  tensor::Tensor x(4, layer->in_features() + 1), y(4, layer->out_features());
  Status s = layer->Forward(x.view(), y.view(), LayerContext{});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(layer->name()), std::string::npos) << s;
}

TEST_P(LayerContractTest, DeterministicForFixedThreadCount) {
  std::unique_ptr<Layer> a = GetParam().make();
  std::unique_ptr<Layer> b = GetParam().make();
  const int64_t rows = 37;
  tensor::Tensor x(rows, a->in_features()), ya(rows, a->out_features()),
      yb(rows, a->out_features());
  Rng rng(4);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal());
  LayerContext ctx{ComputeContext{2}, true, 77};
  ASSERT_TRUE(a->Forward(x.view(), ya.view(), ctx).ok());
  ASSERT_TRUE(b->Forward(x.view(), yb.view(), ctx).ok());
  for (int64_t i = 0; i < ya.size(); ++i) ASSERT_EQ(ya.data()[i], yb.data()[i]) << i;
}

TEST_P(LayerContractTest, ParamNamesArePrefixedAndUnique) {
  std::unique_ptr<Layer> layer = GetParam().make();
  std::set<std::string> names;
  for (const auto& p : layer->Params()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_EQ(p.value.size(), p.grad.size()) << p.name;
    EXPECT_FALSE(p.value.empty()) << p.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, LayerContractTest, ::testing::ValuesIn(Registry()),
                         [](const ::testing::TestParamInfo<LayerCase>& p) {
                           std::string n = p.param.name;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// ---- Forward against hand-written loops ----

TEST(DenseTest, ForwardMatchesNaiveLoop) {
  for (int64_t out : {1, 5}) {
    Dense d("d", 3, out, Activation::kRelu, WeightInit::kXavier, 9);
    for (int64_t c = 0; c < out; ++c) d.bias().data()[c] = 0.1f * static_cast<float>(c) - 0.2f;
    const float x[2][3] = {{1, -2, 0.5f}, {0.25f, 3, -1}};
    tensor::Tensor y(2, out);
    ASSERT_TRUE(d.Forward({&x[0][0], 2, 3, 3}, y.view(), LayerContext{}).ok());
    for (int r = 0; r < 2; ++r) {
      for (int64_t c = 0; c < out; ++c) {
        double z = d.bias().data()[c];
        for (int k = 0; k < 3; ++k) z += x[r][k] * d.weight().data()[k * out + c];
        EXPECT_NEAR(y.row(r)[c], std::max(0.0, z), 1e-6) << "out=" << out;
      }
    }
  }
}

// Mixed precision: the bf16 Dense agrees with the fp32 one to bf16 rounding (8 significant bits,
// so ~0.4% per input, averaging out over the sum), on a shape with strided input and output.
TEST(DenseTest, Bf16MatchesFp32WithinRounding) {
  if (!kernels::Bf16GemmAvailable()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  const int64_t rows = 64, in = 48, out = 40, ld = in + 3;
  Rng rng(12);
  tensor::Tensor x(rows, ld), dy(rows, out);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal());
  for (float& v : dy.span()) v = static_cast<float>(rng.Normal());
  const ConstMatrixView xv{x.data(), rows, in, ld};
  Dense a("d", in, out, Activation::kRelu, WeightInit::kHe, 3);
  Dense b("d", in, out, Activation::kRelu, WeightInit::kHe, 3);
  LayerContext fp32{ComputeContext{2}, true, 1};
  LayerContext bf16 = fp32;
  bf16.precision = GemmPrecision::kBf16;
  tensor::Tensor ya(rows, out), yb(rows, out), dxa(rows, ld), dxb(rows, ld);
  ASSERT_TRUE(a.Forward(xv, ya.view(), fp32).ok());
  ASSERT_TRUE(b.Forward(xv, yb.view(), bf16).ok());
  auto close = [](std::span<const float> p, std::span<const float> q, double rel) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      err = std::max(err, static_cast<double>(std::fabs(p[i] - q[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(p[i])));
    }
    return err <= rel * scale;
  };
  EXPECT_TRUE(close(ya.span(), yb.span(), 1e-2));
  EXPECT_FALSE(close(ya.span(), yb.span(), 1e-9)) << "bf16 path was not taken";
  tensor::Tensor dya(rows, out), dyb(rows, out);
  std::copy(dy.span().begin(), dy.span().end(), dya.span().begin());
  std::copy(dy.span().begin(), dy.span().end(), dyb.span().begin());
  MatrixView dxav{dxa.data(), rows, in, ld}, dxbv{dxb.data(), rows, in, ld};
  ASSERT_TRUE(a.Backward(xv, ya.view(), dya.view(), dxav, fp32).ok());
  ASSERT_TRUE(b.Backward(xv, yb.view(), dyb.view(), dxbv, bf16).ok());
  EXPECT_TRUE(close(dxa.span(), dxb.span(), 2e-2));
  for (int p = 0; p < 2; ++p) {
    EXPECT_TRUE(close(a.Params()[p].grad, b.Params()[p].grad, 2e-2)) << a.Params()[p].name;
  }
  // Backward in bf16 needs the bf16 copies of a bf16 Forward.
  Dense c("c", in, out, Activation::kRelu, WeightInit::kHe, 3);
  EXPECT_EQ(c.Backward(xv, yb.view(), dyb.view(), dxbv, bf16).code(),
            StatusCode::kFailedPrecondition);
}

TEST(FmTest, ForwardMatchesPairwiseLoop) {
  const int64_t fields = 3, dim = 2;
  const float x[2][6] = {{1, 2, 3, 4, 5, 6}, {-1, 0.5f, 2, -2, 0, 1}};
  FmInteraction fm("fm", fields, dim);
  tensor::Tensor y(2, 1);
  ASSERT_TRUE(fm.Forward({&x[0][0], 2, 6, 6}, y.view(), LayerContext{}).ok());
  for (int r = 0; r < 2; ++r) {
    double expect = 0;
    for (int f = 0; f < fields; ++f) {
      for (int g = f + 1; g < fields; ++g) {
        for (int d = 0; d < dim; ++d) expect += x[r][f * dim + d] * x[r][g * dim + d];
      }
    }
    EXPECT_NEAR(y.data()[r], expect, 1e-5);
  }
  EXPECT_FLOAT_EQ(y.data()[0], 1 * 3 + 2 * 4 + 1 * 5 + 2 * 6 + 3 * 5 + 4 * 6);
}

TEST(DotInteractionTest, ForwardMatchesPairwiseLoop) {
  const int64_t rows = 3, n = 4, d = 5;
  DotInteraction dot("dot", n, d, true);
  tensor::Tensor x(rows, n * d), y(rows, dot.out_features());
  Rng rng(2);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal());
  ASSERT_EQ(dot.out_features(), d + n * (n - 1) / 2);
  ASSERT_TRUE(dot.Forward(x.view(), y.view(), LayerContext{}).ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < d; ++k) EXPECT_EQ(y.row(r)[k], x.row(r)[k]);  // v_0 passed on
    int64_t p = d;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j, ++p) {
        double want = 0;
        for (int64_t k = 0; k < d; ++k) want += double(x.row(r)[i * d + k]) * x.row(r)[j * d + k];
        EXPECT_NEAR(y.row(r)[p], want, 1e-5) << r << " " << i << "," << j;
      }
    }
  }
}

TEST(AttentionTest, ForwardMatchesTheDefinition) {
  const int64_t rows = 3, F = 4, D = 3;
  const int H = 2, d = 2, W = H * d;
  FieldSelfAttention att("att", F, D, H, d, 3);
  tensor::Tensor x(rows, F * D), y(rows, F * W);
  Rng rng(6);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal());
  ASSERT_TRUE(att.Forward(x.view(), y.view(), LayerContext{}).ok());
  const auto w = att.Params()[0].value;  // [D × 4W]: Q | K | V | R
  for (int64_t r = 0; r < rows; ++r) {
    auto proj = [&](int64_t field, int64_t col) {
      double s = 0;
      for (int64_t k = 0; k < D; ++k) s += double(x.row(r)[field * D + k]) * w[k * 4 * W + col];
      return s;
    };
    for (int h = 0; h < H; ++h) {
      for (int64_t i = 0; i < F; ++i) {
        std::vector<double> a(F);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < F; ++j) {
          double s = 0;
          for (int t = 0; t < d; ++t) s += proj(i, h * d + t) * proj(j, W + h * d + t);
          a[j] = s / std::sqrt(double(d));
          mx = std::max(mx, a[j]);
        }
        for (auto& v : a) sum += (v = std::exp(v - mx));
        for (int t = 0; t < d; ++t) {
          double o = proj(i, 3 * W + h * d + t);
          for (int64_t j = 0; j < F; ++j) o += a[j] / sum * proj(j, 2 * W + h * d + t);
          EXPECT_NEAR(y.row(r)[i * W + h * d + t], std::max(o, 0.0), 1e-5) << r << " head " << h << " field " << i;
        }
      }
    }
  }
}

TEST(CinTest, ForwardMatchesTheDefinition) {
  // Two layers over F = 3 fields of D = 2, against the paper's triple sum written out; rows
  // enough for several GEMM blocks are covered by the contract tests.
  const int64_t rows = 4, F = 3, D = 2;
  const std::vector<int> sizes = {2, 3};
  CompressedInteraction cin("cin", F, D, sizes, 5);
  tensor::Tensor x(rows, F * D), y(rows, 5);
  Rng rng(8);
  for (float& v : x.span()) v = static_cast<float>(rng.Normal());
  ASSERT_TRUE(cin.Forward(x.view(), y.view(), LayerContext{}).ok());
  auto params = cin.Params();
  ASSERT_EQ(params.size(), 2u);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> prev(F * D), x0(F * D);  // [i, d]
    for (int64_t j = 0; j < F * D; ++j) x0[j] = prev[j] = x.row(r)[j];
    int64_t prev_h = F, col = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      const int64_t H = sizes[k];
      std::vector<double> next(H * D, 0.0);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < prev_h; ++i)
          for (int64_t j = 0; j < F; ++j)
            for (int64_t d = 0; d < D; ++d)
              next[h * D + d] += params[k].value[h * prev_h * F + i * F + j] * prev[i * D + d] * x0[j * D + d];
      for (int64_t h = 0; h < H; ++h) {
        double pooled = 0;
        for (int64_t d = 0; d < D; ++d) pooled += next[h * D + d];
        EXPECT_NEAR(y.row(r)[col + h], pooled, 1e-4) << "row " << r << " layer " << k << " map " << h;
      }
      prev = next;
      prev_h = H;
      col += H;
    }
  }
}

TEST(CrossTest, ForwardMatchesNaiveLoop) {
  const int64_t d = 3;
  CrossNetwork cross("c", d, 2, 5);
  auto params = cross.Params();
  for (size_t i = 0; i < params[1].value.size(); ++i) params[1].value[i] = 0.1f * i;  // b_0
  const float x[1][3] = {{0.5f, -1, 2}};
  tensor::Tensor y(1, d);
  ASSERT_TRUE(cross.Forward({&x[0][0], 1, d, d}, y.view(), LayerContext{}).ok());
  std::vector<double> xl(x[0], x[0] + d);
  for (int l = 0; l < 2; ++l) {
    const auto& w = params[2 * l].value;
    const auto& b = params[2 * l + 1].value;
    std::vector<double> next(d);
    for (int64_t c = 0; c < d; ++c) {
      double u = b[c];
      for (int64_t k = 0; k < d; ++k) u += xl[k] * w[k * d + c];
      next[c] = x[0][c] * u + xl[c];
    }
    xl = next;
  }
  for (int64_t c = 0; c < d; ++c) EXPECT_NEAR(y.data()[c], xl[c], 1e-5);
}

TEST(LayerNormTest, ForwardNormalisesRows) {
  LayerNorm ln("ln", 4);
  const float x[2][4] = {{1, 2, 3, 4}, {-1, -1, 5, 1}};
  tensor::Tensor y(2, 4);
  ASSERT_TRUE(ln.Forward({&x[0][0], 2, 4, 4}, y.view(), LayerContext{}).ok());
  for (int r = 0; r < 2; ++r) {
    double mu = 0, var = 0;
    for (int c = 0; c < 4; ++c) mu += x[r][c] / 4.0;
    for (int c = 0; c < 4; ++c) var += (x[r][c] - mu) * (x[r][c] - mu) / 4.0;
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(y.row(r)[c], (x[r][c] - mu) / std::sqrt(var + 1e-5), 1e-5);
    }
  }
}

TEST(DropoutTest, InvertedDropoutStatisticsAndEvalIdentity) {
  const int64_t n = 20000;
  Dropout drop("drop", n, 0.25f);
  tensor::Tensor x(1, n), y(1, n), y2(1, n);
  for (float& v : x.span()) v = 1.0f;
  LayerContext train{ComputeContext{2}, true, 5};
  ASSERT_TRUE(drop.Forward(x.view(), y.view(), train).ok());
  int64_t kept = 0;
  for (float v : y.span()) {
    if (v != 0.0f) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.015);
  // Same seed, same mask; another seed, another mask.
  ASSERT_TRUE(drop.Forward(x.view(), y2.view(), train).ok());
  EXPECT_TRUE(std::equal(y.span().begin(), y.span().end(), y2.span().begin()));
  train.seed = 6;
  ASSERT_TRUE(drop.Forward(x.view(), y2.view(), train).ok());
  EXPECT_FALSE(std::equal(y.span().begin(), y.span().end(), y2.span().begin()));
  LayerContext eval{ComputeContext{1}, false, 5};
  ASSERT_TRUE(drop.Forward(x.view(), y.view(), eval).ok());
  for (float v : y.span()) ASSERT_EQ(v, 1.0f);
}

}  // namespace
}  // namespace rectrain::nn
