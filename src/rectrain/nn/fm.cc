#include "rectrain/nn/fm.h"

#include <utility>

#include "rectrain/kernels/kernels.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

FmInteraction::FmInteraction(std::string name, int64_t fields, int64_t dim)
    : name_(std::move(name)), fields_(fields), dim_(dim) {
  RECTRAIN_CHECK(fields >= 0 && dim >= 1);
}

std::string FmInteraction::type() const {
  return "fm(fields=" + std::to_string(fields_) + ",dim=" + std::to_string(dim_) + ")";
}

Status FmInteraction::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, x.rows, fields_ * dim_, [&](int64_t r0, int64_t r1) {
    if (y.ld == 1) {
      k.fm_forward(x.row(r0), r1 - r0, fields_, dim_, x.ld, y.row(r0));
    } else {
      for (int64_t r = r0; r < r1; ++r) k.fm_forward(x.row(r), 1, fields_, dim_, x.ld, y.row(r));
    }
  });
  return OkStatus();
}

Status FmInteraction::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                               MatrixView dx, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (dx.data == nullptr) return OkStatus();
  return BackwardInto(x, dy, dx, /*accumulate=*/false, ctx);
}

Status FmInteraction::BackwardInto(ConstMatrixView x, ConstMatrixView dy, MatrixView dx,
                                   bool accumulate, const LayerContext& ctx) {
  if (x.cols != in_features() || dy.rows != x.rows || dy.cols != 1 || dx.rows != x.rows ||
      dx.cols != x.cols) {
    return InvalidArgumentError("layer " + name_ + ": gradient shapes do not match input [" +
                                std::to_string(x.rows) + " x " + std::to_string(x.cols) + "]");
  }
  const float* g = dy.data;
  if (dy.ld != 1) {
    packed_.Resize(dy.rows, 1);
    for (int64_t r = 0; r < dy.rows; ++r) packed_.data()[r] = dy.data[r * dy.ld];
    g = packed_.data();
  }
  const kernels::KernelTable& k = kernels::ActiveKernels();
  scratch_.Resize(std::max(1, ctx.compute.num_threads), dim_);
  ParallelForEach(ctx.compute, x.rows, internal::RowGrain(fields_ * dim_),
                  [&](int thread, int64_t r0, int64_t r1) {
                    k.fm_backward(x.row(r0), r1 - r0, fields_, dim_, x.ld, g + r0, dx.row(r0),
                                  dx.ld, accumulate, scratch_.row(thread));
                  });
  return OkStatus();
}

}  // namespace rectrain::nn
