// rectrain/train/internal/early_stopping.h (internal to train/): train.early_stopping. After each
// evaluation of data.valid it notes whether the watched metric improved by more than min_delta
// (auc and accuracy upwards, logloss downwards) and says when `patience` evaluations in a row
// did not. Its state (the best value, its step, the evaluations since) is part of the checkpoint
// (checkpoint::CheckpointMeta), so a resumed run stops where the uninterrupted one would; every rank of a job
// computes the same metrics, so every rank decides the same.
// Thread safety: const methods; the state is the caller's.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/config/train_config.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/train/metrics.h"

namespace rectrain::train::internal {

class EarlyStopping {
 public:
  explicit EarlyStopping(config::EarlyStoppingConfig config) : config_(std::move(config)) {}

  // Takes the evaluation `m` at `step` into `state` (best_metric, best_step,
  // evals_without_improvement). Returns true when training should stop; `*why` then holds the
  // train.log line. Never stops with patience 0. A NaN metric never improves.
  bool Update(const EvalMetrics& m, int64_t step, checkpoint::CheckpointMeta* state, std::string* why) const;

 private:
  config::EarlyStoppingConfig config_;
};

}  // namespace rectrain::train::internal
