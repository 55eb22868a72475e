// Every kernel at every SIMD level this CPU supports, against the scalar reference, sweeping
// sizes {1,3,7,8,9,15,16,17,31,32,33,64} for vector tails, with a padded row stride.
// Tolerances: mapping kernels must match exactly (mul_add: 1 ulp for FMA); summing kernels
// within 1e-5 · Σ|terms| + 1e-6 (float vs the reference's double accumulation).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/internal/tables.h"
#include "rectrain/kernels/kernels.h"

namespace rectrain::kernels {
namespace {

const int64_t kSizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64};

std::vector<float> RandomVec(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> levels;
  for (int l = 1; l <= static_cast<int>(DetectSimdLevel()); ++l) {
    levels.push_back(static_cast<SimdLevel>(l));
  }
  return levels;
}

class KernelsTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  const KernelTable& ref_ = internal::ReferenceKernels();
  const KernelTable& k_ = KernelsFor(GetParam());
};

TEST_P(KernelsTest, BiasActMatchesReferenceExactly) {
  for (int64_t rows : kSizes) {
    for (int64_t cols : kSizes) {
      const int64_t ld = cols + 3;
      for (int mode = 0; mode < 4; ++mode) {
        const bool relu = mode & 1;
        const bool with_bias = mode & 2;
        std::vector<float> a = RandomVec(rows * ld, rows * 100 + cols);
        std::vector<float> b = a;
        std::vector<float> bias = RandomVec(cols, 7);
        ref_.bias_act(a.data(), rows, cols, ld, with_bias ? bias.data() : nullptr, relu);
        k_.bias_act(b.data(), rows, cols, ld, with_bias ? bias.data() : nullptr, relu);
        ASSERT_EQ(a, b) << "rows=" << rows << " cols=" << cols << " mode=" << mode;
      }
    }
  }
}

TEST_P(KernelsTest, ActBackwardColsumMatchesReference) {
  for (int64_t rows : kSizes) {
    for (int64_t cols : kSizes) {
      const int64_t ld = cols + 5;
      for (int relu = 0; relu < 2; ++relu) {
        std::vector<float> y = RandomVec(rows * ld, 3 + rows);
        std::vector<float> g1 = RandomVec(rows * ld, 11 + cols);
        std::vector<float> g2 = g1;
        std::vector<float> db1(cols, -1.0f), db2(cols, -2.0f);
        ref_.act_backward_colsum(g1.data(), rows, cols, ld, y.data(), ld, relu, db1.data());
        k_.act_backward_colsum(g2.data(), rows, cols, ld, y.data(), ld, relu, db2.data());
        ASSERT_EQ(g1, g2) << "rows=" << rows << " cols=" << cols << " relu=" << relu;
        for (int64_t c = 0; c < cols; ++c) {
          double abs_sum = 0;
          for (int64_t r = 0; r < rows; ++r) abs_sum += std::fabs(g1[r * ld + c]);
          ASSERT_NEAR(db1[c], db2[c], 1e-5 * abs_sum + 1e-6) << "rows=" << rows << " c=" << c;
        }
        // Without db only the mask is applied.
        std::vector<float> g3 = RandomVec(rows * ld, 11 + cols);
        k_.act_backward_colsum(g3.data(), rows, cols, ld, y.data(), ld, relu, nullptr);
        ASSERT_EQ(g1, g3);
      }
    }
  }
}

TEST_P(KernelsTest, RowDotAndColWeightedSumMatchReference) {
  for (int64_t rows : kSizes) {
    for (int64_t cols : kSizes) {
      const int64_t ld = cols + 1;
      std::vector<float> x = RandomVec(rows * ld, rows * 7 + cols);
      std::vector<float> w = RandomVec(cols, 5);
      std::vector<float> v = RandomVec(rows, 6);
      std::vector<float> o1(rows), o2(rows);
      ref_.row_dot(x.data(), rows, cols, ld, w.data(), 0.25f, o1.data());
      k_.row_dot(x.data(), rows, cols, ld, w.data(), 0.25f, o2.data());
      for (int64_t r = 0; r < rows; ++r) {
        double abs_sum = 0.25;
        for (int64_t c = 0; c < cols; ++c) abs_sum += std::fabs(x[r * ld + c] * w[c]);
        ASSERT_NEAR(o1[r], o2[r], 1e-5 * abs_sum + 1e-6) << "rows=" << rows << " cols=" << cols;
      }
      std::vector<float> c1(cols, 9.0f), c2(cols, 9.0f);
      ref_.col_weighted_sum(x.data(), rows, cols, ld, v.data(), c1.data());
      k_.col_weighted_sum(x.data(), rows, cols, ld, v.data(), c2.data());
      for (int64_t c = 0; c < cols; ++c) {
        double abs_sum = 0;
        for (int64_t r = 0; r < rows; ++r) abs_sum += std::fabs(x[r * ld + c] * v[r]);
        ASSERT_NEAR(c1[c], c2[c], 1e-5 * abs_sum + 1e-6) << "rows=" << rows << " cols=" << cols;
      }
    }
  }
}

