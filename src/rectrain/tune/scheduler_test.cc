#include "rectrain/tune/scheduler.h"

#include <gtest/gtest.h>

namespace rectrain::tune {
namespace {

StudySpec Asha() {
  auto s = ParseStudy("base: {a: 1}\nspace: {x: {choice: [1]}}\nscheduler: {type: asha, grace: 1, reduction: 3, max: 9}\n", "");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST(Asha, RungsAreGraceTimesPowersOfEtaUpToMax) {
  StudySpec spec = Asha();
  EXPECT_EQ(MakeScheduler(spec)->Rungs(), (std::vector<int64_t>{1, 3, 9}));
  spec.scheduler.grace = 100;
  spec.scheduler.max_budget = 1000;
  EXPECT_EQ(MakeScheduler(spec)->Rungs(), (std::vector<int64_t>{100, 300, 900, 1000}));
}

TEST(Asha, PromotesTheTopThirdAsSoonAsItExists) {
  StudySpec spec = Asha();
  auto s = MakeScheduler(spec);
  EXPECT_EQ(s->FirstBudget(), 1);
  // Two results at rung 0: floor(2/3) = 0 promotable, so a new trial should start.
  EXPECT_EQ(s->OnBudgetDone(0, 1, 0.70, false).action, Decision::Action::kPause);
  EXPECT_EQ(s->OnBudgetDone(1, 1, 0.75, false).action, Decision::Action::kPause);
  EXPECT_FALSE(s->Promote());
  // A third: the best of three (trial 1) goes to rung 1 with budget 3, once.
  EXPECT_EQ(s->OnBudgetDone(2, 1, 0.60, false).action, Decision::Action::kPause);
  auto p = s->Promote();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial, 1);
  EXPECT_EQ(p->rung, 1);
  EXPECT_EQ(p->budget, 3);
  EXPECT_FALSE(s->Promote());
  // Six results: the top two (1, then 4) are promotable; 1 already was.
  (void)s->OnBudgetDone(3, 1, 0.50, false);
  (void)s->OnBudgetDone(4, 1, 0.72, false);
  (void)s->OnBudgetDone(5, 1, 0.40, false);
  p = s->Promote();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial, 4);
  // A trial at the top rung is done.
  EXPECT_EQ(s->OnBudgetDone(1, 3, 0.78, false).action, Decision::Action::kPause);
  EXPECT_EQ(s->OnBudgetDone(4, 3, 0.74, false).action, Decision::Action::kPause);
  EXPECT_FALSE(s->Promote());  // floor(2/3) = 0 at rung 1
  const Decision top = s->OnBudgetDone(1, 9, 0.80, false);
  EXPECT_EQ(top.action, Decision::Action::kDone);
  EXPECT_NE(top.reason.find("top rung"), std::string::npos);
  EXPECT_NE(s->StoppedReason(5).find("stopped at rung 0 (1 steps): rank 6 of 6, outside the top 2"), std::string::npos)
      << s->StoppedReason(5);
}

TEST(Asha, PromotesFromTheHighestRungFirstAndSkipsGoneTrials) {
  StudySpec spec = Asha();
  auto s = MakeScheduler(spec);
  for (int t = 0; t < 9; ++t) (void)s->OnBudgetDone(t, 1, 0.5 + 0.01 * t, false);
  s->OnGone(8);  // the best failed
  auto p = s->Promote();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trial, 7);
  for (int t : {7, 6}) {
    if (t == 6) {
      p = s->Promote();
      ASSERT_TRUE(p);
      EXPECT_EQ(p->trial, 6);
    }
    (void)s->OnBudgetDone(t, 3, 0.6 + 0.01 * t, false);
  }
  (void)s->OnBudgetDone(0, 1, 0.1, false);  // more rung-0 results do not matter here
  // Rung 1 has 2 results (floor(2/3) = 0): nothing from there; rung 0's top 3 are 8 (gone), 7, 6 - all used.
  EXPECT_FALSE(s->Promote());
}

TEST(Asha, MinimisesWhenAskedAndReplaysPromotions) {
  StudySpec spec = Asha();
  spec.direction = Direction::kMinimize;
  auto s = MakeScheduler(spec);
  for (int t = 0; t < 3; ++t) (void)s->OnBudgetDone(t, 1, 0.5 + 0.1 * t, false);
  s->MarkPromoted(0, 1);  // from a journal
  EXPECT_FALSE(s->Promote());
}

TEST(Asha, ATrialWhoseConfigEndsEarlyIsDone) {
  StudySpec spec = Asha();
  auto s = MakeScheduler(spec);
  EXPECT_EQ(s->OnBudgetDone(0, 2, 0.7, /*complete=*/true).action, Decision::Action::kDone);
  EXPECT_EQ(s->RungOf(0), 0);
}

TEST(Median, StopsATrialBelowTheMedianOfRunningAverages) {
  auto spec = ParseStudy("base: {a: 1}\nspace: {x: {choice: [1]}}\nscheduler: {type: median, grace: 2, min_trials: 3}\n", "");
  ASSERT_TRUE(spec.ok());
  auto s = MakeScheduler(*spec);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(s->OnResult(t, 1, 0.6 + 0.01 * t).action, Decision::Action::kContinue);
    EXPECT_EQ(s->OnResult(t, 2, 0.7 + 0.01 * t).action, Decision::Action::kContinue);
  }
  // Trial 3 at budget 1 is before the grace period: kept however bad.
  EXPECT_EQ(s->OnResult(3, 1, 0.1).action, Decision::Action::kContinue);
  const Decision d = s->OnResult(3, 2, 0.2);
  EXPECT_EQ(d.action, Decision::Action::kStop);
  EXPECT_NE(d.reason.find("worse than the median 0.66"), std::string::npos) << d.reason;
  // A good trial continues.
  (void)s->OnResult(4, 1, 0.7);
  EXPECT_EQ(s->OnResult(4, 2, 0.8).action, Decision::Action::kContinue);
}

TEST(Fifo, RunsEveryTrialToTheMax) {
  auto spec = ParseStudy("base: {a: 1}\nspace: {x: {choice: [1]}}\nscheduler: {type: fifo, max: 50}\n", "");
  ASSERT_TRUE(spec.ok());
  auto s = MakeScheduler(*spec);
  EXPECT_EQ(s->FirstBudget(), 50);
  EXPECT_EQ(s->OnBudgetDone(0, 50, 0.7, false).action, Decision::Action::kDone);
  EXPECT_FALSE(s->Promote());
}

}  // namespace
}  // namespace rectrain::tune
