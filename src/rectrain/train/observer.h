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
  int64_t expirations = 0;  // rows removed by embedding.ttl_steps
  // The memory budget of the ranks that hold its rows (embedding.memory_budget times the owner
  // ranks; 0 = unlimited), comparable with `bytes`, and embedding.on_budget (evict | error).
  int64_t budget_bytes = 0;
  std::string on_budget;
};

struct PhaseSeconds {
  double data_wait = 0;
  double lookup = 0;
  double forward = 0;
  double backward = 0;
  double sparse_update = 0;
  double dense_update = 0;
  double exchange = 0;   // a job: the embedding store's collectives (out of lookup/sparse_update)
  double allreduce = 0;  // a job: the dense-gradient AllReduce
};

// One rank's figures of this session (a job's summary lists every rank's).
struct RankFigures {
  int rank = 0;
  int64_t rows = 0;           // training rows this rank trained on
  int64_t ids_owned = 0;      // embedding rows resident on this rank (all tables)
  int64_t ids_served = 0;     // unique ids it served as an owner
  int64_t bytes_sent = 0;     // by its communicator
  int64_t bytes_received = 0;
  // The least its steps' exchanges could have sent: unique ids and rows each way, and the dense
  // gradients' AllReduce lower bound (bytes_sent / min_bytes_sent is the overhead).
  int64_t min_bytes_sent = 0;
  int64_t allreduce_bytes_sent = 0;  // of bytes_sent, by AllReduces (the dense gradients' mostly)
  PhaseSeconds breakdown;
};

// An online run's figures (data.stream; docs/online.md), rank 0's partitions.
struct OnlineFigures {
  bool enabled = false;
  // Progressive validation: every row is scored before the step that trains on it; AUC and
  // logloss of the last `window_rows` such predictions.
  double auc = kNaN;
  double logloss = kNaN;
  int64_t window_rows = 0;
  int64_t lag_messages = -1;        // in the stream, not yet trained on; -1 = unknown
  int64_t newest_event_ms = 0;      // event time of the newest message trained on (ms since epoch)
  double event_lag_seconds = kNaN;  // now - newest_event_ms
  int64_t messages = 0;             // consumed into trained batches (good, bad, filtered)
  int64_t bad_messages = 0;
  int64_t dead_lettered = 0;
  int64_t dead_letter_failures = 0;
  int64_t source_errors = 0;        // transient broker failures retried
  int64_t reconnects = 0;
  bool connected = true;
  int64_t commits = 0;
  int64_t commit_failures = 0;
};

// train.publish (docs/online.md "Publishing to serving"): the trainer's publishes so far.
struct PublishFigures {
  bool enabled = false;
  int64_t publishes = 0;            // versions written by this session
  int64_t failures = 0;             // publishes that failed (each retried at the next interval)
  int64_t skipped = 0;              // publishes due while the last one was still being written (the
                                    // next one holds both intervals' changes)
  int64_t version = 0;              // the last version written (0: none yet)
  double last_seconds = kNaN;       // how long the last successful publish took
  double last_unix_seconds = 0;     // when it completed (0: none yet)
  int64_t newest_event_ms = 0;      // event time of the newest message trained into it (0: none)
  double every_s = 0;               // train.publish.every_s
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
  std::vector<TableSummary> tables;  // embedding table counters (summed over a job's ranks)
  std::vector<RankFigures> ranks;    // a job: every rank's figures as of the last log line
  bool log_line = false;             // true at train.log_every_steps (a log line was written)
  OnlineFigures online;              // enabled in an online run
  PublishFigures publish;            // enabled with train.publish
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
  // After the final publish of train.publish (the end of the run): the figures with it, which
  // OnProgress carried so far.
  virtual void OnFinalPublish(const PublishFigures& publish) { (void)publish; }
};

}  // namespace rectrain::train
