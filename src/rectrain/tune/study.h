// rectrain/tune/study.h: a study file (docs/tune.md): the base training config, the search
// space, the metric and its direction, how many trials, the searcher, the scheduler, the
// threads per trial and in total, and how trials are launched.
//
//   name: deepfm-asha
//   base: ../examples/deepfm.yaml      # a path (relative to this file) or an inline map
//   sets: [train.epochs=1]             # overrides for every trial
//   metric: valid.auc                  # mode: max (the default for auc/gauc/accuracy)
//   num_samples: 16
//   space:
//     optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}
//     embedding.optimizer.type: {choice: [adagrad, adam]}
//     embedding.optimizer.lr: {loguniform: [1.0e-3, 1.0e-1], when: {embedding.optimizer.type: adam}}
//   searcher: {type: tpe, seed: 1}
//   scheduler: {type: asha, budget: steps, grace: 100, reduction: 3, max: 2700}
//   trial_threads: 1
//   total_threads: 2
//   launcher: {template: "srun -N1 -n1 -c{threads} {cmd}"}
//
// Parsing is strict: an unknown key (with the nearest known one), a wrong type, an empty range
// or a scheduler without the budget it needs is an InvalidArgument naming file:line:col, all
// problems at once. What needs the training config (the keys exist, the metric is reported)
// is checked by the tuner before the first trial (tuner.h).
// Thread safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/tune/space.h"

namespace rectrain::tune {

enum class Direction : uint8_t { kMaximize, kMinimize };
enum class SearcherKind : uint8_t { kRandom, kGrid, kTpe };
enum class SchedulerKind : uint8_t { kFifo, kAsha, kMedian };
enum class BudgetUnit : uint8_t { kSteps, kEpochs };

const char* SearcherKindName(SearcherKind k);    // "random" | "grid" | "tpe"
const char* SchedulerKindName(SchedulerKind k);  // "fifo" | "asha" | "median"
const char* BudgetUnitName(BudgetUnit u);        // "steps" | "epochs"

struct SearcherSpec {
  SearcherKind kind = SearcherKind::kRandom;
  uint64_t seed = 0;
  int64_t startup = 8;      // tpe: random trials before the model proposes
  int64_t candidates = 24;  // tpe: draws from l(x) scored per proposal
  double gamma = 0.25;      // tpe: share of observations in the "good" group
};

struct SchedulerSpec {
  SchedulerKind kind = SchedulerKind::kFifo;
  // The budget a trial runs for: train.max_steps (steps) or train.epochs (epochs). asha:
  // rungs grace, grace*reduction, ... up to max; fifo/median: every trial runs to max
  // (0: to the end its training config sets).
  BudgetUnit unit = BudgetUnit::kSteps;
  int64_t grace = 1;        // asha: the first rung; median: no stop before this budget
  double reduction = 3;     // asha: eta, the share 1/eta of a rung is promoted
  int64_t max_budget = 0;
  int64_t min_trials = 3;   // median: results of at least this many other trials at a budget
};

struct LauncherSpec {
  // "" runs `rectrain train` as a child process. Otherwise a shell command line with
  // placeholders {cmd} (the quoted training command), {trial} (its number), {slot}, {threads},
  // {dir} (the trial directory) and {host} (hosts[slot % hosts.size()]).
  std::string command_template;
  std::vector<std::string> hosts;
};

struct StudySpec {
  std::string name;
  std::string source;      // the study file (for messages); "" for a string
  std::string base_path;   // absolute path of the base training config; "" when inline
  std::string base_yaml;   // the inline base config (YAML text) when base is a map
  std::vector<std::string> sets;
  std::string metric;      // valid.auc | valid.logloss | valid.gauc | valid.accuracy | valid.top5_accuracy
  Direction direction = Direction::kMaximize;
  int64_t num_samples = 10;
  SearchSpace space;
  SearcherSpec searcher;
  SchedulerSpec scheduler;
  LauncherSpec launcher;
  int64_t trial_threads = 1;
  int64_t total_threads = 0;    // 0: the machine's hardware threads
  bool build_cache = true;      // build the sample cache once before the first trial
  int64_t max_failures = -1;    // stop the study after this many failed trials (-1: never)
  std::string text;             // the study file as written (recorded in the tracking store)

  // Trials at once: max(1, total_threads / trial_threads).
  int64_t concurrency() const;
  // The evaluation record field of `metric` ("auc" for valid.auc).
  std::string metric_field() const;
  // True when `a` is better than `b` under the direction (NaN is never better).
  bool Better(double a, double b) const;
};

// Parses a study; `source` is the file path (relative base paths resolve against its folder).
Result<StudySpec> ParseStudy(const std::string& text, const std::string& source);
// Reads and parses a study file (NotFound if unreadable).
Result<StudySpec> LoadStudy(const std::string& path);

}  // namespace rectrain::tune
