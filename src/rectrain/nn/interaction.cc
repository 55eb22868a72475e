#include "rectrain/nn/interaction.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {
namespace {

float Dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

}  // namespace

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
  internal::ForRows(ctx.compute, x.rows, n * n * D / 2 + D, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* v = x.row(r);
      float* out = y.row(r);
      if (keep_first_) {
        std::memcpy(out, v, sizeof(float) * static_cast<size_t>(D));
        out += D;
      }
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j) *out++ = Dot(v + i * D, v + j * D, D);
      }
    }
  });
  return OkStatus();
}

Status DotInteraction::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                                MatrixView dx, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  if (dx.data == nullptr) return OkStatus();
  const int64_t n = vectors_, D = dim_;
  internal::ForRows(ctx.compute, x.rows, n * n * D, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* v = x.row(r);
      const float* g = dy.row(r);
      float* out = dx.row(r);
      std::fill(out, out + n * D, 0.0f);
      if (keep_first_) {
        for (int64_t d = 0; d < D; ++d) out[d] = g[d];
        g += D;
      }
      for (int64_t i = 0; i < n; ++i) {
        float* dxi = out + i * D;
        const float* vi = v + i * D;
        for (int64_t j = i + 1; j < n; ++j) {
          const float gij = *g++;
          const float* vj = v + j * D;
          float* dxj = out + j * D;
          for (int64_t d = 0; d < D; ++d) {
            dxi[d] += gij * vj[d];
            dxj[d] += gij * vi[d];
          }
        }
      }
    }
  });
  return OkStatus();
}

}  // namespace rectrain::nn
