// rectrain/kernels/gemm.h: the one wrapper every matrix product goes through.
// Backend: oneDNN's dnnl_sgemm (measured fastest on the CTR-MLP shapes, see
// docs/decisions/0001-gemm-backend.md). Threads follow the OpenMP pool (ComputeContext).
// GemmBf16 is the mixed-precision variant (bfloat16 inputs, fp32 accumulation and output)
// through oneDNN's matmul primitive, about twice the fp32 rate where the CPU has AVX512_BF16
// (docs/decisions/0004-bf16-gemm.md).
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

// True when GemmBf16 can run here: oneDNN reports AVX512_BF16 (or AMX) for this CPU. Elsewhere
// oneDNN would emulate bf16 far slower than fp32, so callers choose fp32 instead.
bool Bf16GemmAvailable();

// Row-major, mixed precision: C[m×n] = op(A)[m×k] · op(B)[k×n] (+ C when `accumulate`), with A
// and B in bfloat16 (kernels::KernelTable::to_bf16 converts), products accumulated in fp32.
// op(X) = Xᵀ when trans_x; strides as in Gemm. Preconditions (CHECKed): Bf16GemmAvailable(),
// sizes >= 0. The oneDNN primitive for each distinct shape is created once and cached.
void GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const uint16_t* a,
              int64_t lda, const uint16_t* b, int64_t ldb, bool accumulate, float* c,
              int64_t ldc);

// Scalar reference of Gemm (the specification and test oracle; slow).
void GemmReference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                   float* c, int64_t ldc);

}  // namespace rectrain::kernels
