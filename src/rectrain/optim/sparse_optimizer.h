// rectrain/optim/sparse_optimizer.h: row-wise update rules for embedding rows. The embedding
// store keeps each row as [weights (dim) | optimizer state (StateWidth(dim))] side by side and
// calls UpdateRow for every row that received a gradient in a step (lazy/sparse semantics:
// untouched rows do not decay and their moments do not advance).
// Thread safety: UpdateRow is const and may run concurrently on distinct rows.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/result.h"
#include "rectrain/optim/optimizer.h"

namespace rectrain::optim {

enum class SparseOptimizerType : uint8_t { kSgd, kAdagrad, kAdam, kFtrl };
inline constexpr NamedEnum<SparseOptimizerType>::Entry kSparseOptimizerTypeEntries[] = {
    {SparseOptimizerType::kSgd, "sgd"},
    {SparseOptimizerType::kAdagrad, "adagrad"},
    {SparseOptimizerType::kAdam, "adam"},
    {SparseOptimizerType::kFtrl, "ftrl"}};
// embedding.optimizer.type
inline constexpr NamedEnum<SparseOptimizerType> kSparseOptimizerTypes(kSparseOptimizerTypeEntries);

struct SparseOptimizerConfig {
  SparseOptimizerType type = SparseOptimizerType::kAdagrad;
  float beta1 = 0.9f;            // adam
  float beta2 = 0.999f;          // adam
  float epsilon = 1e-8f;         // adam, adagrad
  float initial_accumulator = 0.0f;  // adagrad
  float l2 = 0.0f;               // L2 on touched rows (added to the gradient)
  float ftrl_alpha = 0.05f, ftrl_beta = 1.0f, ftrl_l1 = 0.0f, ftrl_l2 = 0.0f;  // ftrl
};

class SparseOptimizer {
 public:
  virtual ~SparseOptimizer() = default;
  // Floats of optimizer state stored after the `dim` weights of each row.
  virtual int StateWidth(int dim) const = 0;
  // Sets the state of a freshly created row (weights already initialised).
  virtual void InitState(std::span<float> weights, std::span<float> state) const = 0;
  // Applies one gradient to one row. `row_step` is the number of updates this row has seen
  // before (for Adam's bias correction of lazily updated rows).
  virtual void UpdateRow(const StepContext& ctx, int64_t row_step, std::span<float> weights,
                         std::span<float> state, std::span<const float> grad) const = 0;
  virtual std::string name() const = 0;
};

Result<std::unique_ptr<SparseOptimizer>> MakeSparseOptimizer(const SparseOptimizerConfig& config);

}  // namespace rectrain::optim
