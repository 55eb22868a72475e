// rectrain/nn/interaction.h: DLRM's pairwise dot-product interaction, as one layer.
//
//   x [B × n·D] holds n vectors of D floats per row (vector-major: v_i = x[r, i·D .. i·D+D)).
//   forward:  y[r] = [ v_0 (when keep_first) | <v_i, v_j> for i < j in order (0,1), (0,2), …,
//             (0,n−1), (1,2), … ]                         y [B × (keep_first·D + n(n−1)/2)]
//   backward: dx_i = (keep_first and i = 0 ? dy[0..D) : 0) + Σ_{j≠i} g_ij · v_j,
//             g_ij = g_ji = dL/d<v_i, v_j>
// DLRM (Naumov et al., 2019) puts the bottom MLP's output of the dense features at v_0 and the
// F field embeddings after it; keep_first passes v_0 on to the top MLP, as the reference does.
// O(B·n²·D); no parameters.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/nn/layer.h"

namespace rectrain::nn {

class DotInteraction final : public Layer {
 public:
  // Preconditions (CHECK): vectors >= 1, dim >= 1.
  DotInteraction(std::string name, int64_t vectors, int64_t dim, bool keep_first);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return vectors_ * dim_; }
  int64_t out_features() const override { return (keep_first_ ? dim_ : 0) + vectors_ * (vectors_ - 1) / 2; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;

 private:
  std::string name_;
  int64_t vectors_, dim_;
  bool keep_first_;
};

}  // namespace rectrain::nn
