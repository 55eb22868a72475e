// rectrain/optim/optimizer.h: dense optimizers (SGD, Adagrad, Adam/AdamW) that apply gradients
// to parameter tensors in place, and the learning-rate schedule.
// An Optimizer owns its state (moments), sized by Init() to the parameter list it will update.
// Thread safety: Update() runs from one thread (it parallelises internally through the
// ComputeContext); Init() needs exclusive access.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/parallel.h"
#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::optim {

struct StepContext {      // Per-call values are arguments, not fields.
  int64_t step = 0;       // 0-based global step (bias corrections use step + 1).
  float learning_rate = 0.0f;  // Already scheduled for this step.
};

// A named parameter tensor: values and gradient of equal size, both owned by the layer.
struct ParamRef {
  std::string name;         // "mlp.0.weight"; unique within a model; used by checkpoints
  std::span<float> value;
  std::span<float> grad;
  bool decay = true;        // weight decay applies (false for biases and norms)
};

enum class DenseOptimizerType : uint8_t { kSgd, kAdagrad, kAdam, kAdamW };
inline constexpr NamedEnum<DenseOptimizerType>::Entry kDenseOptimizerTypeEntries[] = {
    {DenseOptimizerType::kSgd, "sgd"},
    {DenseOptimizerType::kAdagrad, "adagrad"},
    {DenseOptimizerType::kAdam, "adam"},
    {DenseOptimizerType::kAdamW, "adamw"}};
inline constexpr NamedEnum<DenseOptimizerType> kDenseOptimizerTypes(kDenseOptimizerTypeEntries);  // optimizer.type

struct DenseOptimizerConfig {
  DenseOptimizerType type = DenseOptimizerType::kAdam;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;  // L2 for sgd/adagrad/adam, decoupled for adamw
  float initial_accumulator = 0.0f;  // adagrad
  float momentum = 0.0f;             // sgd
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Allocates state for `params` (zeroed). Returns InvalidArgument if a param is empty.
  [[nodiscard]] virtual Status Init(std::span<const ParamRef> params) = 0;
  // params[k].value -= f(params[k].grad, state). `params` must be the list given to Init.
  [[nodiscard]] virtual Status Update(const StepContext& ctx, std::span<const ParamRef> params,
                                      const ComputeContext& compute) = 0;
  // Optimizer state as flat float vectors, for checkpoints (order and sizes are stable).
  virtual std::vector<std::span<float>> State() = 0;
};

// Creates an optimizer; InvalidArgument names a setting its type cannot use (ValidateOptimizerConfig).
Result<std::unique_ptr<Optimizer>> MakeOptimizer(const DenseOptimizerConfig& config);

}  // namespace rectrain::optim