TEST_P(KernelsTest, OuterAndMulAddMatchReference) {
  for (int64_t rows : kSizes) {
    for (int64_t cols : kSizes) {
      const int64_t ld = cols + 2;
      std::vector<float> v = RandomVec(rows, 1), w = RandomVec(cols, 2);
      std::vector<float> o1(rows * ld, 3.0f), o2(rows * ld, 3.0f);
      ref_.outer(v.data(), rows, w.data(), cols, o1.data(), ld);
      k_.outer(v.data(), rows, w.data(), cols, o2.data(), ld);
      ASSERT_EQ(o1, o2) << "rows=" << rows << " cols=" << cols;
    }
    const int64_t n = rows;
    std::vector<float> a = RandomVec(n, 3), b = RandomVec(n, 4), c = RandomVec(n, 5);
    std::vector<float> m1(n), m2(n);
    ref_.mul_add(n, a.data(), b.data(), c.data(), m1.data());
    k_.mul_add(n, a.data(), b.data(), c.data(), m2.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(m1[i], m2[i], 1e-6 * (std::fabs(a[i] * b[i]) + std::fabs(c[i]))) << "n=" << n;
    }
    // Aliased accumulate: out == c.
    std::vector<float> acc = c;
    k_.mul_add(n, a.data(), b.data(), acc.data(), acc.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(acc[i], m2[i]);
    ref_.mul_add(n, a.data(), b.data(), nullptr, m1.data());
    k_.mul_add(n, a.data(), b.data(), nullptr, m2.data());
    ASSERT_EQ(m1, m2);
  }
}

TEST_P(KernelsTest, FmForwardBackwardMatchReference) {
  for (int64_t fields : {1, 2, 3, 26}) {
    for (int64_t dim : kSizes) {
      const int64_t rows = 9;
      const int64_t ld = fields * dim + 3;
      std::vector<float> x = RandomVec(rows * ld, fields * 31 + dim);
      std::vector<float> o1(rows), o2(rows);
      ref_.fm_forward(x.data(), rows, fields, dim, ld, o1.data());
      k_.fm_forward(x.data(), rows, fields, dim, ld, o2.data());
      for (int64_t r = 0; r < rows; ++r) {
        double abs_sum = 0;
        for (int64_t i = 0; i < fields * dim; ++i) abs_sum += x[r * ld + i] * x[r * ld + i];
        ASSERT_NEAR(o1[r], o2[r], 1e-5 * fields * abs_sum + 1e-6)
            << "fields=" << fields << " dim=" << dim;
      }
      std::vector<float> dout = RandomVec(rows, 77);
      std::vector<float> scratch(dim);
      for (int accumulate = 0; accumulate < 2; ++accumulate) {
        std::vector<float> d1(rows * ld, 0.5f), d2(rows * ld, 0.5f);
        ref_.fm_backward(x.data(), rows, fields, dim, ld, dout.data(), d1.data(), ld, accumulate,
                         scratch.data());
        k_.fm_backward(x.data(), rows, fields, dim, ld, dout.data(), d2.data(), ld, accumulate,
                       scratch.data());
        for (size_t i = 0; i < d1.size(); ++i) {
          ASSERT_NEAR(d1[i], d2[i], 1e-5 * fields * (1 + std::fabs(d1[i])))
              << "fields=" << fields << " dim=" << dim << " i=" << i;
        }
      }
    }
  }
}

// n = 100 at dim 96 does not fit the vectorised forward's transpose buffer (its fallback path);
// dims off the 16-lane width exercise the backward's partial chunks.
TEST_P(KernelsTest, PairDotsForwardBackwardMatchReference) {
  const int64_t shapes[][2] = {{1, 4}, {2, 1}, {3, 7}, {16, 16}, {17, 3}, {27, 16}, {39, 16},
                               {40, 33}, {5, 64}, {100, 96}};
  for (const auto& shape : shapes) {
    const int64_t n = shape[0], dim = shape[1], pairs = n * (n - 1) / 2;
    const int64_t rows = 5, ld = n * dim + 3, ld_out = pairs + 2;
    std::vector<float> x = RandomVec(rows * ld, n * 131 + dim);
    std::vector<float> o1(rows * ld_out, 7.0f), o2(rows * ld_out, 7.0f);
    ref_.pair_dots(x.data(), rows, n, dim, ld, o1.data(), ld_out);
    k_.pair_dots(x.data(), rows, n, dim, ld, o2.data(), ld_out);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t p = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j, ++p) {
          double abs_sum = 0;
          for (int64_t d = 0; d < dim; ++d) {
            abs_sum += std::fabs(x[r * ld + i * dim + d] * x[r * ld + j * dim + d]);
          }
          ASSERT_NEAR(o1[r * ld_out + p], o2[r * ld_out + p], 1e-5 * abs_sum + 1e-6)
              << "n=" << n << " dim=" << dim << " pair (" << i << ", " << j << ")";
        }
      }
      for (int64_t c = pairs; c < ld_out; ++c) ASSERT_EQ(o2[r * ld_out + c], 7.0f) << "wrote past the pairs";
    }
    std::vector<float> g = RandomVec(rows * ld_out, 99 + n);
    std::vector<float> d1(rows * ld, 3.0f), d2(rows * ld, 3.0f);
    ref_.pair_dots_backward(x.data(), rows, n, dim, ld, g.data(), ld_out, d1.data(), ld);
    k_.pair_dots_backward(x.data(), rows, n, dim, ld, g.data(), ld_out, d2.data(), ld);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = n * dim; c < ld; ++c) ASSERT_EQ(d2[r * ld + c], 3.0f) << "wrote past the vectors";
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t d = 0; d < dim; ++d) {
          double abs_sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            if (j == i) continue;
            const int64_t a = std::min(i, j), b = std::max(i, j);
            const int64_t p = a * n - a * (a + 1) / 2 + (b - a - 1);
            abs_sum += std::fabs(g[r * ld_out + p] * x[r * ld + j * dim + d]);
          }
          const size_t at = static_cast<size_t>(r * ld + i * dim + d);
          ASSERT_NEAR(d1[at], d2[at], 1e-5 * abs_sum + 1e-6) << "n=" << n << " dim=" << dim << " i=" << i;
        }
      }
    }
  }
}

