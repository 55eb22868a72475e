// bench/zoo/posterior_bound.h: the AUC a learner could reach from a set of training rows if it
// knew the truth's form and its priors: an optimistic bound for every model trained on those
// rows (criteo_ceiling prints it; docs/benchmarks.md "What the data allows").
//
// In the truth (data/internal/synthetic_truth.h) every id, a token of a sparse field, has five
// parameters: its main effect, drawn from N(0, effect_sd²), and its latent vector, drawn from
// N(0, I). For each id seen in the training rows the bound estimates the five by their posterior
// mode under those priors (Newton's method), from the rows the id is in, with the rest of each
// such row's logit given exactly: the other ids' true parameters, the true dense effects and
// the bias. Only the row-noise term is unknown; it is marginalised in the likelihood with the
// probit approximation, P(y = 1) = sigmoid(logit / sqrt(1 + π·noise_sd²/8)). An id never seen
// keeps its prior mean, 0. A validation row's score is then the truth's logit with every id's
// parameters replaced by their estimates (dense effects and bias exact, no noise).
//
// Why it is optimistic: a learner has to estimate the rest of each row too, and does not know
// the model's form, which fields interact, or the priors. What it leaves out in the learner's
// favour is small: the mode instead of the posterior mean, and the posterior predictive
// (scoring by E[sigmoid] instead of the mean logit; +0.00005 AUC in a prototype on the 2M rows).
#pragma once

#include <cstdint>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/data/internal/synthetic_truth.h"

namespace rectrain::bench {

// One generated row, reduced to what the bound needs.
struct TruthRow {
  static constexpr int kSparse = 26;
  float label = 0;
  double dense_logit = 0;       // bias + the dense effects of the row
  double noise_free_logit = 0;  // the truth's logit without its row noise: bias + main + pairs + dense
  int64_t tokens[kSparse];  // -1: missing (its own id, as in the truth)
};

// The bound's score (a logit) for every row of `valid`. `truth` has 26 sparse fields.
std::vector<float> PosteriorBoundLogits(const data::internal::SyntheticTruth& truth, const std::vector<TruthRow>& train,
                                        const std::vector<TruthRow>& valid, const ComputeContext& compute);

}  // namespace rectrain::bench
