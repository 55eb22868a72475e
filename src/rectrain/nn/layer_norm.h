// rectrain/nn/layer_norm.h: layer normalisation over the features of each row.
//
//   forward:  μ = mean_c x,  σ² = mean_c (x − μ)²,  r = 1/sqrt(σ² + ε),  x̂ = (x − μ)·r,
//             y = x̂ ⊙ γ + β                                  (ε = 1e-5, γ = 1, β = 0 at init)
//   backward: dγ = Σ_rows dy ⊙ x̂,  dβ = Σ_rows dy,
//             ĝ = dy ⊙ γ,  dx = r · (ĝ − mean_c ĝ − x̂ · mean_c(ĝ ⊙ x̂))
// Keeps μ and r per row from the last Forward. Params "<name>.gamma", "<name>.beta" (no decay).
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class LayerNorm final : public Layer {
 public:
  static constexpr float kEpsilon = 1e-5f;
  LayerNorm(std::string name, int64_t features);
  const std::string& name() const override { return name_; }
  std::string type() const override { return "layer_norm(n=" + std::to_string(features_) + ")"; }
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

 private:
  std::string name_;
  int64_t features_;
  tensor::Tensor gamma_, gamma_grad_, beta_, beta_grad_;
  tensor::Tensor mean_, rstd_;  // [B] of the last Forward
};

}  // namespace rectrain::nn