// The reference itself against the definition, on a case small enough to write out by hand.
TEST(PairDotsTest, ReferenceMatchesHandComputedValues) {
  const KernelTable& ref = internal::ReferenceKernels();
  // Three vectors of dim 2: a = (1, 2), b = (3, 4), c = (5, 6).
  const float x[] = {1, 2, 3, 4, 5, 6};
  float out[3];
  ref.pair_dots(x, 1, 3, 2, 6, out, 3);
  EXPECT_EQ(out[0], 11.0f);  // <a, b>
  EXPECT_EQ(out[1], 17.0f);  // <a, c>
  EXPECT_EQ(out[2], 39.0f);  // <b, c>
  const float g[] = {1.0f, 10.0f, 100.0f};  // g_ab, g_ac, g_bc
  float dx[6];
  ref.pair_dots_backward(x, 1, 3, 2, 6, g, 3, dx, 6);
  const float want[] = {1 * 3 + 10 * 5, 1 * 4 + 10 * 6,         // da = g_ab·b + g_ac·c
                        1 * 1 + 100 * 5, 1 * 2 + 100 * 6,       // db = g_ab·a + g_bc·c
                        10 * 1 + 100 * 3, 10 * 2 + 100 * 4};    // dc = g_ac·a + g_bc·b
  for (int k = 0; k < 6; ++k) EXPECT_EQ(dx[k], want[k]) << k;
}

