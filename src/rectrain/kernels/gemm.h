// rectrain/kernels/gemm.h: the one wrapper every matrix product goes through.
// Backend: oneDNN's dnnl_sgemm (measured fastest on the CTR-MLP shapes, see
// docs/decisions/0001-gemm-backend.md). Threads follow the OpenMP pool (ComputeContext).
// Thread safety: reentrant; may be called from any thread.
#pragma once

#include <cstdint>

namespace rectrain::kernels {

// Row-major: C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C.
// op(X) = Xᵀ when trans_x. lda/ldb/ldc are row strides in elements of the stored matrices.
// Preconditions (CHECKed, programmer errors): m, n, k >= 0; strides consistent.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);

// Scalar reference of Gemm (the specification and test oracle; slow).
void GemmReference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                   float* c, int64_t ldc);

}  // namespace rectrain::kernels
