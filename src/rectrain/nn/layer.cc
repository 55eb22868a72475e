#include "rectrain/nn/layer.h"

#include <string>

namespace rectrain::nn {
namespace {
std::string Shape(ConstMatrixView m) {
  // Built with += : GCC 12 emits a false -Wrestrict for `"[" + std::to_string(...)`.
  std::string s = "[";
  s += std::to_string(m.rows);
  s += " x ";
  s += std::to_string(m.cols);
  s += "]";
  return s;
}
}  // namespace

Status CheckForwardShapes(const Layer& layer, ConstMatrixView x, ConstMatrixView y) {
  if (x.cols != layer.in_features() || y.cols != layer.out_features() || x.rows != y.rows) {
    return InvalidArgumentError("layer " + layer.name() + " (" + layer.type() + "): input " +
                                Shape(x) + " and output " + Shape(y) + " do not match [B x " +
                                std::to_string(layer.in_features()) + "] -> [B x " +
                                std::to_string(layer.out_features()) + "]");
  }
  return OkStatus();
}

Status CheckBackwardShapes(const Layer& layer, ConstMatrixView x, ConstMatrixView y,
                           ConstMatrixView dy, ConstMatrixView dx) {
  RECTRAIN_RETURN_IF_ERROR(CheckForwardShapes(layer, x, y));
  if (dy.rows != y.rows || dy.cols != y.cols) {
    return InvalidArgumentError("layer " + layer.name() + ": output gradient " + Shape(dy) +
                                " does not match output " + Shape(y));
  }
  if (dx.data != nullptr && (dx.rows != x.rows || dx.cols != x.cols)) {
    return InvalidArgumentError("layer " + layer.name() + ": input gradient " + Shape(dx) +
                                " does not match input " + Shape(x));
  }
  return OkStatus();
}

}  // namespace rectrain::nn
