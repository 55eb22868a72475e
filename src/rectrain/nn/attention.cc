#include "rectrain/nn/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/nn/init.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

FieldSelfAttention::FieldSelfAttention(std::string name, int64_t fields, int64_t dim, int heads,
                                       int head_dim, uint64_t seed)
    : name_(std::move(name)),
      fields_(fields),
      dim_(dim),
      heads_(heads),
      head_dim_(head_dim),
      width_(static_cast<int64_t>(heads) * head_dim) {
  RECTRAIN_CHECK(fields >= 1 && dim >= 1 && heads >= 1 && head_dim >= 1);
  weight_.Resize(dim_, 4 * width_);
  InitUniform(weight_.span(), std::sqrt(6.0 / static_cast<double>(dim_ + width_)),
              ParamSeed(seed, name_ + ".weight"));
  weight_grad_.ResizeZeroed(dim_, 4 * width_);
}

std::string FieldSelfAttention::type() const {
  return "self_attention(fields=" + std::to_string(fields_) + ",dim=" + std::to_string(dim_) +
         ",heads=" + std::to_string(heads_) + ",head_dim=" + std::to_string(head_dim_) + ")";
}

Status FieldSelfAttention::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const int64_t B = x.rows, F = fields_, D = dim_, W = width_, d = head_dim_, H = heads_;
  const int64_t pw = 4 * W;
  xc_.Resize(B * F, D);
  internal::ForRows(ctx.compute, B, F * D, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) std::memcpy(xc_.row(b * F), x.row(b), sizeof(float) * static_cast<size_t>(F * D));
  });
  p_.Resize(B * F, pw);
  a_.Resize(B * H, F * F);
  if (B == 0) return OkStatus();
  kernels::Gemm(false, false, B * F, pw, D, 1.0f, xc_.data(), D, weight_.data(), pw, 0.0f, p_.data(), pw);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  internal::ForRows(ctx.compute, B, F * F * W * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) {
      const float* P = p_.row(b * F);  // F rows of stride pw
      float* out = y.row(b);
      for (int64_t h = 0; h < H; ++h) {
        float* A = a_.row(b * H + h);
        for (int64_t i = 0; i < F; ++i) {
          const float* q = P + i * pw + h * d;
          float mx = -INFINITY;
          for (int64_t j = 0; j < F; ++j) {
            const float* k = P + j * pw + W + h * d;
            float s = 0.0f;
            for (int64_t t = 0; t < d; ++t) s += q[t] * k[t];
            A[i * F + j] = s * scale;
            mx = std::max(mx, A[i * F + j]);
          }
          float sum = 0.0f;
          for (int64_t j = 0; j < F; ++j) sum += (A[i * F + j] = std::exp(A[i * F + j] - mx));
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j < F; ++j) A[i * F + j] *= inv;
          // Y[i, h·d ..] = ReLU(Σ_j A_ij V_j + R_i)
          float* yi = out + i * W + h * d;
          const float* r = P + i * pw + 3 * W + h * d;
          for (int64_t t = 0; t < d; ++t) yi[t] = r[t];
          for (int64_t j = 0; j < F; ++j) {
            const float a = A[i * F + j];
            const float* v = P + j * pw + 2 * W + h * d;
            for (int64_t t = 0; t < d; ++t) yi[t] += a * v[t];
          }
          for (int64_t t = 0; t < d; ++t) yi[t] = std::max(yi[t], 0.0f);
        }
      }
    }
  });
  return OkStatus();
}

Status FieldSelfAttention::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                                    MatrixView dx, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  const int64_t B = x.rows, F = fields_, D = dim_, W = width_, d = head_dim_, H = heads_;
  const int64_t pw = 4 * W;
  dp_.Resize(B * F, pw);
  if (B == 0) {
    weight_grad_.SetZero();
    return OkStatus();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  internal::ForRows(ctx.compute, B, F * F * W * 4, [&](int64_t r0, int64_t r1) {
    std::vector<float> da(static_cast<size_t>(F));
    for (int64_t b = r0; b < r1; ++b) {
      const float* P = p_.row(b * F);
      float* dP = dp_.row(b * F);
      const float* yb = y.row(b);
      float* g = dy.row(b);  // becomes G = dY ⊙ (Y > 0), in place (dy is scratch)
      for (int64_t e = 0; e < F * W; ++e) g[e] = yb[e] > 0.0f ? g[e] : 0.0f;
      std::fill(dP, dP + F * pw, 0.0f);
      for (int64_t i = 0; i < F; ++i) std::memcpy(dP + i * pw + 3 * W, g + i * W, sizeof(float) * static_cast<size_t>(W));  // dR
      for (int64_t h = 0; h < H; ++h) {
        const float* A = a_.row(b * H + h);
        for (int64_t i = 0; i < F; ++i) {
          const float* gi = g + i * W + h * d;
          // dA_ij = <G_i, V_j>; dV_j += A_ij G_i
          float dot = 0.0f;
          for (int64_t j = 0; j < F; ++j) {
            const float* v = P + j * pw + 2 * W + h * d;
            float* dv = dP + j * pw + 2 * W + h * d;
            const float a = A[i * F + j];
            float s = 0.0f;
            for (int64_t t = 0; t < d; ++t) {
              s += gi[t] * v[t];
              dv[t] += a * gi[t];
            }
            da[static_cast<size_t>(j)] = s;
            dot += s * a;
          }
          // dS_ij = A_ij (dA_ij − Σ_k A_ik dA_ik) · scale;  dQ_i += dS_ij K_j;  dK_j += dS_ij Q_i
          const float* q = P + i * pw + h * d;
          float* dq = dP + i * pw + h * d;
          for (int64_t j = 0; j < F; ++j) {
            const float ds = A[i * F + j] * (da[static_cast<size_t>(j)] - dot) * scale;
            const float* k = P + j * pw + W + h * d;
            float* dk = dP + j * pw + W + h * d;
            for (int64_t t = 0; t < d; ++t) {
              dq[t] += ds * k[t];
              dk[t] += ds * q[t];
            }
          }
        }
      }
    }
  });
  kernels::Gemm(true, false, D, pw, B * F, 1.0f, xc_.data(), D, dp_.data(), pw, 0.0f, weight_grad_.data(), pw);
  if (dx.data == nullptr) return OkStatus();
  dxc_.Resize(B * F, D);
  kernels::Gemm(false, true, B * F, D, pw, 1.0f, dp_.data(), pw, weight_.data(), pw, 0.0f, dxc_.data(), D);
  internal::ForRows(ctx.compute, B, F * D, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) std::memcpy(dx.row(b), dxc_.row(b * F), sizeof(float) * static_cast<size_t>(F * D));
  });
  return OkStatus();
}

std::vector<optim::ParamRef> FieldSelfAttention::Params() {
  return {{name_ + ".weight", weight_.span(), weight_grad_.span(), true}};
}

}  // namespace rectrain::nn
