// rectrain/nn/attention.h: AutoInt's interacting layer (Song et al., 2019): multi-head
// self-attention over the fields of a row, with a residual projection, as one layer.
//
//   x [B × F·D] holds F field vectors of D floats (field-major). Per row, X = the F × D matrix:
//     [Q | K | V | R] = X · W                      W [D × 4·H·d] (H heads of size d)
//     A_h = softmax_rows(Q_h K_hᵀ / √d)            F × F per head (Q_h: columns h·d .. of Q)
//     Y = ReLU([A_1 V_1 | … | A_H V_H] + R)        Y [F × H·d], y [B × F·H·d]
// Backward, with G = dY ⊙ (Y > 0):
//   dR = G;  dV_h = A_hᵀ G_h;  dA_h = G_h V_hᵀ;  dS_h = A_h ⊙ (dA_h − rowsum(dA_h ⊙ A_h)) / √d;
//   dQ_h = dS_h K_h;  dK_h = dS_hᵀ Q_h;  dW = Xᵀ [dQ | dK | dV | dR];  dX = [dQ | dK | dV | dR] Wᵀ.
// The four projections are one GEMM over all B·F field vectors (and two in the backward); the
// F × F attention per row and head (26 × 26 × 8 at the criteo shape) is the kernels
// attention_forward / attention_backward (kernels/kernels.h).
// Keeps P = [Q | K | V | R], A and Y's mask of the last Forward.
// Params "<name>.weight" [D × 4·H·d] (decay), Xavier-uniform; no bias (as the reference).
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class FieldSelfAttention final : public Layer {
 public:
  // Preconditions (CHECK): fields, dim, heads, head_dim >= 1.
  FieldSelfAttention(std::string name, int64_t fields, int64_t dim, int heads, int head_dim, uint64_t seed);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return fields_ * dim_; }
  int64_t out_features() const override { return fields_ * width_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

 private:
  std::string name_;
  int64_t fields_, dim_, heads_, head_dim_, width_;  // width_ = heads · head_dim
  tensor::Tensor weight_, weight_grad_;  // [D × 4·width]
  tensor::Tensor xc_;    // x packed as [B·F × D] when its rows are not (x.ld > F·D)
  tensor::Tensor p_;     // [Q | K | V | R] of the last Forward: [B·F × 4·width]
  tensor::Tensor a_;     // attention weights: [B·H × F·F]
  tensor::Tensor dp_;    // backward: [dQ | dK | dV | dR]
  tensor::Tensor dxc_;   // backward: dX packed [B·F × D] when dx's rows are not
};

}  // namespace rectrain::nn
