// rectrain/tune/searcher.h: proposes the values of the next trial from the trials so far.
//
//   random  every parameter sampled independently (space.h); reproducible per (seed, trial)
//   grid    every combination of the listed values in turn (cycles when num_samples is larger)
//   tpe     Tree-structured Parzen Estimator (Bergstra et al. 2011): after `startup` random
//           trials, the results at the highest rung that has enough of them are split into the
//           best `gamma` share and the rest; each parameter gets a Parzen density l(x) of the
//           good and g(x) of the rest (truncated Gaussians on the unit interval, or smoothed
//           counts for listed values, with a uniform prior), `candidates` draws from l are
//           scored by l/g and the best is taken. Trials still running count in the "rest" at
//           their values (the constant liar), so concurrent proposals spread out.
// Conditional parameters take part only in the trials where they were active.
// Thread safety: one thread; Next() is deterministic given (seed, the observations).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "rectrain/tune/space.h"
#include "rectrain/tune/study.h"

namespace rectrain::tune {

// What a searcher sees of a trial.
struct Observation {
  Assignment params;
  // The metric at each rung the trial completed (rung 0 first); a scheduler without rungs
  // reports one value: the trial's latest. Empty while no result is in.
  std::vector<double> rung_values;
  bool pending = false;  // still running or waiting for a slot
  bool failed = false;   // crashed, diverged or had a bad config: no information
};

class Searcher {
 public:
  virtual ~Searcher() = default;
  // The values of trial number trials.size() (trials: every trial so far, in creation order);
  // nullopt when there is nothing left to propose.
  virtual std::optional<Assignment> Next(std::span<const Observation> trials) = 0;
};

std::unique_ptr<Searcher> MakeSearcher(const StudySpec& spec);

}  // namespace rectrain::tune
