#include "rectrain/train/internal/early_stopping.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rectrain::train::internal {
namespace {

EvalMetrics Auc(double auc) {
  EvalMetrics m;
  m.auc = auc;
  m.logloss = 1.0 - auc;
  return m;
}

TEST(EarlyStopping, StopsAfterPatienceEvaluationsWithoutAnImprovementAboveMinDelta) {
  const EarlyStopping es({.metric = config::EarlyStoppingMetric::kAuc, .patience = 2, .min_delta = 0.01});
  checkpoint::CheckpointMeta state;
  std::string why;
  EXPECT_FALSE(es.Update(Auc(0.70), 10, &state, &why));  // the first value is the best so far
  EXPECT_EQ(state.best_step, 10);
  EXPECT_FALSE(es.Update(Auc(0.705), 20, &state, &why));  // +0.005 <= min_delta: no improvement
  EXPECT_EQ(state.evals_without_improvement, 1);
  EXPECT_FALSE(es.Update(Auc(0.72), 30, &state, &why));  // improved: the count starts again
  EXPECT_EQ(state.best_step, 30);
  EXPECT_DOUBLE_EQ(state.best_metric, 0.72);
  EXPECT_FALSE(es.Update(Auc(0.71), 40, &state, &why));
  EXPECT_TRUE(es.Update(Auc(0.72), 50, &state, &why));
  EXPECT_EQ(why, "early stopping: auc has not improved by more than 0.010000 for 2 evaluations (best 0.72000 at step 30)");
}

TEST(EarlyStopping, LoglossImprovesDownwardsAndNanNeverImproves) {
  const EarlyStopping es({.metric = config::EarlyStoppingMetric::kLogloss, .patience = 1, .min_delta = 0});
  checkpoint::CheckpointMeta state;
  std::string why;
  EXPECT_FALSE(es.Update(Auc(0.6), 1, &state, &why));  // logloss 0.4
  EXPECT_FALSE(es.Update(Auc(0.7), 2, &state, &why));  // logloss 0.3: better
  EXPECT_EQ(state.best_step, 2);
  EvalMetrics nan;
  EXPECT_TRUE(es.Update(nan, 3, &state, &why));
  EXPECT_EQ(state.best_step, 2);
}

TEST(EarlyStopping, PatienceZeroNeverStops) {
  const EarlyStopping es({.metric = config::EarlyStoppingMetric::kAuc, .patience = 0, .min_delta = 0});
  checkpoint::CheckpointMeta state;
  std::string why;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(es.Update(Auc(0.5), i, &state, &why));
  EXPECT_EQ(state.evals_without_improvement, 4);
}

}  // namespace
}  // namespace rectrain::train::internal
