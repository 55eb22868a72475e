#include "rectrain/train/internal/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rectrain::train::internal {
namespace {

class FakeClock final : public Clock {
 public:
  double Now() const override { return now; }
  double now = 1000;
};

// A batch of `rows` rows with alternating labels 1, 0, 1, ...
data::Batch Labels(int64_t rows) {
  data::Batch b;
  b.size = rows;
  for (int64_t i = 0; i < rows; ++i) b.labels.push_back(i % 2 == 0 ? 1.0f : 0.0f);
  return b;
}

// Predictions that rank every positive above every negative (AUC 1).
std::vector<float> Perfect(int64_t rows) {
  std::vector<float> p;
  for (int64_t i = 0; i < rows; ++i) p.push_back(i % 2 == 0 ? 0.9f : 0.1f);
  return p;
}

TEST(Progress, TrainingTimeCountsOnlyTheLoop) {
  FakeClock clock;
  Progress p(clock, 1, 1, 0);
  p.StartClock();
  clock.now += 2;  // a step
  p.AddLoopTime();
  clock.now += 30;  // an evaluation: not training time
  p.StartClock();
  clock.now += 1;
  p.AddLoopTime();
  EXPECT_DOUBLE_EQ(p.train_seconds(), 3.0);
}

TEST(Progress, StepLineShowsTheLossAndRateSinceThePreviousLine) {
  FakeClock clock;
  Progress p(clock, 1, 2, 0);
  p.set_rows_per_epoch(400);
  const ComputeContext compute{.num_threads = 1};
  p.StartClock();
  for (double loss : {0.5, 0.7}) {
    clock.now += 1;
    const data::Batch b = Labels(100);
    p.OnStep(loss, 0.01f, Perfect(100), b, 100);
    p.AddLoopTime();
  }
  // 200 of 800 rows (2 epochs of 400) in 2 s: a quarter done, 6 s to go.
  const std::string line = p.StepLine({.step = 2, .epoch = 0, .rows_in_epoch = 200, .rows_read_total = 200}, compute);
  EXPECT_EQ(line, "step 2 | epoch 0 | 200 rows | loss 0.6000 | train auc 1.0000 | lr 0.010000 | 100 samples/s | ETA 6s");
  clock.now += 4;  // the next line's rate covers only its own window
  p.OnStep(0.1, 0.02f, Perfect(100), Labels(100), 100);
  p.AddLoopTime();
  EXPECT_NE(p.StepLine({.step = 3, .rows_in_epoch = 300, .rows_read_total = 300}, compute).find("loss 0.1000"),
            std::string::npos);
  EXPECT_EQ(p.steps(), 3);
  EXPECT_EQ(p.rows(), 300);
  EXPECT_EQ(p.local_rows(), 300);
}

TEST(Progress, AClassifierShowsTheAccuracyOfItsRecentPredictions) {
  FakeClock clock;
  Progress p(clock, 3, 1, 0);
  data::Batch b;
  b.size = 2;
  b.labels = {2.0f, 0.0f};
  // Row 0 predicts class 2 (right), row 1 class 1 (wrong).
  p.OnStep(1.0, 0.1f, std::vector<float>{0.1f, 0.2f, 0.7f, 0.2f, 0.5f, 0.3f}, b, 2);
  EXPECT_DOUBLE_EQ(p.TrainAuc(ComputeContext{}), 0.5);
}

TEST(Progress, TheBarIsRedrawnAtMostOnceASecond) {
  FakeClock clock;
  Progress p(clock, 1, 1, 0);
  EXPECT_FALSE(p.BarDue());
  clock.now += 1.5;
  EXPECT_TRUE(p.BarDue());
  EXPECT_FALSE(p.BarDue());
  EXPECT_EQ(p.BarText({.step = 0}, ComputeContext{}).rfind("[                    ] 0% step 0 |", 0), 0u);
}

TEST(Progress, ReportsComeEveryIntervalAndCarryTheWindowSinceThePrevious) {
  FakeClock clock;
  Progress p(clock, 1, 1, 10);
  EXPECT_FALSE(p.ReportDue());  // no interval: only with log lines
  p.StartReports(5);
  p.StartClock();
  clock.now += 2;
  p.OnStep(0.4, 0.5f, Perfect(10), Labels(10), 10);
  p.AddLoopTime();
  EXPECT_FALSE(p.ReportDue());
  clock.now += 3;
  EXPECT_TRUE(p.ReportDue());
  ReportInputs in;
  in.at = {.step = 1, .rows_read_total = 10};
  in.rows_rejected = 3;
  const ProgressInfo r = p.Report(in, /*log_line=*/false, ComputeContext{});
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.rows_rejected, 3);
  EXPECT_DOUBLE_EQ(r.loss, 0.4);
  EXPECT_DOUBLE_EQ(r.samples_per_sec, 5.0);  // 10 rows in 2 s of training
  EXPECT_FLOAT_EQ(static_cast<float>(r.learning_rate), 0.5f);
  EXPECT_FALSE(p.ReportDue());
  EXPECT_EQ(p.reported_step(), 1);
  // A diverged step counts in the next report only.
  p.OnDivergedStep(NAN, 0.5f);
  EXPECT_TRUE(std::isnan(p.Report(in, false, ComputeContext{}).loss));
}

TEST(Progress, EpochLineSaysTheEpochsRateAndDataWait) {
  FakeClock clock;
  Progress p(clock, 1, 1, 0);
  p.StartEpoch(/*data_wait_seconds=*/1.0);
  p.StartClock();
  clock.now += 4;
  p.OnStep(0.3, 0.1f, Perfect(2000), Labels(2000), 2000);
  p.AddLoopTime();
  EXPECT_EQ(p.EpochLine(0, 1, 1.5, true),
            "epoch 0 done at step 1 (this session: data wait 0.50s, 500 samples/s, data.train in memory)");
}

}  // namespace
}  // namespace rectrain::train::internal
