// Scalar reference kernels: the specification of every kernel in kernels.h and the oracle of
// kernels_test.cc. Written for clarity; sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "rectrain/kernels/internal/tables.h"

namespace rectrain::kernels::internal {
namespace {

void BiasAct(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float v = y[r * ld + c] + (bias ? bias[c] : 0.0f);
      if (relu && !(v > 0.0f)) v = 0.0f;
      y[r * ld + c] = v;
    }
  }
}

void ActBackwardColsum(float* dy, int64_t rows, int64_t cols, int64_t ld_dy, const float* y,
                       int64_t ld_y, bool relu, float* db) {
  for (int64_t c = 0; c < cols; ++c) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      float& g = dy[r * ld_dy + c];
      if (relu && !(y[r * ld_y + c] > 0.0f)) g = 0.0f;
      sum += g;
    }
    if (db) db[c] = static_cast<float>(sum);
  }
}

void RowDot(const float* x, int64_t rows, int64_t cols, int64_t ld, const float* w, float bias,
            float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double acc = bias;
    for (int64_t c = 0; c < cols; ++c) acc += static_cast<double>(x[r * ld + c]) * w[c];
    out[r] = static_cast<float>(acc);
  }
}

void ColWeightedSum(const float* x, int64_t rows, int64_t cols, int64_t ld, const float* v,
                    float* out) {
  for (int64_t c = 0; c < cols; ++c) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<double>(v[r]) * x[r * ld + c];
    out[c] = static_cast<float>(acc);
  }
}

void Outer(const float* v, int64_t rows, const float* w, int64_t cols, float* out, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * ld + c] = v[r] * w[c];
  }
}

void MulAdd(int64_t n, const float* a, const float* b, const float* c, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    // Two roundings here; the vector versions may fuse into one FMA (<= 1 ulp apart).
    const float p = a[i] * b[i];
    out[i] = c ? p + c[i] : p;
  }
}

void FmForward(const float* x, int64_t rows, int64_t fields, int64_t dim, int64_t ld,
               float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t d = 0; d < dim; ++d) {
      double s = 0, q = 0;
      for (int64_t f = 0; f < fields; ++f) {
        const double v = x[r * ld + f * dim + d];
        s += v;
        q += v * v;
      }
      total += s * s - q;
    }
    out[r] = static_cast<float>(0.5 * total);
  }
}

void FmBackward(const float* x, int64_t rows, int64_t fields, int64_t dim, int64_t ld,
                const float* dout, float* dx, int64_t ld_dx, bool accumulate, float* scratch) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t d = 0; d < dim; ++d) {
      double s = 0;
      for (int64_t f = 0; f < fields; ++f) s += x[r * ld + f * dim + d];
      scratch[d] = static_cast<float>(s);
    }
    for (int64_t f = 0; f < fields; ++f) {
      for (int64_t d = 0; d < dim; ++d) {
        const float g = dout[r] * (scratch[d] - x[r * ld + f * dim + d]);
        float& o = dx[r * ld_dx + f * dim + d];
        o = accumulate ? o + g : g;
      }
    }
  }
}

// Index of pair (i, j), i < j, in pair_dots' output order.
int64_t PairIndex(int64_t n, int64_t i, int64_t j) { return i * n - i * (i + 1) / 2 + (j - i - 1); }

void PairDots(const float* x, int64_t rows, int64_t n, int64_t dim, int64_t ld, float* out,
              int64_t ld_out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) {
        double s = 0;
        for (int64_t d = 0; d < dim; ++d) {
          s += static_cast<double>(x[r * ld + i * dim + d]) * x[r * ld + j * dim + d];
        }
        out[r * ld_out + PairIndex(n, i, j)] = static_cast<float>(s);
      }
    }
  }
}

void PairDotsBackward(const float* x, int64_t rows, int64_t n, int64_t dim, int64_t ld,
                      const float* g, int64_t ld_g, float* dx, int64_t ld_dx) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < dim; ++d) {
        double s = 0;
        for (int64_t j = 0; j < n; ++j) {
          if (j == i) continue;
          const float gij = g[r * ld_g + (i < j ? PairIndex(n, i, j) : PairIndex(n, j, i))];
          s += static_cast<double>(gij) * x[r * ld + j * dim + d];
        }
        dx[r * ld_dx + i * dim + d] = static_cast<float>(s);
      }
    }
  }
}

