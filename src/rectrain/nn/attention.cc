#include "rectrain/nn/attention.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/kernels/kernels.h"
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
  // The projection GEMM reads x as B·F rows of D: as it is when its rows are packed (ld = F·D,
  // the usual case), else from a packed copy.
  const float* fields = x.data;
  if (x.ld != F * D) {
    xc_.Resize(B * F, D);
    internal::ForRows(ctx.compute, B, F * D, [&](int64_t r0, int64_t r1) {
      for (int64_t b = r0; b < r1; ++b) std::memcpy(xc_.row(b * F), x.row(b), sizeof(float) * static_cast<size_t>(F * D));
    });
    fields = xc_.data();
  }
  p_.Resize(B * F, pw);
  a_.Resize(B * H, F * F);
  if (B == 0) return OkStatus();
  kernels::Gemm(false, false, B * F, pw, D, 1.0f, fields, D, weight_.data(), pw, 0.0f, p_.data(), pw);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, B, F * F * W * 2, [&](int64_t r0, int64_t r1) {
    k.attention_forward(p_.row(r0 * F), r1 - r0, F, H, d, scale, a_.row(r0 * H), y.row(r0), y.ld);
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
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, B, F * F * W * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t b = r0; b < r1; ++b) {  // G = dY ⊙ (Y > 0), in place (dy is scratch)
      const float* yb = y.row(b);
      float* g = dy.row(b);
      for (int64_t e = 0; e < F * W; ++e) g[e] = yb[e] > 0.0f ? g[e] : 0.0f;
    }
    k.attention_backward(p_.row(r0 * F), a_.row(r0 * H), r1 - r0, F, H, d, scale, dy.row(r0), dy.ld,
                         dp_.row(r0 * F));
  });
  const float* fields = x.ld == F * D ? x.data : xc_.data();  // as Forward chose for this x
  kernels::Gemm(true, false, D, pw, B * F, 1.0f, fields, D, dp_.data(), pw, 0.0f, weight_grad_.data(), pw);
  if (dx.data == nullptr) return OkStatus();
  if (dx.ld == F * D) {
    kernels::Gemm(false, true, B * F, D, pw, 1.0f, dp_.data(), pw, weight_.data(), pw, 0.0f, dx.data, D);
    return OkStatus();
  }
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
