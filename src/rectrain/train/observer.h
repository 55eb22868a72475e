// rectrain/train/observer.h: hooks through which Train() reports progress to whoever records or
// exports it (the tracking store and Prometheus, see run_recorder.h) without the trainer
// depending on them. Every hook has an empty default; a hook must not fail the run (it returns
// nothing: an observer that cannot record logs a warning itself and carries on).
//
// Thread safety: every hook is called on the thread that runs Train(), in step order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/train/metrics.h"

namespace rectrain::train {

// One embedding table's counters (embedding::TableStats plus its name and dim).
struct TableSummary {
  std::string name;
  int dim = 0;
  int64_t rows = 0;
  int64_t bytes = 0;
  int64_t admissions = 0;
  int64_t evictions = 0;
  int64_t lookups = 0;
  int64_t oov_lookups = 0;
};

// A snapshot of the training loop, taken after a step.
struct ProgressInfo {
  int64_t step = 0;                  // global steps completed
  int64_t epoch = 0;                 // epochs completed
  int64_t rows_read = 0;             // training rows over all sessions
  int64_t rows_rejected = 0;         // rejected rows over all sessions (so far)
  double loss = kNaN;                // mean training loss since the previous ProgressInfo
  double train_auc = kNaN;           // AUC of the last ~131k training predictions
  double samples_per_sec = 0;        // rows/s of the training loop since the previous one
  double learning_rate = 0;          // the dense optimizer's scheduled lr of the last step
  double data_wait_seconds = 0;      // this session's time blocked on the reader, cumulative
  int64_t queue_depth = 0;           // batches ready in the reader's prefetch queue now
  double train_seconds = 0;          // this session's training-loop time, cumulative
  std::vector<TableSummary> tables;  // embedding table counters
  bool log_line = false;             // true at train.log_every_steps (a log line was written)
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // Once, after setup (model built, checkpoint restored), before the first step. `step` is the
  // starting global step (non-zero when resuming).
  virtual void OnStart(int64_t step) { (void)step; }
  // Besides every log line, OnProgress is called whenever this many seconds of training have
  // passed since the previous call (0 = only at log lines). Read once, at the start.
  virtual double ProgressIntervalSeconds() const { return 0; }
  virtual void OnProgress(const ProgressInfo& progress) { (void)progress; }
  // After each evaluation of data.valid (periodic, end of epoch, final).
  virtual void OnEval(int64_t step, const EvalMetrics& metrics) {
    (void)step;
    (void)metrics;
  }
  // After a checkpoint was written to `dir`.
  virtual void OnCheckpoint(int64_t step, const std::string& dir) {
    (void)step;
    (void)dir;
  }
};

}  // namespace rectrain::train
