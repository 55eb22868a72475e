// rectrain/kernels/kernels.h: the non-GEMM compute kernels of the training step, as a table of
// function pointers with one implementation per SIMD level, chosen once at start-up.
//
// Every kernel has a scalar reference (kernels/reference/, the specification and test oracle)
// and vectorised versions compiled per ISA (kernels/x86/: AVX2+FMA and AVX-512), selected from
// the CPU's features by ActiveKernels() on first use. RECTRAIN_SIMD=scalar|avx2|avx512 in the
// environment caps the level (for tests and A/B timing); KernelsFor(level) gives a specific
// table (tests sweep every supported level against the reference).
//
// Contracts common to every kernel:
//   * Matrices are row-major with a row stride `ld` (elements, >= cols); see tensor/tensor.h.
//   * Kernels are single-threaded and never allocate; callers parallelise by splitting rows
//     (or columns, where a kernel sums over rows) and calling the kernel on each part.
//   * No alignment is required; any size (including 0 and tails not a multiple of the vector
//     width) is handled.
//   * Kernels that only map elements (bias_act, the ReLU mask, outer) are bit-identical across
//     levels; mul_add may differ by FMA rounding. Kernels that sum (row_dot, col sums, fm, pair_dots) may
//     differ from the reference (which sums in double) by rounding: kernels_test.cc bounds the
//     error by 1e-5 · Σ|terms|. The attention kernels also differ by their exp (a polynomial,
//     relative error < 1e-6, against std::exp in the reference).
//
// Example (Dense forward, rows split across threads):
//   const kernels::KernelTable& k = kernels::ActiveKernels();
//   k.bias_act(y.row(begin), end - begin, y.cols, y.ld, bias, /*relu=*/true);
//
// Thread safety: the tables are immutable; kernels are reentrant.
#pragma once

#include <cstdint>
#include <string_view>

namespace rectrain::kernels {

enum class SimdLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

std::string_view SimdLevelName(SimdLevel level);

struct KernelTable {
  SimdLevel level = SimdLevel::kScalar;

  // y[r,c] = act(y[r,c] + bias[c]) in place; act is ReLU when `relu`, else identity.
  // `bias` may be null (no add).
  void (*bias_act)(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias,
                   bool relu) = nullptr;

  // Backward of bias_act plus the bias gradient, fused in one pass:
  //   if relu: dy[r,c] = (y[r,c] > 0) ? dy[r,c] : 0   (y is the forward *output*)
  //   if db:   db[c] = Σ_r dy[r,c]                     (overwrites db)
  // `y` is only read when relu. Callers that split work should split columns (db is per column).
  void (*act_backward_colsum)(float* dy, int64_t rows, int64_t cols, int64_t ld_dy,
                              const float* y, int64_t ld_y, bool relu, float* db) = nullptr;

  // GEMV for an N=1 output layer: out[r] = bias + Σ_c x[r,c] · w[c].
  void (*row_dot)(const float* x, int64_t rows, int64_t cols, int64_t ld, const float* w,
                  float bias, float* out) = nullptr;

  // Transposed GEMV (weight gradient of an N=1 layer): out[c] = Σ_r v[r] · x[r,c] (overwrites).
  void (*col_weighted_sum)(const float* x, int64_t rows, int64_t cols, int64_t ld,
                           const float* v, float* out) = nullptr;

  // Rank-1 product (input gradient of an N=1 layer): out[r,c] = v[r] · w[c].
  void (*outer)(const float* v, int64_t rows, const float* w, int64_t cols, float* out,
                int64_t ld) = nullptr;

  // out[i] = a[i] · b[i] + (c ? c[i] : 0). `out` may alias `c` (accumulate) but not a or b.
  void (*mul_add)(int64_t n, const float* a, const float* b, const float* c,
                  float* out) = nullptr;

  // FM second-order interaction over `fields` consecutive vectors of `dim` floats per row:
  //   out[r] = 0.5 · Σ_d ((Σ_f x[r, f·dim + d])² − Σ_f x[r, f·dim + d]²)   (overwrites out).
  void (*fm_forward)(const float* x, int64_t rows, int64_t fields, int64_t dim, int64_t ld,
                     float* out) = nullptr;

