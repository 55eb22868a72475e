// rectrain/train/trainer.h: the training loop and offline evaluation of a run directory.
//
// Train() owns everything a run needs: the compute pool (a ComputeContext with `threads`, passed
// to every kernel; TrainerOptions::size_compute_pool sizes OpenMP's pool, which oneDNN's GEMMs
// follow, once), one embedding table
// per ModelSpec table served by an embedding store (ps/), the model and the dense optimizer.
// One step (train/internal/step_runner.h):
//   reader batch (prefetched on the reader's threads, overlapping compute)
//   -> store.Lookup: dedupe ids per table, fetch the rows          ("lookup")
//   -> Model::Forward + SigmoidCrossEntropy                        ("forward")
//   -> Model::Backward                                             ("backward")
//   -> store.Push: the sparse optimizer with the sparse lr         ("sparse_update")
//   -> Optimizer::Update with ScheduledLr(optimizer.*, step)       ("dense_update")
// Each phase is timed; summary.json reports the breakdown. The validation set is evaluated
// every train.eval_every_steps and at each epoch end (Pull kEval, no dropout, file order);
// early stopping watches train.early_stopping.metric.
//
// A job of several ranks (options.comm; docs/scaling.md): every rank calls Train() with the same
// config. data.batch_size is the global batch; each rank trains on its share (dist.data_split:
// its units of the pass, or its slice of every batch), its tables hold the rows it owns, the
// embedding exchange and a dense-gradient AllReduce ("exchange", "allreduce") join the step, and
// rank 0 alone writes train.log, summary.json and reports to the observer. Every decision (end
// of an epoch, stop, early stop, divergence) is taken by every rank together.
//
// Run directory (created if missing): config.yaml (resolved), train.log, checkpoints/step-<N>/,
// model/ (final, checkpoint layout), summary.json (docs/formats/summary.md).
//
// Online (data.stream, docs/online.md): the pass is one endless stream (train/internal/online.h);
// each checkpoint holds the stream position with the model and is committed to the broker once it
// has landed; the run ends at train.max_rows, --until or a signal.
//
// Resume (options.resume): restores the newest checkpoint under run_dir/checkpoints and
// continues (reader skip_rows, the same shuffle order, dropout seeds DeriveSeed(seed, step)),
// so with deterministic: true and the same thread count the final model equals an
// uninterrupted run's, bit for bit.
//
// Stopping: when *options.stop_signal becomes non-zero (a SIGINT/SIGTERM handler sets it to
// the signal number), the current step finishes, a checkpoint is written, and Train() returns
// a summary with status "interrupted" and interrupted_by = the signal.
//
// Thread safety: one Train()/EvaluateRun() per thread at a time (size_compute_pool configures
// the calling thread's OpenMP pool); both run on the calling thread plus the reader's and the
// pool's threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/train/metrics.h"
#include "rectrain/train/observer.h"

