#include "rectrain/nn/layer_norm.h"

#include <cmath>
#include <utility>

#include "rectrain/nn/init.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

LayerNorm::LayerNorm(std::string name, int64_t features)
    : name_(std::move(name)), features_(features) {
  RECTRAIN_CHECK(features >= 1);
  gamma_.Resize(1, features);
  InitConstant(gamma_.span(), 1.0f);
  beta_.ResizeZeroed(1, features);
  gamma_grad_.ResizeZeroed(1, features);
  beta_grad_.ResizeZeroed(1, features);
}

Status LayerNorm::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  mean_.Resize(x.rows, 1);
  rstd_.Resize(x.rows, 1);
  const float* gamma = gamma_.data();
  const float* beta = beta_.data();
  const int64_t n = features_;
  internal::ForRows(ctx.compute, x.rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row(r);
      double sum = 0;
      for (int64_t c = 0; c < n; ++c) sum += xr[c];
      const double mu = sum / static_cast<double>(n);
      double sq = 0;
      for (int64_t c = 0; c < n; ++c) sq += (xr[c] - mu) * (xr[c] - mu);
      const float rstd = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + kEpsilon));
      const float muf = static_cast<float>(mu);
      mean_.data()[r] = muf;
      rstd_.data()[r] = rstd;
      float* yr = y.row(r);
      for (int64_t c = 0; c < n; ++c) yr[c] = (xr[c] - muf) * rstd * gamma[c] + beta[c];
    }
  });
  return OkStatus();
}

Status LayerNorm::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                           const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (mean_.rows() != x.rows) {
    return FailedPreconditionError("layer " + name_ + ": Backward without a matching Forward");
  }
  const int64_t n = features_;
  const int64_t rows = x.rows;
  const float* mean = mean_.data();
  const float* rstd = rstd_.data();
  // Parameter gradients: column blocks, each summed over all rows in order.
  internal::ForColumnBlocks(ctx.compute, n, rows, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      gamma_grad_.data()[c] = 0.0f;
      beta_grad_.data()[c] = 0.0f;
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.row(r);
      const float* gr = dy.row(r);
      for (int64_t c = c0; c < c1; ++c) {
        gamma_grad_.data()[c] += gr[c] * (xr[c] - mean[r]) * rstd[r];
        beta_grad_.data()[c] += gr[c];
      }
    }
  });
  if (dx.data == nullptr) return OkStatus();
  const float* gamma = gamma_.data();
  internal::ForRows(ctx.compute, rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row(r);
      const float* gr = dy.row(r);
      double a = 0, b = 0;
      for (int64_t c = 0; c < n; ++c) {
        const float g = gr[c] * gamma[c];
        const float xhat = (xr[c] - mean[r]) * rstd[r];
        a += g;
        b += g * xhat;
      }
      const float am = static_cast<float>(a / static_cast<double>(n));
      const float bm = static_cast<float>(b / static_cast<double>(n));
      float* o = dx.row(r);
      for (int64_t c = 0; c < n; ++c) {
        const float xhat = (xr[c] - mean[r]) * rstd[r];
        o[c] = rstd[r] * (gr[c] * gamma[c] - am - xhat * bm);
      }
    }
  });
  return OkStatus();
}

std::vector<optim::ParamRef> LayerNorm::Params() {
  return {
      {name_ + ".gamma", gamma_.span(), gamma_grad_.span(), false},
      {name_ + ".beta", beta_.span(), beta_grad_.span(), false},
  };
}

}  // namespace rectrain::nn
