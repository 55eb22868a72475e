#include "rectrain/train/internal/early_stopping.h"

#include <cmath>

#include "rectrain/train/internal/run_log.h"

namespace rectrain::train::internal {
using checkpoint::CheckpointMeta;

bool EarlyStopping::Update(const EvalMetrics& m, int64_t step, CheckpointMeta* state, std::string* why) const {
  using Metric = config::EarlyStoppingMetric;
  const bool higher_better = config_.metric != Metric::kLogloss;
  const double v = config_.metric == Metric::kAuc ? m.auc : config_.metric == Metric::kAccuracy ? m.accuracy : m.logloss;
  const bool improved = std::isnan(state->best_metric) || (higher_better ? v > state->best_metric + config_.min_delta
                                                                         : v < state->best_metric - config_.min_delta);
  if (improved && !std::isnan(v)) {
    state->best_metric = v;
    state->best_step = step;
    state->evals_without_improvement = 0;
  } else {
    ++state->evals_without_improvement;
  }
  if (config_.patience <= 0 || state->evals_without_improvement < config_.patience) return false;
  *why = std::string("early stopping: ") + config::kEarlyStoppingMetrics.Name(config_.metric) + " has not improved by more than " + Fixed(config_.min_delta, 6) + " for " +
         std::to_string(config_.patience) + " evaluations (best " + Fixed(state->best_metric, 5) + " at step " +
         std::to_string(state->best_step) + ")";
  return true;
}

}  // namespace rectrain::train::internal
