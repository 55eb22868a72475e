// rectrain/train/session.h: one `rectrain train` run with everything around the training loop —
// the run directory, the tracking store and the recorder, the /metrics endpoint, the data check
// before the first step — so the CLI (and a tuner launching trials) only parses flags and prints.
//
// In a job of several ranks every rank calls RunTrainingSession with its communicator: rank 0
// alone records, serves /metrics and checks the data (the others learn its verdict), the run
// directory is rank 0's choice, and every rank returns the same outcome.
//
// Example:
//   SessionOptions o;
//   o.config_path = "examples/deepfm.yaml";
//   o.comm = comm.get();
//   RECTRAIN_ASSIGN_OR_RETURN(SessionResult r, RunTrainingSession(o));
//   std::printf("%s: %s\n", r.run_dir.c_str(), RunOutcomeName(r.summary.status));
//
// Thread safety: one session per process at a time (it configures the OpenMP pool).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/train/trainer.h"

namespace rectrain::train {

struct SessionOptions {
  std::string config_path;            // with resume: defaults to RUN_DIR/config.yaml
  std::vector<std::string> sets;      // --set KEY=VALUE overrides, in order
  std::string run_dir;                // "" = runs/<config name>-<time> (rank 0's clock)
  bool resume = false;                // continue run_dir from its newest checkpoint
  std::vector<std::string> tags;      // added to tracking.tags
  bool skip_data_check = false;       // checks.before_train off for this run
  int progress = -1;                  // TrainerOptions::progress
  bool echo = true;                   // train.log lines and notes on stderr (rank 0)
  const std::atomic<int>* stop_signal = nullptr;
  dist::Communicator* comm = nullptr; // the job; null: a single process
  // Another observer of the run besides the tracking recorder (rank 0; must outlive the call).
  // Its ProgressIntervalSeconds and the recorder's: reports come at the shorter of them.
  TrainObserver* observer = nullptr;
  // TrainerOptions::size_compute_pool (the CLI passes SetComputePoolThreads).
  std::function<void(int threads)> size_compute_pool;
  // Read from the process environment by the CLI, never here: $RECTRAIN_METRICS_TOKEN (the
  // bearer token /metrics requires off loopback) and $RECTRAIN_TRACKING_STORE (track::kStoreEnv,
  // the tracking store when the config names none). Empty: unset.
  std::string metrics_token;
  std::string tracking_store_env;
  std::chrono::system_clock::time_point until{};  // TrainerOptions::until
  // Lines for the terminal besides the log (tracking run id, /metrics URL, data check verdict);
  // called on rank 0 only when echo. May be empty.
  std::function<void(const std::string&)> note;
};

struct SessionResult {
  std::string run_dir;
  TrainSummary summary;
};

// Runs the session. Errors: bad flags/config (InvalidArgument), an existing run without --resume
// (AlreadyExists), the tracking store or the metrics port (with the config key that disables
// it), a failed data check (FailedPrecondition, the full report), and Train()'s errors — the run
// is then marked failed in the tracking store. `*run_dir_out` (may be null) gets the run
// directory once training starts (so an error after that has a train.log to point at).
Result<SessionResult> RunTrainingSession(const SessionOptions& options, std::string* run_dir_out = nullptr);

}  // namespace rectrain::train
