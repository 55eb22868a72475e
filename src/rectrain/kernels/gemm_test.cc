#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/gemm.h"

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

}  // namespace
}  // namespace rectrain::kernels
