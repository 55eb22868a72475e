// rectrain/optim/internal/kernels.h: private. Element-wise update kernels shared by the dense
// and sparse optimizers. Each is compiled for AVX-512, AVX2 and baseline x86-64 and picked once
// by the loader (GCC target_clones / ifunc), so the library needs no -march flag.
// The formulas are the specification in docs/optimizers.md; keep the two in sync.
// Thread safety: pure functions over disjoint spans.
#pragma once

#include <cstdint>

namespace rectrain::optim::internal {

// w -= lr * (g + l2 * w)
void SgdKernel(float* w, const float* g, int64_t n, float lr, float l2);
// u = g + l2 * w; v = momentum * v + u; w -= lr * v
void SgdMomentumKernel(float* w, const float* g, float* v, int64_t n, float lr, float l2,
                       float momentum);
// u = g + l2 * w; acc += u^2; w -= lr * u / (sqrt(acc) + eps)
void AdagradKernel(float* w, const float* g, float* acc, int64_t n, float lr, float l2,
                   float eps);
// u = g + l2 * w; m = b1 m + (1-b1) u; v = b2 v + (1-b2) u^2;
// w -= lr * ((m * inv_bc1) / (sqrt(v * inv_bc2) + eps) + decoupled * w)
// where inv_bc1 = 1/(1-b1^t), inv_bc2 = 1/(1-b2^t).
void AdamKernel(float* w, const float* g, float* m, float* v, int64_t n, float lr, float l2,
                float decoupled, float b1, float b2, float eps, float inv_bc1, float inv_bc2);
// FTRL-proximal (McMahan et al. 2013), per element, u = g + l2 * w:
//   sigma = (sqrt(n + u^2) - sqrt(n)) / alpha; z += u - sigma * w; n += u^2;
//   w = |z| <= l1 ? 0 : -(z - sign(z) * l1) / ((beta + sqrt(n)) / alpha + l2_ftrl)
void FtrlKernel(float* w, const float* g, float* z, float* nacc, int64_t n, float l2,
                float alpha, float beta, float l1, float l2_ftrl);

}  // namespace rectrain::optim::internal
