#include "rectrain/nn/cross.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "rectrain/kernels/gemm.h"
#include "rectrain/kernels/kernels.h"
#include "rectrain/nn/init.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {
namespace {

// out = a ⊙ b (+ c), row by row so any of the views may be strided.
void MulAddRows(const ComputeContext& ctx, ConstMatrixView a, ConstMatrixView b,
                const ConstMatrixView* c, MatrixView out) {
  const kernels::KernelTable& k = kernels::ActiveKernels();
  internal::ForRows(ctx, out.rows, out.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      k.mul_add(out.cols, a.row(r), b.row(r), c ? c->row(r) : nullptr, out.row(r));
    }
  });
}

}  // namespace

CrossNetwork::CrossNetwork(std::string name, int64_t features, int num_layers, uint64_t seed)
    : name_(std::move(name)), features_(features), layers_(static_cast<size_t>(num_layers)) {
  RECTRAIN_CHECK(features >= 1 && num_layers >= 1);
  for (int l = 0; l < num_layers; ++l) {
    CrossLayer& layer = layers_[l];
    layer.weight.Resize(features, features);
    InitUniform(layer.weight.span(), std::sqrt(6.0 / (2.0 * static_cast<double>(features))),
                ParamSeed(seed, name_ + "." + std::to_string(l) + ".weight"));
    layer.weight_grad.ResizeZeroed(features, features);
    layer.bias.ResizeZeroed(1, features);
    layer.bias_grad.ResizeZeroed(1, features);
  }
}

std::string CrossNetwork::type() const {
  return "cross(n=" + std::to_string(features_) + ",layers=" + std::to_string(layers_.size()) +
         ")";
}

Status CrossNetwork::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const int64_t rows = x.rows;
  const int64_t d = features_;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const int num_layers = static_cast<int>(layers_.size());
  for (int l = 0; l < num_layers; ++l) {
    CrossLayer& layer = layers_[l];
    const ConstMatrixView xl = l == 0 ? x : ConstMatrixView(layers_[l].x.view());
    layer.u.Resize(rows, d);
    if (rows == 0) continue;
    kernels::Gemm(false, false, rows, d, d, 1.0f, xl.data, xl.ld, layer.weight.data(), d, 0.0f,
                  layer.u.data(), d);
    internal::ForRows(ctx.compute, rows, d, [&](int64_t r0, int64_t r1) {
      k.bias_act(layer.u.row(r0), r1 - r0, d, d, layer.bias.data(), false);
    });
    MatrixView next;
    if (l + 1 == num_layers) {
      next = y;
    } else {
      layers_[l + 1].x.Resize(rows, d);
      next = layers_[l + 1].x.view();
    }
    MulAddRows(ctx.compute, x, layer.u.view(), &xl, next);
  }
  return OkStatus();
}

Status CrossNetwork::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                              const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  const int64_t rows = x.rows;
  const int64_t d = features_;
  if (layers_[0].u.rows() != rows) {
    return FailedPreconditionError("layer " + name_ + ": Backward without a matching Forward");
  }
  const kernels::KernelTable& k = kernels::ActiveKernels();
  grad_.Resize(rows, d);
  t_.Resize(rows, d);
  dx0_.ResizeZeroed(rows, d);
  internal::ForRows(ctx.compute, rows, d, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(grad_.row(r), dy.row(r), sizeof(float) * d);
  });
  for (int l = static_cast<int>(layers_.size()) - 1; l >= 0; --l) {
    CrossLayer& layer = layers_[l];
    const ConstMatrixView xl = l == 0 ? x : ConstMatrixView(layer.x.view());
    MulAddRows(ctx.compute, grad_.view(), x, nullptr, t_.view());  // T = G ⊙ x0
    internal::ForColumnBlocks(ctx.compute, d, rows, [&](int64_t c0, int64_t c1) {
      k.act_backward_colsum(t_.data() + c0, rows, c1 - c0, d, nullptr, 0, false,
                            layer.bias_grad.data() + c0);
    });
    if (rows == 0) {
      layer.weight_grad.SetZero();
      continue;
    }
    kernels::Gemm(true, false, d, d, rows, 1.0f, xl.data, xl.ld, t_.data(), d, 0.0f,
                  layer.weight_grad.data(), d);
    const ConstMatrixView acc = dx0_.view();
    MulAddRows(ctx.compute, grad_.view(), layer.u.view(), &acc, dx0_.view());  // += G ⊙ u_l
    // G ← G + T · W_lᵀ (GEMM with beta = 1 accumulates in place).
    kernels::Gemm(false, true, rows, d, d, 1.0f, t_.data(), d, layer.weight.data(), d, 1.0f,
                  grad_.data(), d);
  }
  if (dx.data != nullptr) {
    internal::ForRows(ctx.compute, rows, d, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* g = grad_.row(r);
        const float* a = dx0_.row(r);
        float* o = dx.row(r);
        for (int64_t c = 0; c < d; ++c) o[c] = g[c] + a[c];
      }
    });
  }
  return OkStatus();
}

std::vector<optim::ParamRef> CrossNetwork::Params() {
  std::vector<optim::ParamRef> params;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const std::string prefix = name_ + "." + std::to_string(l);
    params.push_back({prefix + ".weight", layers_[l].weight.span(), layers_[l].weight_grad.span(),
                      true});
    params.push_back({prefix + ".bias", layers_[l].bias.span(), layers_[l].bias_grad.span(),
                      false});
  }
  return params;
}

}  // namespace rectrain::nn
