// rectrain/nn/cross.h: the DCN-v2 cross network (full-rank cross layers), as one layer.
//
//   x_0 = x,   u_l = x_l · W_l + b_l,   x_{l+1} = x_0 ⊙ u_l + x_l   (l = 0 .. L−1),   y = x_L
//   W_l [d × d] ("x·W" layout), b_l [d].
// Backward, with G = dL/dx_{l+1} walking l = L−1 .. 0 and T = G ⊙ x_0:
//   dW_l = x_lᵀ · T,  db_l = Σ_rows T,  dL/dx_0 += G ⊙ u_l,  dL/dx_l = G + T · W_lᵀ;
//   finally dx = dL/dx_0 (direct path) + the accumulated multiplicative terms.
// Keeps x_1 .. x_{L−1} and u_0 .. u_{L−1} from the last Forward (2L−1 matrices [B × d]).
// Params "<name>.<l>.weight" (decay) and "<name>.<l>.bias" (no decay).
// Init: W Xavier-uniform U(±sqrt(6/(2d))), b = 0 (as in the DCN-v2 reference code).
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class CrossNetwork final : public Layer {
 public:
  // Preconditions (CHECK): features >= 1, num_layers >= 1.
  CrossNetwork(std::string name, int64_t features, int num_layers, uint64_t seed);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

 private:
  struct CrossLayer {
    tensor::Tensor weight, weight_grad, bias, bias_grad;
    tensor::Tensor u;  // u_l of the last Forward [B × d]
    tensor::Tensor x;  // x_l of the last Forward (unused for l = 0: that is the input)
  };
  std::string name_;
  int64_t features_;
  std::vector<CrossLayer> layers_;
  tensor::Tensor grad_, t_, dx0_;  // backward scratch [B × d]
};

}  // namespace rectrain::nn