// Attention: the field rows of row r start at p + r·F·4W; head h's Q, K, V, R slices of field i
// at p_r + i·4W + {0, W, 2W, 3W} + h·d. Written as the formulas of kernels.h, recomputing small
// shared terms (scores, <G_i, V_j>) instead of keeping them (kernels do not allocate); dQ, dK and
// dV accumulate in float.
void AttentionForward(const float* p, int64_t rows, int64_t fields, int64_t heads,
                      int64_t head_dim, float scale, float* a, float* y, int64_t ld_y) {
  const int64_t F = fields, d = head_dim, W = heads * d, pw = 4 * W;
  for (int64_t r = 0; r < rows; ++r) {
    const float* P = p + r * F * pw;
    for (int64_t h = 0; h < heads; ++h) {
      const float* Q = P + h * d;
      const float* K = P + W + h * d;
      const float* V = P + 2 * W + h * d;
      const float* R = P + 3 * W + h * d;
      auto score = [&](int64_t i, int64_t j) {
        double s = 0;
        for (int64_t t = 0; t < d; ++t) s += static_cast<double>(Q[i * pw + t]) * K[j * pw + t];
        return s * scale;
      };
      float* A = a + (r * heads + h) * F * F;
      for (int64_t i = 0; i < F; ++i) {
        float* Ai = A + i * F;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < F; ++j) mx = std::max(mx, score(i, j));
        for (int64_t j = 0; j < F; ++j) {
          const double e = std::exp(score(i, j) - mx);
          sum += e;
          Ai[j] = static_cast<float>(e);
        }
        for (int64_t j = 0; j < F; ++j) Ai[j] = static_cast<float>(Ai[j] / sum);
        for (int64_t t = 0; t < d; ++t) {
          double v = R[i * pw + t];
          for (int64_t j = 0; j < F; ++j) v += static_cast<double>(A[i * F + j]) * V[j * pw + t];
          y[r * ld_y + i * W + h * d + t] = static_cast<float>(std::max(v, 0.0));
        }
      }
    }
  }
}

void AttentionBackward(const float* p, const float* a, int64_t rows, int64_t fields,
                       int64_t heads, int64_t head_dim, float scale, const float* g, int64_t ld_g,
                       float* dp) {
  const int64_t F = fields, d = head_dim, W = heads * d, pw = 4 * W;
  for (int64_t r = 0; r < rows; ++r) {
    const float* P = p + r * F * pw;
    float* dP = dp + r * F * pw;
    std::fill(dP, dP + F * pw, 0.0f);
    for (int64_t h = 0; h < heads; ++h) {
      const float* Q = P + h * d;
      const float* K = P + W + h * d;
      const float* V = P + 2 * W + h * d;
      const float* G = g + r * ld_g + h * d;  // G_i at G + i·W
      const float* A = a + (r * heads + h) * F * F;
      float* dQ = dP + h * d;
      float* dK = dP + W + h * d;
      float* dV = dP + 2 * W + h * d;
      float* dR = dP + 3 * W + h * d;
      auto da = [&](int64_t i, int64_t j) {  // <G_i, V_j>
        double s = 0;
        for (int64_t t = 0; t < d; ++t) s += static_cast<double>(G[i * W + t]) * V[j * pw + t];
        return s;
      };
      for (int64_t i = 0; i < F; ++i) {
        double rowsum = 0;
        for (int64_t k = 0; k < F; ++k) rowsum += A[i * F + k] * da(i, k);
        for (int64_t j = 0; j < F; ++j) {
          const double ds = A[i * F + j] * (da(i, j) - rowsum) * scale;  // dS[i, j]
          for (int64_t t = 0; t < d; ++t) {
            dQ[i * pw + t] += static_cast<float>(ds * K[j * pw + t]);
            dK[j * pw + t] += static_cast<float>(ds * Q[i * pw + t]);
            dV[j * pw + t] += A[i * F + j] * G[i * W + t];
          }
        }
        for (int64_t t = 0; t < d; ++t) dR[i * pw + t] = G[i * W + t];
      }
    }
  }
}

// Round to nearest even on the upper 16 bits; NaN keeps its sign and becomes quiet (the
// rounding add could otherwise carry a NaN's payload into an infinity).
void ToBf16(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, &x[i], sizeof v);
    if ((v & 0x7FFFFFFFu) > 0x7F800000u) {
      out[i] = static_cast<uint16_t>((v >> 16) | 0x0040u);
    } else {
      out[i] = static_cast<uint16_t>((v + 0x7FFFu + ((v >> 16) & 1u)) >> 16);
    }
  }
}

}  // namespace

const KernelTable& ReferenceKernels() {
  static const KernelTable table = {
      .level = SimdLevel::kScalar,
      .bias_act = BiasAct,
      .act_backward_colsum = ActBackwardColsum,
      .row_dot = RowDot,
      .col_weighted_sum = ColWeightedSum,
      .outer = Outer,
      .mul_add = MulAdd,
      .fm_forward = FmForward,
      .fm_backward = FmBackward,
      .pair_dots = PairDots,
      .pair_dots_backward = PairDotsBackward,
      .attention_forward = AttentionForward,
      .attention_backward = AttentionBackward,
      .to_bf16 = ToBf16,
  };
  return table;
}

}  // namespace rectrain::kernels::internal
