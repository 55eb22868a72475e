#include "rectrain/nn/dense.h"

#include <cmath>
#include <utility>

#include "rectrain/kernels/gemm.h"
#include "rectrain/kernels/kernels.h"
#include "rectrain/nn/init.h"
#include "rectrain/nn/internal/parallel_util.h"

namespace rectrain::nn {
namespace {

// Packs m [rows × cols] (any row stride) into a dense bf16 array, rows split across the pool.
void ToBf16(const ComputeContext& compute, ConstMatrixView m, std::vector<uint16_t>* out) {
  out->resize(static_cast<size_t>(m.rows * m.cols));
  const kernels::KernelTable& k = kernels::ActiveKernels();
  uint16_t* dst = out->data();
  internal::ForRows(compute, m.rows, m.cols, [&](int64_t r0, int64_t r1) {
    if (m.ld == m.cols) {
      k.to_bf16(m.row(r0), (r1 - r0) * m.cols, dst + r0 * m.cols);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) k.to_bf16(m.row(r), m.cols, dst + r * m.cols);
  });
}

}  // namespace

Dense::Dense(std::string name, int64_t in, int64_t out, Activation act, WeightInit init,
             uint64_t seed)
    : name_(std::move(name)), in_(in), out_(out), act_(act) {
  RECTRAIN_CHECK(in >= 1 && out >= 1) << "Dense " << name_ << " in=" << in << " out=" << out;
  weight_.Resize(in, out);
  weight_grad_.ResizeZeroed(in, out);
  bias_.ResizeZeroed(1, out);
  bias_grad_.ResizeZeroed(1, out);
  const uint64_t s = ParamSeed(seed, name_ + ".weight");
  if (init == WeightInit::kHe) {
    InitNormal(weight_.span(), std::sqrt(2.0 / static_cast<double>(in)), s);
  } else if (init == WeightInit::kXavier) {
    InitUniform(weight_.span(), std::sqrt(6.0 / static_cast<double>(in + out)), s);
  } else {
    weight_.ResizeZeroed(in, out);
  }
}

std::string Dense::type() const {
  return "dense(in=" + std::to_string(in_) + ",out=" + std::to_string(out_) +
         ",act=" + (act_ == Activation::kRelu ? "relu" : "none") + ")";
}

Status Dense::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  const int64_t rows = x.rows;
  if (rows == 0) return OkStatus();
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const bool relu = act_ == Activation::kRelu;
  if (out_ == 1) {
    const float b = bias_.data()[0];
    internal::ForRows(ctx.compute, rows, in_, [&](int64_t r0, int64_t r1) {
      float* out = y.row(r0);
      if (y.ld == 1) {
        k.row_dot(x.row(r0), r1 - r0, in_, x.ld, weight_.data(), b, out);
        if (relu) k.bias_act(out, r1 - r0, 1, 1, nullptr, true);
      } else {
        for (int64_t r = r0; r < r1; ++r) {
          k.row_dot(x.row(r), 1, in_, x.ld, weight_.data(), b, y.row(r));
          if (relu) k.bias_act(y.row(r), 1, 1, 1, nullptr, true);
        }
      }
    });
    return OkStatus();
  }
  if (ctx.precision == GemmPrecision::kBf16) {
    ToBf16(ctx.compute, x, &x16_);
    ToBf16(ctx.compute, weight_.view(), &w16_);
    kernels::GemmBf16(false, false, rows, out_, in_, x16_.data(), in_, w16_.data(), out_,
                      /*accumulate=*/false, y.data, y.ld);
  } else {
    kernels::Gemm(false, false, rows, out_, in_, 1.0f, x.data, x.ld, weight_.data(), out_, 0.0f,
                  y.data, y.ld);
  }
  internal::ForRows(ctx.compute, rows, out_, [&](int64_t r0, int64_t r1) {
    k.bias_act(y.row(r0), r1 - r0, out_, y.ld, bias_.data(), relu);
  });
  return OkStatus();
}

Status Dense::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                       const LayerContext& ctx) {
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  const int64_t rows = x.rows;
  if (rows == 0) {
    weight_grad_.SetZero();
    bias_grad_.SetZero();
    return OkStatus();
  }
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const bool relu = act_ == Activation::kRelu;
  // g = dy ⊙ act'(y) in place, db = column sums of g: one pass, split by column blocks.
  internal::ForColumnBlocks(ctx.compute, out_, rows, [&](int64_t c0, int64_t c1) {
    k.act_backward_colsum(dy.data + c0, rows, c1 - c0, dy.ld, y.data + c0, y.ld, relu,
                          bias_grad_.data() + c0);
  });
  if (out_ == 1) {
    // g is a column vector with stride dy.ld: make it contiguous for the GEMV kernels.
    const float* g = dy.data;
    if (dy.ld != 1) {
      packed_grad_.Resize(rows, 1);
      for (int64_t r = 0; r < rows; ++r) packed_grad_.data()[r] = dy.data[r * dy.ld];
      g = packed_grad_.data();
    }
    internal::ForColumnBlocks(ctx.compute, in_, rows, [&](int64_t c0, int64_t c1) {
      k.col_weighted_sum(x.data + c0, rows, c1 - c0, x.ld, g, weight_grad_.data() + c0);
    });
    if (dx.data != nullptr) {
      internal::ForRows(ctx.compute, rows, in_, [&](int64_t r0, int64_t r1) {
        k.outer(g + r0, r1 - r0, weight_.data(), in_, dx.row(r0), dx.ld);
      });
    }
    return OkStatus();
  }
  if (ctx.precision == GemmPrecision::kBf16) {
    if (static_cast<int64_t>(x16_.size()) != rows * in_) {
      return FailedPreconditionError("Dense " + name_ + ": bf16 Backward without a bf16 Forward");
    }
    ToBf16(ctx.compute, dy, &g16_);
    kernels::GemmBf16(true, false, in_, out_, rows, x16_.data(), in_, g16_.data(), out_,
                      /*accumulate=*/false, weight_grad_.data(), out_);
    if (dx.data != nullptr) {
      kernels::GemmBf16(false, true, rows, in_, out_, g16_.data(), out_, w16_.data(), out_,
                        /*accumulate=*/false, dx.data, dx.ld);
    }
    return OkStatus();
  }
  kernels::Gemm(true, false, in_, out_, rows, 1.0f, x.data, x.ld, dy.data, dy.ld, 0.0f,
                weight_grad_.data(), out_);
  if (dx.data != nullptr) {
    kernels::Gemm(false, true, rows, in_, out_, 1.0f, dy.data, dy.ld, weight_.data(), out_,
                  0.0f, dx.data, dx.ld);
  }
  return OkStatus();
}

std::vector<optim::ParamRef> Dense::Params() {
  return {
      {name_ + ".weight", weight_.span(), weight_grad_.span(), true},
      {name_ + ".bias", bias_.span(), bias_grad_.span(), false},
  };
}

}  // namespace rectrain::nn
