// rectrain/nn/activation.h: parameter-free elementwise layers.
//
// Relu:    y = max(x, 0);  dx = dy ⊙ [y > 0].  (Dense fuses ReLU; this standalone layer is
//          for blocks with LayerNorm between the Dense and the activation.)
// Dropout: inverted dropout with rate p in training: y = x ⊙ m / (1 − p), m ~ Bernoulli(1 − p);
//          identity when not training. dx = dy ⊙ m / (1 − p).
//          The mask is a pure function of (ctx.seed, layer name, element index): element
//          (r, c) is kept iff Mix64(stream + r·cols + c) ≥ p·2⁶⁴ with stream =
//          DeriveSeed(ctx.seed, HashBytes(name)). Backward recomputes it from the seed of the
//          last Forward, so no mask is stored, the draws do not depend on the thread count, and
//          a resumed run (same per-step seed) draws the same masks.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/nn/layer.h"

namespace rectrain::nn {

class Relu final : public Layer {
 public:
  Relu(std::string name, int64_t features) : name_(std::move(name)), features_(features) {}
  const std::string& name() const override { return name_; }
  std::string type() const override { return "relu(n=" + std::to_string(features_) + ")"; }
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;

 private:
  std::string name_;
  int64_t features_;
};

class Dropout final : public Layer {
 public:
  // Precondition (CHECK): 0 <= rate < 1 (MakeModel validates model.dropout first).
  Dropout(std::string name, int64_t features, float rate);
  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;

 private:
  // y = x ⊙ mask·scale (or copy when not training), for rows [r0, r1).
  void Apply(ConstMatrixView in, MatrixView out, int64_t r0, int64_t r1) const;

  std::string name_;
  int64_t features_;
  float rate_;
  uint64_t threshold_;     // keep iff hash >= threshold_
  float scale_;            // 1 / (1 - rate)
  uint64_t stream_ = 0;    // of the last Forward
  int64_t row_offset_ = 0; // of the last Forward (LayerContext::row_offset)
  bool last_training_ = false;
};

}  // namespace rectrain::nn