// Shapes (fields, heads, head_dim): d = 8 and 16 take the unrolled paths, others the generic
// one, (3, 1, 700) the fallback to the reference (its transposed head exceeds the stack buffer);
// `spread` scales Q and K so that some softmax rows are nearly one-hot.
TEST_P(KernelsTest, AttentionForwardBackwardMatchReference) {
  struct Shape {
    int64_t fields, heads, head_dim;
    float spread;
  };
  const Shape shapes[] = {{1, 1, 1, 1}, {2, 1, 3, 1}, {3, 2, 16, 1}, {17, 3, 5, 1}, {26, 2, 8, 1},
                          {26, 2, 8, 4}, {26, 1, 16, 1}, {33, 2, 8, 1}, {39, 2, 8, 1}, {3, 1, 700, 1},
                          // the query-lane forward (1 to 64 fields) and the first shape past it
                          {1, 1, 8, 1}, {16, 2, 8, 1}, {50, 2, 16, 2}, {64, 1, 8, 1}, {65, 1, 8, 1}};
  for (const Shape& sh : shapes) {
    const int64_t F = sh.fields, H = sh.heads, d = sh.head_dim, W = H * d, pw = 4 * W;
    const int64_t rows = 3, ld_y = F * W + 5, row_p = F * pw;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    std::vector<float> p = RandomVec(rows * row_p, F * 31 + d);
    for (int64_t e = 0; e < rows * row_p; ++e) {
      if (e % pw < 2 * W) p[e] *= sh.spread;  // Q and K
    }
    const std::string what = "F=" + std::to_string(F) + " H=" + std::to_string(H) + " d=" + std::to_string(d);
    std::vector<float> a1(rows * H * F * F + 1, 7.0f), a2 = a1;
    std::vector<float> y1(rows * ld_y, 7.0f), y2 = y1;
    ref_.attention_forward(p.data(), rows, F, H, d, scale, a1.data(), y1.data(), ld_y);
    k_.attention_forward(p.data(), rows, F, H, d, scale, a2.data(), y2.data(), ld_y);
    ASSERT_EQ(a2.back(), 7.0f) << what << ": wrote past the attention matrices";
    for (size_t e = 0; e + 1 < a1.size(); ++e) ASSERT_NEAR(a1[e], a2[e], 2e-6) << what << " a[" << e << "]";
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < ld_y; ++c) {
        const float v1 = y1[r * ld_y + c], v2 = y2[r * ld_y + c];
        if (c >= F * W) {
          ASSERT_EQ(v2, 7.0f) << what << ": wrote past the row";
          continue;
        }
        // Bound: the rounding of R + Σ_j A_ij V_j, whose terms are below max|V| in sum.
        ASSERT_NEAR(v1, v2, 1e-5 * (std::fabs(v1) + 4.0) + 1e-6) << what << " y[" << r << ", " << c << "]";
      }
    }
    std::vector<float> g = RandomVec(rows * ld_y, 77 + F);
    std::vector<float> d1(rows * row_p + 1, 3.0f), d2 = d1;
    ref_.attention_backward(p.data(), a1.data(), rows, F, H, d, scale, g.data(), ld_y, d1.data());
    k_.attention_backward(p.data(), a1.data(), rows, F, H, d, scale, g.data(), ld_y, d2.data());
    ASSERT_EQ(d2.back(), 3.0f) << what << ": wrote past dp";
    float max_abs = 0.0f;
    for (size_t e = 0; e + 1 < d1.size(); ++e) max_abs = std::max(max_abs, std::fabs(d1[e]));
    for (size_t e = 0; e + 1 < d1.size(); ++e) {
      ASSERT_NEAR(d1[e], d2[e], 2e-5 * max_abs + 1e-6) << what << " dp[" << e << "] (slot " << (e % pw) / W << ")";
    }
  }
}

