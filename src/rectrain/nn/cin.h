// rectrain/nn/cin.h: xDeepFM's compressed interaction network (Lian et al., 2018), one layer.
//
//   x [B × F·D] holds F field embeddings (field-major, as FmInteraction). Per row, X⁰ = the
//   F × D matrix of embeddings, and for k = 1..L (H₀ = F):
//     Xᵏ[h, d] = Σ_{i<H_{k−1}} Σ_{j<F} Wᵏ[h, i·F + j] · X^{k−1}[i, d] · X⁰[j, d]     Xᵏ [H_k × D]
//   output: sum pooling over d of every feature map,  y = [Σ_d X¹[·, d] | … | Σ_d Xᴸ[·, d]]
//   y [B × Σ_k H_k]. Identity activation and no bias (the paper's CIN). A Dense to the logit
//   follows in the model.
// Computed per block of rows with one GEMM per layer: with rows (b, d) and Zᵏ[(b,d), i·F+j] =
// X^{k−1}[b; i, d] · X⁰[b; j, d], Xᵏ = Zᵏ · Wᵏᵀ (M = rows·D, K = H_{k−1}·F, N = H_k).
// Backward per block, k = L..1, with Gᵏ = dL/dXᵏ (pooling spreads dy to every d, plus what
// layer k+1 sent back):  dWᵏ += Gᵏᵀ · Zᵏ,  dZᵏ = Gᵏ · Wᵏ,
//   dX^{k−1}[i, d] += Σ_j dZᵏ[(·,d), i·F+j] · X⁰[j, d],   dX⁰[j, d] += Σ_i dZᵏ[(·,d), i·F+j] · X^{k−1}[i, d].
// Keeps X¹..X^{L−1} and X⁰ (transposed) of the last Forward; Zᵏ is rebuilt per block (B·D·K
// floats would not fit). Params "<name>.<k>.weight" [H_k × H_{k−1}·F] (decay), Xavier-uniform.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class CompressedInteraction final : public Layer {
 public:
  // Preconditions (CHECK): fields >= 1, dim >= 1, every layer size >= 1, at least one layer.
  CompressedInteraction(std::string name, int64_t fields, int64_t dim, std::vector<int> layer_sizes, uint64_t seed);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return fields_ * dim_; }
  int64_t out_features() const override { return out_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

 private:
  struct CinLayer {
    int64_t in = 0, size = 0;                 // H_{k−1}, H_k
    tensor::Tensor weight, weight_grad;       // [H_k × H_{k−1}·F]
    tensor::Tensor maps;                      // Xᵏ of the last Forward, rows (b, d): [B·D × H_k]
  };
  int64_t BlockRows() const;
  // Zᵏ of rows [r0, r1): z[(b−r0)·D + d, i·F + j] = prev[(b·D + d), i] · x0[(b·D + d), j].
  void BuildZ(const CinLayer& layer, const float* prev, int64_t r0, int64_t r1, float* z,
              const ComputeContext& compute) const;

  std::string name_;
  int64_t fields_, dim_, out_ = 0;
  std::vector<CinLayer> layers_;
  tensor::Tensor x0_;          // X⁰ transposed, rows (b, d): [B·D × F]
  tensor::Tensor z_, dz_;      // one block's Zᵏ and dZᵏ
  tensor::Tensor g_, gprev_;   // one block's Gᵏ and G^{k−1} [block·D × H]
  tensor::Tensor dx0_;         // one block's dX⁰ [block·D × F]
};

}  // namespace rectrain::nn
