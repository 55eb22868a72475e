// rectrain/nn/layer.h: the interface of a dense layer with an explicit forward and backward.
//
// A Layer maps x [B × in_features] to y [B × out_features]. The *caller* owns x, y and their
// gradients (Sequential preallocates one activation buffer per layer and reuses it every
// step); a layer owns its parameters, their gradients and any per-batch scratch it needs
// (LayerNorm's row statistics, CrossNetwork's intermediate x_l). Views may be strided (ld >
// cols), which is how layers read column slices of a wider matrix without copying.
//
// Contract of every layer:
//   * Forward(x, y, ctx): writes every element of y. x and y must not overlap.
//   * Backward(x, y, dy, dx, ctx): x and y are exactly what the last Forward saw and wrote (the
//     caller keeps them); dy is dL/dy and MAY BE OVERWRITTEN (used as scratch, e.g. the ReLU
//     mask is applied in place); writes dL/dx into dx unless dx.data == nullptr (first layer
//     whose input needs no gradient); OVERWRITES (does not add to) its parameter gradients.
//   * Params(): stable order and names "<layer name>.<param>" (e.g. "mlp.0.weight"), unique in
//     a model; spans stay valid for the layer's lifetime.
//   * Shape mismatches return InvalidArgument naming the layer; nothing else fails.
//   * Parallelism: through ctx.compute only (ParallelFor / oneDNN's OpenMP threads). Results
//     are bit-identical for a fixed thread count (no atomics; fixed reduction orders).
//   * Randomness (dropout) comes only from ctx.seed (the per-step seed), never hidden state.
//
// Thread safety: a layer is used by one thread at a time (it parallelises inside).
//
// How to add a layer (quick start):
//   1. Declare `class MyLayer : public Layer` in nn/my_layer.h with a top comment giving the
//      equations of forward and backward; implement in nn/my_layer.cc. Use kernels::
//      ActiveKernels() / kernels::Gemm for the arithmetic; add a kernel (with a scalar reference
//      in kernels/reference and a test in kernels_test.cc) if an inner loop is hot.
//   2. Parameters: keep them in tensor::Tensor members (value + grad), initialise them
//      deterministically from a seed (nn/init.h) and return them from Params().
//   3. Add it to the registry of the generic layer tests in nn/layers_test.cc (one line: a
//      factory and input width). That runs the finite-difference gradient check of the input
//      and every parameter (testing/layer_check.h), the shape checks and the determinism check.
//      Add a forward test against a hand-written loop for a small shape.
//   4. Add it to nn/CMakeLists.txt and document it in docs/models.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/tensor/tensor.h"

namespace rectrain::nn {

using tensor::ConstMatrixView;
using tensor::MatrixView;

// Arithmetic of the matrix products in Dense layers. kBf16 rounds the GEMM inputs (activations,
// weights, output gradients) to bfloat16 and accumulates in fp32; parameters, optimizer state
// and every other op stay fp32 (mixed precision; docs/decisions/0004-bf16-gemm.md).
enum class GemmPrecision : uint8_t { kFp32, kBf16 };
inline constexpr NamedEnum<GemmPrecision>::Entry kGemmPrecisionEntries[] = {{GemmPrecision::kFp32, "fp32"},
                                                                           {GemmPrecision::kBf16, "bf16"}};
inline constexpr NamedEnum<GemmPrecision> kGemmPrecisions(kGemmPrecisionEntries);

// Per-call settings (never stored in layers).
struct LayerContext {
  ComputeContext compute;
  bool training = false;  // enables dropout
  uint64_t seed = 0;      // per-step seed (ForwardInput::seed); layers derive their own stream
  GemmPrecision precision = GemmPrecision::kFp32;  // Backward must get Forward's value
  int64_t row_offset = 0;  // global index of row 0 (ForwardInput::row_offset): dropout masks
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual const std::string& name() const = 0;  // "mlp.0"; prefix of its parameter names
  virtual std::string type() const = 0;         // "dense(in=429,out=400,act=relu)" for messages
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;

  [[nodiscard]] virtual Status Forward(ConstMatrixView x, MatrixView y,
                                       const LayerContext& ctx) = 0;
  [[nodiscard]] virtual Status Backward(ConstMatrixView x, ConstMatrixView y, MatrixView dy,
                                        MatrixView dx, const LayerContext& ctx) = 0;
  virtual std::vector<optim::ParamRef> Params() { return {}; }
};

// Shape check shared by layers: x [B × in], y [B × out], same B. Message names the layer.
Status CheckForwardShapes(const Layer& layer, ConstMatrixView x, ConstMatrixView y);
// Also checks dy like y and dx like x (dx may be null).
Status CheckBackwardShapes(const Layer& layer, ConstMatrixView x, ConstMatrixView y,
                           ConstMatrixView dy, ConstMatrixView dx);

}  // namespace rectrain::nn