  // Its backward: dx[r, f·dim + d] (+)= dout[r] · (Σ_g x[r, g·dim + d] − x[r, f·dim + d]).
  // Adds into dx when `accumulate`, else overwrites. `scratch` holds `dim` floats.
  void (*fm_backward)(const float* x, int64_t rows, int64_t fields, int64_t dim, int64_t ld,
                      const float* dout, float* dx, int64_t ld_dx, bool accumulate,
                      float* scratch) = nullptr;

  // Pairwise dot products of `n` consecutive vectors of `dim` floats per row (x_i = x[r, i·dim ..
  // i·dim + dim)), in pair order (0,1), (0,2), …, (0,n−1), (1,2), …, (n−2,n−1):
  //   out[r, p(i,j)] = <x_i, x_j> for i < j, p(i,j) = i·n − i(i+1)/2 + (j − i − 1).
  // Writes n(n−1)/2 floats per row (overwrites). DLRM's and FwFM's interaction.
  void (*pair_dots)(const float* x, int64_t rows, int64_t n, int64_t dim, int64_t ld,
                    float* out, int64_t ld_out) = nullptr;

  // Its backward, the gradient of Σ_p g[r, p] · out[r, p] with respect to x:
  //   dx[r, i·dim + d] = Σ_{j≠i} g[r, p(min(i,j), max(i,j))] · x[r, j·dim + d]   (overwrites dx).
  void (*pair_dots_backward)(const float* x, int64_t rows, int64_t n, int64_t dim, int64_t ld,
                             const float* g, int64_t ld_g, float* dx, int64_t ld_dx) = nullptr;

  // Multi-head self-attention over the `fields` vectors of a row (AutoInt's interacting layer,
  // nn/attention.h), W = heads · head_dim. Row r's projections are `fields` consecutive rows of
  // 4W floats in p, starting at p + r·fields·4W: field i's row is [Q_i | K_i | V_i | R_i], head
  // h's slice of each at offset h · head_dim. Per row r and head h, with (r, h)'s F × F
  // attention matrix at a + (r·heads + h)·F·F:
  //   A[i, j] = softmax_j(scale · <Q_i,h, K_j,h>)                           (writes a)
  //   y[r, i·W + h·head_dim + t] = max(0, R_i,h[t] + Σ_j A[i, j] · V_j,h[t])   (writes y)
  void (*attention_forward)(const float* p, int64_t rows, int64_t fields, int64_t heads,
                            int64_t head_dim, float scale, float* a, float* y,
                            int64_t ld_y) = nullptr;

  // Its backward, given G = the gradient of y with the ReLU mask applied (F·W floats per row at
  // g + r·ld_g) and the forward's a: writes dp (p's layout, overwrites) with, per head,
  //   dR = G;  dV_j = Σ_i A[i, j] G_i;  dS[i, j] = A[i, j] (<G_i, V_j> − Σ_k A[i, k] <G_i, V_k>) · scale;
  //   dQ_i = Σ_j dS[i, j] K_j;  dK_j = Σ_i dS[i, j] Q_i.
  void (*attention_backward)(const float* p, const float* a, int64_t rows, int64_t fields,
                             int64_t heads, int64_t head_dim, float scale, const float* g,
                             int64_t ld_g, float* dp) = nullptr;

  // float -> bfloat16 (the upper 16 bits of the IEEE float), rounded to nearest even; a NaN
  // stays a (quiet) NaN with its sign. out[i] = Bf16(x[i]) for i < n. Bit-identical across
  // levels (integer arithmetic only). Feeds kernels::GemmBf16.
  void (*to_bf16)(const float* x, int64_t n, uint16_t* out) = nullptr;
};

// The highest level this CPU supports (cpuid), ignoring RECTRAIN_SIMD.
SimdLevel DetectSimdLevel();

// The table for `level`. Programmer error (CHECK) if the CPU does not support it.
const KernelTable& KernelsFor(SimdLevel level);

// The table chosen once per process: DetectSimdLevel(), capped by RECTRAIN_SIMD if set.
// An unknown RECTRAIN_SIMD value is ignored with a warning on stderr (not an error: it is a
// tuning knob, and the result is still correct).
const KernelTable& ActiveKernels();

}  // namespace rectrain::kernels
