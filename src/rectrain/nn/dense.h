// rectrain/nn/dense.h: fully connected layer with fused bias and activation.
//
//   forward:  y = act(x · W + b)            W [in × out] (row-major, "x·W" layout), b [out]
//   backward: g = dy ⊙ act'(y)               (in place in dy; ReLU' from the output y)
//             dW = xᵀ · g,  db = Σ_rows g,   dx = g · Wᵀ
// GEMMs go through kernels::Gemm (oneDNN); with LayerContext::precision kBf16 through
// kernels::GemmBf16 on bf16 copies of x, W and g made by Forward/Backward (x's and W's copies
// are kept from Forward for Backward). An out=1 layer (the logit) uses GEMV-style kernels
// (row_dot, col_weighted_sum, outer) instead: a GEMM with N=1 runs at ~1/6 of the speed.
// Params: "<name>.weight" [in × out] (decay), "<name>.bias" [out] (no decay).
// Init: kHe — N(0, 2/in) (for layers followed by ReLU); kXavier — U(±sqrt(6/(in+out))); bias 0.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

enum class Activation : uint8_t { kNone, kRelu };
// kZeros: all weights 0 (a linear model's first-order term: it must start neutral).
enum class WeightInit : uint8_t { kHe, kXavier, kZeros };

class Dense final : public Layer {
 public:
  // Preconditions (CHECK): in >= 1, out >= 1 (MakeModel validates config values first).
  Dense(std::string name, int64_t in, int64_t out, Activation act, WeightInit init,
        uint64_t seed);

  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

  // Direct access for tests and references.
  tensor::Tensor& weight() { return weight_; }
  tensor::Tensor& bias() { return bias_; }

 private:
  std::string name_;
  int64_t in_, out_;
  Activation act_;
  tensor::Tensor weight_, weight_grad_, bias_, bias_grad_;
  tensor::Tensor packed_grad_;  // out == 1 with a strided dy only
  // kBf16: bfloat16 copies of the last Forward's x [rows × in] and W, and Backward's g.
  std::vector<uint16_t> x16_, w16_, g16_;
};

}  // namespace rectrain::nn
