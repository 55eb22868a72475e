#include "rectrain/nn/activation.h"

#include <cmath>
#include <cstring>

#include "rectrain/base/random.h"
#include "rectrain/kernels/kernels.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

Status Relu::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, x.rows, features_, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(y.row(r), x.row(r), sizeof(float) * features_);
    k.bias_act(y.row(r0), r1 - r0, features_, y.ld, nullptr, true);
  });
  return OkStatus();
}

Status Relu::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                      const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (dx.data == nullptr) return OkStatus();
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, x.rows, features_, [&](int64_t r0, int64_t r1) {
    k.act_backward_colsum(dy.row(r0), r1 - r0, features_, dy.ld, y.row(r0), y.ld, true,
                          nullptr);
    for (int64_t r = r0; r < r1; ++r) std::memcpy(dx.row(r), dy.row(r), sizeof(float) * features_);
  });
  return OkStatus();
}

Dropout::Dropout(std::string name, int64_t features, float rate)
    : name_(std::move(name)), features_(features), rate_(rate) {
  RECTRAIN_CHECK(rate >= 0.0f && rate < 1.0f) << "dropout rate " << rate;
  // rate · 2^64, computed in long double to keep the tiny rates exact enough.
  const long double t = std::ldexp(static_cast<long double>(rate), 64);
  threshold_ = rate == 0.0f ? 0 : static_cast<uint64_t>(t);
  scale_ = 1.0f / (1.0f - rate);
}

std::string Dropout::type() const {
  return "dropout(n=" + std::to_string(features_) + ",rate=" + std::to_string(rate_) + ")";
}

void Dropout::Apply(ConstMatrixView in, MatrixView out, int64_t r0, int64_t r1) const {
  for (int64_t r = r0; r < r1; ++r) {
    const float* src = in.row(r);
    float* dst = out.row(r);
    if (!last_training_ || threshold_ == 0) {
      std::memcpy(dst, src, sizeof(float) * features_);
      continue;
    }
    // Keyed by the row's index in the global batch, so a rank's slice draws the same masks.
    const uint64_t base = stream_ + static_cast<uint64_t>((row_offset_ + r) * features_);
    for (int64_t c = 0; c < features_; ++c) {
      const bool keep = Mix64(base + static_cast<uint64_t>(c)) >= threshold_;
      dst[c] = keep ? src[c] * scale_ : 0.0f;
    }
  }
}

Status Dropout::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  last_training_ = ctx.training;
  stream_ = DeriveSeed(ctx.seed, HashBytes(name_, 0));
  row_offset_ = ctx.row_offset;
  internal::ForRows(ctx.compute, x.rows, features_,
                    [&](int64_t r0, int64_t r1) { Apply(x, y, r0, r1); });
  return OkStatus();
}

Status Dropout::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                         const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (dx.data == nullptr) return OkStatus();
  internal::ForRows(ctx.compute, x.rows, features_,
                    [&](int64_t r0, int64_t r1) { Apply(dy, dx, r0, r1); });
  return OkStatus();
}

}  // namespace rectrain::nn