// The reference against values worked out by hand: 2 fields, 1 head of dim 1, scale 1.
TEST(AttentionTest, ReferenceMatchesHandComputedValues) {
  const KernelTable& ref = internal::ReferenceKernels();
  // Field rows [Q | K | V | R]: q = (0, ln 3), k = (0, 1), v = (2, 6), r = (-5, 1).
  const float ln3 = std::log(3.0f);
  const float p[] = {0.0f, 0.0f, 2.0f, -5.0f, ln3, 1.0f, 6.0f, 1.0f};
  float a[4], y[2];
  ref.attention_forward(p, 1, 2, 1, 1, 1.0f, a, y, 2);
  // Row 0: scores (0, 0) -> A = (1/2, 1/2), y0 = max(0, -5 + 4) = 0.
  // Row 1: scores (0, ln 3) -> A = (1/4, 3/4), y1 = max(0, 1 + 0.5 + 4.5) = 6.
  EXPECT_FLOAT_EQ(a[0], 0.5f);
  EXPECT_FLOAT_EQ(a[1], 0.5f);
  EXPECT_FLOAT_EQ(a[2], 0.25f);
  EXPECT_FLOAT_EQ(a[3], 0.75f);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 6.0f);
  // Backward with G = (0, 1) (y0's ReLU is off): dR = G; dV_j = A[1, j] · 1 = (1/4, 3/4);
  // <G_1, V_j> = (2, 6), rowsum 1/4·2 + 3/4·6 = 5, dS[1, ·] = (1/4 · (2 − 5), 3/4 · (6 − 5))
  // = (−3/4, 3/4), dS[0, ·] = 0; dQ_1 = Σ_j dS[1, j] k_j = 3/4; dK_j = dS[1, j] q_1 = (−3/4, 3/4) ln 3.
  const float g[] = {0.0f, 1.0f};
  float dp[8];
  ref.attention_backward(p, a, 1, 2, 1, 1, 1.0f, g, 2, dp);
  const float want[] = {0.0f, -0.75f * ln3, 0.25f, 0.0f, 0.75f, 0.75f * ln3, 0.75f, 1.0f};
  for (int e = 0; e < 8; ++e) EXPECT_NEAR(dp[e], want[e], 1e-6) << e;
}

TEST_P(KernelsTest, ToBf16MatchesReferenceExactly) {
  std::vector<float> x = RandomVec(1000, 5);
  // Edge cases: ties to even both ways, the largest finite values (round to infinity), infinities,
  // NaNs of both signs (must stay NaN), zeros and denormals.
  const uint32_t special[] = {0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
                              0xFF800000u, 0x7FC00001u, 0xFF800001u, 0x7F800001u, 0x00000000u,
                              0x80000000u, 0x00000001u, 0x0000FFFFu};
  for (uint32_t bits : special) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    x.push_back(f);
  }
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{17}, static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> a(n + 1, 7), b(n + 1, 7);
    ref_.to_bf16(x.data(), n, a.data());
    k_.to_bf16(x.data(), n, b.data());
    ASSERT_EQ(a, b) << "n=" << n;
    EXPECT_EQ(a[n], 7) << "wrote past n";
  }
}

TEST(ToBf16Test, RoundsToNearestEvenAndKeepsNaN) {
  const KernelTable& ref = internal::ReferenceKernels();
  auto bf16 = [&](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    uint16_t out = 0;
    ref.to_bf16(&f, 1, &out);
    return out;
  };
  EXPECT_EQ(bf16(0x3F800000u), 0x3F80);  // 1.0 exact
  EXPECT_EQ(bf16(0x3F808000u), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf16(0x3F818000u), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf16(0x3F808001u), 0x3F81);  // above the tie
  EXPECT_EQ(bf16(0x7F7FFFFFu), 0x7F80);  // FLT_MAX overflows to +inf
  EXPECT_EQ(bf16(0x7F800000u), 0x7F80);  // +inf
  EXPECT_EQ(bf16(0x7F800001u) & 0x7FC0, 0x7FC0);  // signalling NaN -> quiet NaN, not inf
  EXPECT_EQ(bf16(0xFFC00000u), 0xFFC0);  // -NaN keeps its sign
}

INSTANTIATE_TEST_SUITE_P(AllLevels, KernelsTest, ::testing::ValuesIn(Levels()),
                         [](const ::testing::TestParamInfo<SimdLevel>& p) {
                           return std::string(SimdLevelName(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelsTest);

TEST(DispatchTest, ActiveIsSupportedAndReferenceIsScalar) {
  EXPECT_LE(static_cast<int>(ActiveKernels().level), static_cast<int>(DetectSimdLevel()));
  EXPECT_EQ(KernelsFor(SimdLevel::kScalar).level, SimdLevel::kScalar);
  EXPECT_EQ(SimdLevelName(SimdLevel::kAvx512), "avx512");
}

}  // namespace
}  // namespace rectrain::kernels
