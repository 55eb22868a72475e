#include "rectrain/kernels/gemm.h"

#include <dnnl.h>

#include "rectrain/base/check.h"

namespace rectrain::kernels {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  RECTRAIN_CHECK(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda,
                                b, ldb, beta, c, ldc);
  RECTRAIN_CHECK(st == dnnl_success) << "dnnl_sgemm failed with status " << static_cast<int>(st);
}

void GemmReference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                   float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += static_cast<double>(av) * bv;
      }
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : beta * out));
    }
  }
}

}  // namespace rectrain::kernels