namespace rectrain::train {

struct TrainerOptions {
  std::string run_dir;                            // required
  bool resume = false;                            // continue from the newest checkpoint
  const std::atomic<int>* stop_signal = nullptr;  // non-zero: stop after the current step
  int progress = -1;   // -1: a progress bar when stderr is a TTY; 0: log lines; 1: bar
  bool echo = true;    // print log lines / the bar to stderr (train.log gets them regardless)
  TrainObserver* observer = nullptr;  // progress hooks (observer.h); must outlive Train()
  // The job this process is a rank of (dist::Connect()); null: a single process. Must outlive
  // Train(). Only rank 0 logs and writes summary.json; the observer is called on rank 0 only.
  dist::Communicator* comm = nullptr;
  // Sizes the process's compute pool to the run's `threads`, once, before the first step: the
  // pool is OpenMP's, process-wide, and oneDNN's GEMMs follow it (docs/decisions/0002). The CLI
  // passes SetComputePoolThreads (base/parallel.h); null leaves the pool as the caller set it
  // (every kernel of ours gets its thread count from the ComputeContext anyway).
  std::function<void(int threads)> size_compute_pool;
  // --until: the run ends (completed, with a checkpoint and the final model) at the first step
  // after this time; {} = no end time. An online run (data.stream) never ends by itself
  // otherwise: only this, train.max_rows or a signal end it.
  std::chrono::system_clock::time_point until{};
};

// How a run ended.
enum class RunOutcome : uint8_t { kCompleted, kEarlyStopped, kInterrupted, kFailed };
// "completed" | "early_stopped" | "interrupted" | "failed" (summary.json's status).
const char* RunOutcomeName(RunOutcome outcome);

struct OracleMetrics {
  double auc = kNaN;
  double logloss = kNaN;
};

struct TrainSummary {
  RunOutcome status = RunOutcome::kCompleted;
  int interrupted_by = 0;   // signal number when interrupted
  std::string error;        // when failed
  int64_t steps = 0;        // global steps completed (including earlier sessions)
  int64_t session_steps = 0;
  int64_t rows_read = 0;    // training rows over all sessions
  int64_t rows_rejected = 0;
  int64_t epochs = 0;       // epochs completed
  double seconds = 0;       // training-loop time of this session (excludes eval/checkpoints)
  double samples_per_sec = 0;  // this session's rows / seconds
  PhaseSeconds breakdown;
  bool has_valid = false;
  EvalMetrics valid;
  bool has_oracle = false;
  OracleMetrics oracle;
  std::vector<TableSummary> tables;
  double wall_seconds = 0;
  int64_t peak_rss_bytes = 0;
  std::string last_checkpoint;
  std::string model_dir;
  // This process's traffic with object stores (data, checkpoints), retries by reason.
  io::RemoteIoStats object_store;
  // A job: its size, transport and data split, and every rank's figures (rank order).
  int world = 1;
  std::string transport = "single";
  std::string data_split;
  std::vector<RankFigures> ranks;
  // An online run (data.stream): the last figures (progressive validation, stream counters).
  OnlineFigures online;
  // train.publish: the publishes of this session, the final one included.
  PublishFigures publish;
};

// Runs (or resumes) training as configured. Config/data/model errors come back as a Status;
// once the run directory exists, a failure also writes summary.json with status "failed".
Result<TrainSummary> Train(const config::LoadedConfig& config, const TrainerOptions& options);

// summary.json text for `s` (stable field names, docs/formats/summary.md).
std::string SummaryJson(const TrainSummary& s);

struct EvalOptions {
  std::string run_dir;              // loads run_dir/config.yaml and run_dir/model/
  std::vector<std::string> files;   // data to evaluate (paths/globs); same schema as training
  std::string group_key;            // overrides data.group_key; enables GAUC when non-empty
  int threads = 0;                  // 0: the run's `threads`
  std::function<void(int threads)> size_compute_pool;  // as TrainerOptions' (null: left as set)
};

struct EvalReport {
  EvalMetrics metrics;
  bool gauc_requested = false;
  bool has_oracle = false;
  OracleMetrics oracle;
  std::string oracle_note;          // why the oracle is missing, when a .prob file was unusable
  std::string data_source;          // "sample cache PATH (...)" when a sample cache was read, else ""
  double seconds = 0;
  std::vector<float> probs;         // CTR models: each row's probability (of the label's task), file order
};

// Evaluates the final model of a run directory on `files`.
Result<EvalReport> EvaluateRun(const EvalOptions& options);

// Oracle metrics from FILE.prob side files (data::ReadProbabilities) against `labels`: requires
// a .prob for every expanded file and a total count equal to labels.size(). Returns false with
// `note` set (or empty when no file has a .prob) when unavailable.
bool OracleFromProbFiles(const std::vector<std::string>& patterns, const std::vector<float>& labels,
                         const ComputeContext& compute, OracleMetrics* out, std::string* note);

}  // namespace rectrain::train
