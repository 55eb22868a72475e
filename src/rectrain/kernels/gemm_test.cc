#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/kernels/kernels.h"

namespace rectrain::kernels {
namespace {

TEST(GemmTest, MatchesReferenceForAllTransposesAndTails) {
  Rng rng(3);
  for (int64_t m : {1, 7, 17, 33}) {
    for (int64_t n : {1, 8, 31}) {
      for (int64_t k : {1, 9, 64}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
          std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c1(m * ldc), c2;
          for (float& x : a) x = static_cast<float>(rng.Normal());
          for (float& x : b) x = static_cast<float>(rng.Normal());
          for (float& x : c1) x = static_cast<float>(rng.Normal());
          c2 = c1;
          Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c1.data(), ldc);
          GemmReference(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c2.data(),
                        ldc);
          for (size_t i = 0; i < c1.size(); ++i) {
            ASSERT_NEAR(c1[i], c2[i], 1e-4 * (1 + std::fabs(c2[i])))
                << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb;
          }
        }
      }
    }
  }
}

// GemmBf16 against the double-precision reference on the bf16-rounded inputs: the only
// differences left are fp32 accumulation order, bounded by 1e-5 · Σ|a·b|.
TEST(GemmTest, Bf16MatchesReferenceOnRoundedInputs) {
  if (!Bf16GemmAvailable()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  const KernelTable& kt = ActiveKernels();
  Rng rng(4);
  auto widen = [](uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  for (int64_t m : {1, 17, 64}) {
    for (int64_t n : {1, 31, 400}) {
      for (int64_t k : {1, 9, 429}) {
        for (int t = 0; t < 8; ++t) {
          const bool ta = t & 1, tb = t & 2, accumulate = t & 4;
          const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
          std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c1(m * ldc), c2;
          for (float& x : a) x = static_cast<float>(rng.Normal());
          for (float& x : b) x = static_cast<float>(rng.Normal());
          for (float& x : c1) x = static_cast<float>(rng.Normal());
          std::vector<uint16_t> a16(a.size()), b16(b.size());
          kt.to_bf16(a.data(), static_cast<int64_t>(a.size()), a16.data());
          kt.to_bf16(b.data(), static_cast<int64_t>(b.size()), b16.data());
          std::vector<float> ar(a.size()), br(b.size()), abs_a(a.size()), abs_b(b.size());
          for (size_t i = 0; i < a.size(); ++i) ar[i] = widen(a16[i]), abs_a[i] = std::fabs(ar[i]);
          for (size_t i = 0; i < b.size(); ++i) br[i] = widen(b16[i]), abs_b[i] = std::fabs(br[i]);
          c2 = c1;
          std::vector<float> bound(m * ldc, 0.0f);
          GemmBf16(ta, tb, m, n, k, a16.data(), lda, b16.data(), ldb, accumulate, c1.data(), ldc);
          GemmReference(ta, tb, m, n, k, 1.0f, ar.data(), lda, br.data(), ldb,
                        accumulate ? 1.0f : 0.0f, c2.data(), ldc);
          GemmReference(ta, tb, m, n, k, 1.0f, abs_a.data(), lda, abs_b.data(), ldb, 0.0f,
                        bound.data(), ldc);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              const int64_t at = i * ldc + j;
              ASSERT_NEAR(c1[at], c2[at], 1e-5 * bound[at] + 1e-5 * std::fabs(c2[at]) + 1e-6)
                  << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb
                  << " accumulate=" << accumulate;
            }
          }
          // Padding columns of C are never written.
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = n; j < ldc && i * ldc + j < static_cast<int64_t>(c1.size()); ++j) {
              ASSERT_EQ(c1[i * ldc + j], c2[i * ldc + j]);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rectrain::kernels
