#include "rectrain/nn/sequential.h"

#include <utility>

namespace rectrain::nn {

void Sequential::Add(std::unique_ptr<Layer> layer) {
  RECTRAIN_CHECK(layers_.empty() || layers_.back()->out_features() == layer->in_features())
      << "Sequential " << name_ << ": " << layer->name() << " takes " << layer->in_features()
      << " features, previous layer gives " << layers_.back()->out_features();
  if (!layers_.empty()) {
    acts_.emplace_back();
    grads_.emplace_back();
  }
  layers_.push_back(std::move(layer));
}

std::string Sequential::type() const {
  std::string t = "sequential(";
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (i) t += ",";
    t += layers_[i]->type();
  }
  return t + ")";
}

int64_t Sequential::in_features() const {
  return layers_.empty() ? 0 : layers_.front()->in_features();
}

int64_t Sequential::out_features() const {
  return layers_.empty() ? 0 : layers_.back()->out_features();
}

Status Sequential::Forward(ConstMatrixView x, MatrixView y, const LayerContext& ctx) {
  if (layers_.empty()) return FailedPreconditionError("Sequential " + name_ + " has no layers");
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(*this, x, y));
  ConstMatrixView in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    MatrixView out = y;
    if (i + 1 < layers_.size()) {
      acts_[i].Resize(x.rows, layers_[i]->out_features());
      out = acts_[i].view();
    }
    RECTRAIN_RETURN_IF_ERROR(layers_[i]->Forward(in, out, ctx));
    in = out;
  }
  return OkStatus();
}

Status Sequential::Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy, MatrixView dx,
                            const LayerContext& ctx) {
  if (layers_.empty()) return FailedPreconditionError("Sequential " + name_ + " has no layers");
  RECTRAIN_RETURN_IF_ERROR(CheckBackwardShapes(*this, x, y, dy, dx));
  MatrixView g = dy;
  for (size_t j = layers_.size(); j-- > 0;) {
    const ConstMatrixView in = j == 0 ? x : ConstMatrixView(acts_[j - 1].view());
    const ConstMatrixView out = j + 1 == layers_.size() ? y : ConstMatrixView(acts_[j].view());
    MatrixView g_in = dx;
    if (j > 0) {
      grads_[j - 1].Resize(x.rows, layers_[j]->in_features());
      g_in = grads_[j - 1].view();
    }
    RECTRAIN_RETURN_IF_ERROR(layers_[j]->Backward(in, out, g, g_in, ctx));
    g = g_in;
  }
  return OkStatus();
}

std::vector<optim::ParamRef> Sequential::Params() {
  std::vector<optim::ParamRef> params;
  for (auto& layer : layers_) {
    for (auto& p : layer->Params()) params.push_back(std::move(p));
  }
  return params;
}

}  // namespace rectrain::nn
