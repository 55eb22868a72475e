// rectrain/nn/sequential.h: a chain of layers (an MLP, or cross network + MLP) as one Layer.
// Owns one activation buffer and one gradient buffer per inner boundary, sized on the first
// batch and reused (they only grow). The last layer writes straight into the caller's y, and
// the first layer's input gradient straight into the caller's dx.
// Thread safety: see layer.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/nn/layer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

class Sequential final : public Layer {
 public:
  explicit Sequential(std::string name) : name_(std::move(name)) {}

  // Appends a layer. Programmer error (CHECK) if its in_features differs from the previous
  // layer's out_features.
  void Add(std::unique_ptr<Layer> layer);
  int64_t size() const { return static_cast<int64_t>(layers_.size()); }
  Layer& layer(int64_t i) { return *layers_[i]; }
  // Output of inner layer i (< size() − 1) from the last Forward.
  ConstMatrixView activation(int64_t i) const { return acts_[i].view(); }

  const std::string& name() const override { return name_; }
  std::string type() const override;
  int64_t in_features() const override;
  int64_t out_features() const override;
  Status Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) override;
  Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                  const LayerContext& ctx) override;
  std::vector<optim::ParamRef> Params() override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<tensor::Tensor> acts_;   // acts_[i] = output of layer i, i < size() − 1
  std::vector<tensor::Tensor> grads_;  // grads_[i] = dL/d acts_[i]
};

}  // namespace rectrain::nn
