#include "rectrain/nn/interaction.h"

#include <cstring>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/kernels/kernels.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {

DotInteraction::DotInteraction(std::string name, int64_t vectors, int64_t dim, bool keep_first)
    : name_(std::move(name)), vectors_(vectors), dim_(dim), keep_first_(keep_first) {
  RECTRAIN_CHECK(vectors >= 1 && dim >= 1);
}

std::string DotInteraction::type() const {
  return "dot_interaction(vectors=" + std::to_string(vectors_) + ",dim=" + std::to_string(dim_) +
         (keep_first_ ? ",keep_first" : "") + ")";
}

Status DotInteraction::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const int64_t n = vectors_, D = dim_;
  const int64_t first = keep_first_ ? D : 0;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, x.rows, n * n * D / 2 + D, [&](int64_t r0, int64_t r1) {
    if (keep_first_) {
      for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(y.row(r), x.row(r), sizeof(float) * static_cast<size_t>(D));
      }
    }
    k.pair_dots(x.row(r0), r1 - r0, n, D, x.ld, y.row(r0) + first, y.ld);
  });
  return OkStatus();
}

Status DotInteraction::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                                MatrixView dx, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (dx.data == nullptr) return OkStatus();
  const int64_t n = vectors_, D = dim_;
  const int64_t first = keep_first_ ? D : 0;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx.compute, x.rows, n * n * D, [&](int64_t r0, int64_t r1) {
    k.pair_dots_backward(x.row(r0), r1 - r0, n, D, x.ld, dy.row(r0) + first, dy.ld, dx.row(r0),
                         dx.ld);
    if (keep_first_) {  // v_0 was also passed through: its output gradient adds to dx_0
      for (int64_t r = r0; r < r1; ++r) {
        const float* g = dy.row(r);
        float* out = dx.row(r);
        for (int64_t d = 0; d < D; ++d) out[d] += g[d];
      }
    }
  });
  return OkStatus();
}

}  // namespace rectrain::nn
