// rectrain/tune/scheduler.h: decides how much budget each trial gets.
//
//   fifo    every trial runs to scheduler.max (or to the end of its training config).
//   asha    asynchronous successive halving (Li et al., "A System for Massively Parallel
//           Hyperparameter Tuning", 2020), the promotion form: rungs at budgets grace,
//           grace*eta, grace*eta^2, ... and max. A new trial runs to the first rung and pauses
//           there (checkpoint kept, its slot free at once). Whenever a slot frees, the trial to
//           run is the first promotable one from the top rung down: a paused trial in the top
//           1/eta of everything that finished its rung so far; it resumes from its checkpoint to
//           the next rung. Only when nothing is promotable does a new trial start. No rung
//           waits for a full cohort, so slots never idle while work remains.
//   median  the median stopping rule (Golovin et al., "Google Vizier", 2017): at each
//           evaluation past `grace`, a trial whose best result so far is worse than the median
//           of the other trials' running averages at the same budget (at least min_trials of
//           them) is stopped (SIGTERM: it checkpoints).
// Budgets are in the study's unit (train.max_steps or train.epochs). Every decision carries
// a sentence saying why, for the journal, the tracking store and the terminal.
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rectrain/tune/study.h"

namespace rectrain::tune {

struct Decision {
  enum class Action : uint8_t {
    kContinue,  // keep running (OnResult)
    kStop,      // stop now, final (OnResult: median)
    kPause,     // the launch ended at a rung; may be promoted later (OnBudgetDone: asha)
    kDone,      // the trial has had its full budget (OnBudgetDone)
  };
  Action action = Action::kContinue;
  std::string reason;
};

struct Promotion {
  int trial = 0;
  int rung = 0;        // the rung it goes to
  int64_t budget = 0;  // run to this budget
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The budget of a new trial's first launch; 0: the trial's own config decides.
  virtual int64_t FirstBudget() const = 0;
  // Rung budgets (asha); one entry (max) otherwise, or empty without a max.
  virtual std::vector<int64_t> Rungs() const = 0;
  // Every evaluation result of a running trial (budget = its steps or epochs so far).
  virtual Decision OnResult(int trial, int64_t budget, double value) = 0;
  // A launch ended having run `budget` (its target, or less when its training config ended it
  // first: `complete`), with `value` the metric at its end.
  virtual Decision OnBudgetDone(int trial, int64_t budget, double value, bool complete) = 0;
  // A trial that failed or was stopped leaves the competition.
  virtual void OnGone(int trial) = 0;
  // The next paused trial to resume, if any (it is marked promoted).
  virtual std::optional<Promotion> Promote() = 0;
  // Records a promotion made earlier (replaying a journal).
  virtual void MarkPromoted(int trial, int rung) = 0;
  // The rung a trial has completed (-1: none).
  virtual int RungOf(int trial) const = 0;
  // Why a trial still paused at the end of the study was not promoted.
  virtual std::string StoppedReason(int trial) const = 0;
};

std::unique_ptr<Scheduler> MakeScheduler(const StudySpec& spec);

}  // namespace rectrain::tune
