// rectrain/nn/fm.h: factorization-machine second-order interaction, fused over fields.
//
//   x [B × F·D] holds F field embeddings of D floats per row (field-major: x[i, f·D + d]).
//   forward:  y[i] = Σ_{f<g} <v_f, v_g> = 0.5 · Σ_d ((Σ_f v_{f,d})² − Σ_f v_{f,d}²)     y [B × 1]
//   backward: dx[i, f·D + d] = dy[i] · (Σ_g v_{g,d} − v_{f,d})
// O(B·F·D) with no F² pairwise loop. No parameters.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class FmInteraction final : public Layer {
 public:
  // Preconditions (CHECK): fields >= 0, dim >= 1.
  FmInteraction(std::string name, int64_t fields, int64_t dim);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return fields_ * dim_; }
  int64_t out_features() const override { return 1; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  // Like Backward, but adds into dx when `accumulate` (models sum the FM and MLP gradients of
  // the shared embeddings without an extra pass).
  [[nodiscard]] Status BackwardInto(ConstMatrixView x, ConstMatrixView dy, MatrixView dx,
                                    bool accumulate, const LayerContext& ctx);

 private:
  std::string name_;
  int64_t fields_, dim_;
  tensor::Tensor scratch_;  // [threads × dim]
  tensor::Tensor packed_;   // dy / y made contiguous when strided
};

}  // namespace rectrain::nn
