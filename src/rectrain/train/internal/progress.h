// rectrain/train/internal/progress.h (internal to train/): the training loop's progress
// accounting and the text it shows: this session's training time, rows and steps; the mean loss
// since the last log line and since the last observer report; the train AUC (or, for a
// classifier, the accuracy) of the last 131,072 predictions; train.log's step and epoch lines
// and the progress bar; the ProgressInfo handed to the observer (observer.h). It computes
// nothing the model depends on.
//
// Training-loop time excludes evaluations, checkpoints and logging: the loop calls StartClock()
// when it (re)starts timing and AddLoopTime() to add the time since. Time comes from an injected
// Clock, so tests drive it.
//
// Example (the loop of trainer.cc, per step):
//   progress.StartClock();
//   ... run the step ...
//   progress.OnStep(loss, lr, runner.probs(), batch, global_rows);
//   progress.AddLoopTime();
//   if (step % log_every == 0) log(progress.StepLine(position, compute));
//
// Thread safety: used by the training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/data/batch.h"
#include "rectrain/train/metrics.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

// Monotonic seconds from an arbitrary origin.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Now() const = 0;
};
// std::chrono::steady_clock; lives for the whole process.
const Clock& SteadyClock();

// Where the run is, for the lines and the ETA (the checkpoint's counters of the run).
struct Position {
  int64_t step = 0;             // global steps completed
  int64_t epoch = 0;            // epochs completed
  int64_t rows_in_epoch = 0;    // rows of the epoch in progress
  int64_t rows_read_total = 0;  // training rows over all sessions
};

// What the observer's ProgressInfo needs from outside the loop's accounting.
struct ReportInputs {
  Position at;
  int64_t rows_rejected = 0;
  double data_wait_seconds = 0;
  int64_t queue_depth = 0;
  std::vector<TableSummary> tables;
  std::vector<RankFigures> ranks;
};

class Progress {
 public:
  // `classes` > 1: a classifier (the window counts correct top classes). `epochs`, `max_steps`:
  // train.epochs and train.max_steps (the progress fraction). `clock` must outlive this.
  Progress(const Clock& clock, int classes, int64_t epochs, int64_t max_steps);

  void StartClock();
  void AddLoopTime();  // adds the time since StartClock() (or the last AddLoopTime) and restarts

  // After a step: its mean loss over the global batch, the dense lr, this rank's predictions
  // (one per row, or num_outputs per row for a classifier) with the batch's labels, and the
  // step's rows over the job.
  void OnStep(double loss, float lr, std::span<const float> probs, const data::Batch& batch, int64_t global_rows);
  // A step whose loss is not finite: it counts in the next report only (the observer sees it).
  void OnDivergedStep(double loss, float lr);

  // "step N | epoch E | R rows | loss L | train auc A | lr X | S samples/s | ETA T"; the loss and
  // samples/s since the previous line. An online run (`online`): "online auc A logloss L" for the
  // train AUC and "| 3.2s behind, lag 120, 4 bad" for the ETA.
  std::string StepLine(const Position& at, const ComputeContext& compute, const OnlineFigures* online = nullptr);
  // The progress bar's text: "[=====     ] 50% step N | S samples/s | loss L | auc A | ETA T".
  std::string BarText(const Position& at, const ComputeContext& compute) const;
  // True at most once a second (the bar is redrawn then).
  bool BarDue();

  // The observer: reports every `interval_s` seconds (0: only with log lines) from now on.
  void StartReports(double interval_s);
  bool ReportDue() const;
  // The ProgressInfo since the previous report; restarts the report's accumulators.
  ProgressInfo Report(ReportInputs in, bool log_line, const ComputeContext& compute);
  // The step of the last report (-1 before the first).
  int64_t reported_step() const { return step_at_report_; }

  // The per-epoch line: "epoch E done at step N (this session: data wait W s, S samples/s[, data.train in memory])".
  void StartEpoch(double data_wait_seconds);
  std::string EpochLine(int64_t finished_epoch, int64_t step, double data_wait_seconds, bool in_memory) const;

  // An estimate of the rows of an epoch, for the ETA (0: unknown); the real count once one ends.
  void set_rows_per_epoch(int64_t rows) { rows_per_epoch_ = rows; }
  // The AUC (accuracy for a classifier) of the window of recent predictions; NaN when empty.
  double TrainAuc(const ComputeContext& compute) const;

  double train_seconds() const { return session_seconds_; }
  int64_t rows() const { return session_rows_; }              // over the job
  int64_t local_rows() const { return local_session_rows_; }  // this rank's
  int64_t steps() const { return session_steps_; }
  float last_lr() const { return last_lr_; }
  // dist.mode async: the job's totals replace this rank's once the workers are done.
  void set_totals(int64_t rows, double train_seconds) {
    session_rows_ = rows;
    session_seconds_ = train_seconds;
  }

 private:
  // Share of the run done (rows of the epochs, or steps of train.max_steps) and the ETA.
  double Fraction(const Position& at) const;
  double Eta(const Position& at) const;

  const Clock& clock_;
  const int classes_;
  const int64_t epochs_;
  const int64_t max_steps_;
  int64_t rows_per_epoch_ = 0;
  double clock_mark_ = 0;
  double bar_mark_ = 0;

  std::vector<float> window_probs_, window_labels_;
  size_t window_pos_ = 0;
  bool window_full_ = false;

  double session_seconds_ = 0;
  int64_t session_rows_ = 0;
  int64_t local_session_rows_ = 0;
  int64_t session_steps_ = 0;
  double last_loss_ = kNaN;
  float last_lr_ = 0;

  double loss_sum_ = 0;  // since the last log line
  int64_t loss_count_ = 0;
  int64_t rows_at_log_ = 0;
  double seconds_at_log_ = 0;

  double report_interval_s_ = 0;
  double report_mark_ = 0;
  double report_loss_sum_ = 0;
  int64_t report_loss_count_ = 0;
  int64_t rows_at_report_ = 0;
  double seconds_at_report_ = 0;
  int64_t step_at_report_ = -1;

  double epoch_start_wait_ = 0;
  double epoch_start_seconds_ = 0;
  int64_t epoch_start_rows_ = 0;
};

}  // namespace rectrain::train::internal
