#include "rectrain/optim/internal/kernels.h"

#include <cmath>

// Clones for AVX-512 (x86-64-v4), AVX2+FMA (x86-64-v3) and the baseline; the loader picks one.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define RECTRAIN_OPTIM_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RECTRAIN_OPTIM_CLONES
#endif

namespace rectrain::optim::internal {

RECTRAIN_OPTIM_CLONES
void SgdKernel(float* __restrict w, const float* __restrict g, int64_t n, float lr, float l2) {
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + l2 * w[i]);
}

RECTRAIN_OPTIM_CLONES
void SgdMomentumKernel(float* __restrict w, const float* __restrict g, float* __restrict v,
                       int64_t n, float lr, float l2, float momentum) {
  for (int64_t i = 0; i < n; ++i) {
    const float u = g[i] + l2 * w[i];
    const float vel = momentum * v[i] + u;
    v[i] = vel;
    w[i] -= lr * vel;
  }
}

RECTRAIN_OPTIM_CLONES
void AdagradKernel(float* __restrict w, const float* __restrict g, float* __restrict acc,
                   int64_t n, float lr, float l2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float u = g[i] + l2 * w[i];
    const float a = acc[i] + u * u;
    acc[i] = a;
    w[i] -= lr * u / (std::sqrt(a) + eps);
  }
}

RECTRAIN_OPTIM_CLONES
void AdamKernel(float* __restrict w, const float* __restrict g, float* __restrict m,
                float* __restrict v, int64_t n, float lr, float l2, float decoupled, float b1,
                float b2, float eps, float inv_bc1, float inv_bc2) {
  const float c1 = 1.0f - b1;
  const float c2 = 1.0f - b2;
  for (int64_t i = 0; i < n; ++i) {
    const float wi = w[i];
    const float u = g[i] + l2 * wi;
    const float mi = b1 * m[i] + c1 * u;
    const float vi = b2 * v[i] + c2 * u * u;
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - lr * ((mi * inv_bc1) / (std::sqrt(vi * inv_bc2) + eps) + decoupled * wi);
  }
}

RECTRAIN_OPTIM_CLONES
void FtrlKernel(float* __restrict w, const float* __restrict g, float* __restrict z,
                float* __restrict nacc, int64_t n, float l2, float alpha, float beta, float l1,
                float l2_ftrl) {
  const float inv_alpha = 1.0f / alpha;
  for (int64_t i = 0; i < n; ++i) {
    const float wi = w[i];
    const float u = g[i] + l2 * wi;
    const float n_old = nacc[i];
    const float n_new = n_old + u * u;
    const float sqrt_new = std::sqrt(n_new);
    const float sigma = (sqrt_new - std::sqrt(n_old)) * inv_alpha;
    const float zi = z[i] + u - sigma * wi;
    z[i] = zi;
    nacc[i] = n_new;
    const float shrunk = zi - std::copysign(l1, zi);
    const float denom = (beta + sqrt_new) * inv_alpha + l2_ftrl;
    w[i] = std::fabs(zi) <= l1 ? 0.0f : -shrunk / denom;
  }
}

}  // namespace rectrain::optim::internal
