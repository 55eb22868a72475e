// rectrain/tune/tuner.h: runs a study (study.h): keeps `concurrency` trial processes busy,
// feeds their evaluation results to the scheduler (scheduler.h) and the searcher
// (searcher.h), records everything in the journal (journal.h) and the tracking store, and
// writes the best configuration when the study ends.
//
// A trial is `rectrain train BASE --run-dir STUDY_DIR/trials/tNNN --set KEY=VALUE...` (the
// study's sets, the trial's values, its threads, the budget as train.max_steps or
// train.epochs, the tracking parent/group), started through a Launcher (launcher.h). The tuner
// learns a trial's results from TRIAL_DIR/evals.jsonl (one line per evaluation, written by the
// trainer) and its end from summary.json and the exit status; it never links the trainer. A
// paused trial that is promoted is relaunched with `--resume TRIAL_DIR` and a larger budget: it
// continues from its checkpoint. A trial that fails (bad config, crash, NaN loss) is recorded
// with its reason and the study goes on.
//
// The study directory (docs/tune.md): study.yaml (the study as given), base.yaml (an inline
// base), journal.jsonl, cache.log, trials/tNNN/ (run directories; stdout.log each), best.yaml,
// leaderboard.txt. With options.resume the journal is replayed: finished trials stay finished,
// results are kept, trials that were running are ended if a process survived and resumed
// from their checkpoints.
//
// The launcher and the clock are given in TunerOptions (a test runs the study loop with trials
// that are not processes and a clock whose waits take no time: tune/tuner_test.cc).
//
// Thread safety: one study per tuner; RunStudy runs on the calling thread.
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/tune/launcher.h"
#include "rectrain/tune/study.h"

namespace rectrain::tune {

// What the tuner needs to know of a trial's training config, from the base with `sets`
// applied (the CLI loads it with config::LoadTrainConfig; tests fake it).
struct TrialConfigInfo {
  std::string resolved_yaml;  // every key with its effective value
  bool has_valid = false;     // data.valid is set
  bool classifier = false;    // model.num_classes >= 2 (accuracy) rather than a CTR model (auc)
  bool gauc = false;          // eval.gauc is on
  int64_t eval_every_steps = 0;
  int64_t epochs = 1;
  bool tracking = false;      // tracking.enabled
  std::string store_path;     // the tracking store it writes to
};
using ConfigChecker = std::function<Result<TrialConfigInfo>(const std::vector<std::string>& sets)>;

enum class TrialState : uint8_t { kPending, kRunning, kPaused, kFinished, kStopped, kFailed };
// "pending" | "running" | "paused" | "finished" | "stopped" | "failed".
const char* TrialStateName(TrialState s);

struct TrialResult {
  int id = 0;
  Assignment params;
  TrialState state = TrialState::kPending;
  std::string reason;          // why it ended (the scheduler's sentence, or the error)
  int rung = -1;               // the highest rung completed
  int64_t budget = 0;          // steps (or epochs) trained
  double value = kNaN;         // the metric at its latest result
  std::vector<double> rung_values;
  std::string dir;
  std::optional<track::RunId> run;
  int launches = 0;
  double first_start = 0, last_end = 0;  // Unix seconds
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
};

struct StudyResult {
  std::vector<TrialResult> trials;
  int best = -1;                  // index into trials, -1 if no trial has a result
  std::string best_config_path;   // STUDY_DIR/best.yaml ("" without a best)
  std::optional<track::RunId> study_run;
  double wall_seconds = 0;        // this session
  double overhead_seconds = 0;    // the tuner's own work (scheduling, journal, tracking, table)
  int64_t launches = 0;           // processes started this session
  bool interrupted = false;       // stopped by options.stop_signal; resume with --resume
  int signal = 0;
};

// The tuner's clock: monotonic seconds for its timings (wall time, overhead, the table) and its
// waits between polls. The journal's and the tracking store's times stay Unix time (UnixNow).
class StudyClock {
 public:
  virtual ~StudyClock() = default;
  virtual double Now() const = 0;
  virtual void Sleep(double seconds) const = 0;
};
// std::chrono::steady_clock and std::this_thread::sleep_for; lives for the whole process.
const StudyClock& RealStudyClock();

struct TunerOptions {
  std::string study_dir;                 // required
  bool resume = false;                   // continue the study in study_dir
  std::string rectrain_exe;              // the binary trials run (`train`) and the cache is built with
  ConfigChecker check;                   // required
  track::TrackingStore* store = nullptr; // null: no tracking
  prometheus::MetricsRegistry* registry = nullptr;  // null: no Prometheus series
  const std::atomic<int>* stop_signal = nullptr;
  std::function<void(const std::string&)> log;  // event lines (null: none)
  // Redraws the trial table in place (a terminal) through `draw` (null: no table).
  std::function<void(const std::string&)> draw;
  double table_interval_s = 1.0;
  double poll_interval_s = 0.1;
  // How trials start. Null: from the study (launcher.command's template, else a child process
  // of the tuner). Must outlive RunStudy. The sample cache is always built by a local child.
  Launcher* launcher = nullptr;
  const StudyClock* clock = nullptr;  // null: RealStudyClock()
};

// Runs (or resumes) the study. Errors before any trial: the study against the training config
// (unknown keys, a metric the config cannot report, a scheduler needing evaluations the config
// does not make), an existing study directory without resume, a missing or damaged journal
// with resume, the sample cache build failing (with its log). Trial failures are results.
Result<StudyResult> RunStudy(const StudySpec& spec, const TunerOptions& options);

// The trial table: one line per trial (best first among those that finished, then the rest),
// at most `max_rows` rows; header with counts and the best so far.
std::string TrialTable(const StudySpec& spec, const std::vector<TrialResult>& trials, size_t max_rows);

}  // namespace rectrain::tune
