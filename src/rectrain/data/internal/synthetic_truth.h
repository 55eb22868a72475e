// rectrain/data/internal/synthetic_truth.h (internal to data/; exposed for tests): the hidden
// model behind GenerateDataset. It depends only on the shape name, never on the sampling seed,
// so files generated with different seeds share one truth.
//
// logit(row) = bias
//            + Σ_f  main_f(token_f)                         per-id effects, hash-derived
//            + Σ_(f,g)∈pairs  λ_fg · <v_f(token_f), v_g(token_g)> / √K   low-rank interactions
//            + Σ_j  a_j · tanh((log1p(x_j) − μ_j) / σ_j)     dense effects (missing: own effect;
//                                                             easy: missing acts as x_j = 0)
//            + noise_sd · z(hash of the whole row)           row-level term no model can learn
// Every effect is f(Mix64(...)) of (field, token): no tables, so 20M-id shapes cost nothing.
// P(click | row) = sigmoid(logit); it is exactly what FILE.prob holds (the Bayes-optimal score).
// A missing token or dense value is encoded as -1.
// Thread safety: immutable after ForShape; all methods are const and reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/base/result.h"

namespace rectrain::data::internal {

class SyntheticTruth {
 public:
  struct Field {
    int64_t cardinality = 0;
    double zipf_s = 1.0;
    double missing_rate = 0.0;
    double effect_sd = 0.0;
    // Zipf sampler constants (continuous inverse CDF over ranks 1..cardinality).
    double zipf_a = 0.0;
    double zipf_inv = 0.0;
  };
  struct Dense {
    double missing_rate = 0.0;
    double log_mu = 0.0;  // value = floor(exp(log_mu + log_sd · z))
    double log_sd = 1.0;
    double effect = 0.0;  // a_j
    double missing_effect = 0.0;
  };
  struct Pair {
    int a = 0;
    int b = 0;
    double weight = 0.0;
  };
  static constexpr int kLatentDim = 4;

  // criteo | seed | easy. InvalidArgument otherwise.
  static Result<SyntheticTruth> ForShape(std::string_view shape);

  int num_dense() const { return static_cast<int>(dense_.size()); }
  int num_sparse() const { return static_cast<int>(fields_.size()); }
  const std::vector<Field>& fields() const { return fields_; }
  double bias() const { return bias_; }
  // The interacting field pairs (0-based sparse field indices) and their weights.
  const std::vector<Pair>& pairs() const { return pairs_; }

  // Draws one row's features: dense[j] >= 0 or -1 (missing); tokens[f] in [0, 2^32) or -1.
  void SampleRow(Rng& rng, int64_t* dense, int64_t* tokens) const;
  // The token (a 32-bit value, printed as 8 hex digits) of popularity rank `rank` of field f.
  uint32_t TokenOf(int field, uint64_t rank) const;

  double Logit(const int64_t* dense, const int64_t* tokens) const;

  // The truth's own parameters of one token (-1: missing) of sparse field f, as the logit uses
  // them: its main effect, and its latent vector (kLatentDim values; the same vector in every
  // pair the field is in). The pair term is weight · <v_a, v_b> / √kLatentDim. Each is a draw
  // from N(0, effect_sd²) and N(0, I) (approximately: a sum of four uniforms).
  double MainEffect(int field, int64_t token) const;
  void LatentVector(int field, int64_t token, double* out) const;
  // The standard deviation of the row-noise term (0 for the easy shape).
  double noise_sd() const { return noise_sd_; }

  // The logit's terms, for asking what a model could reach with less than the whole truth
  // (bench/zoo/criteo_ceiling.cc). Logit = bias() + total; total is main + pairs + dense + noise
  // summed in the generator's order (so it keeps the bits of every .prob file).
  // With `known` (one flag per sparse field), a field whose flag is false contributes neither
  // its main effect nor the pairs it is in (as a model that never saw its token would).
  // With `pair_terms` (pairs().size() doubles), each pair's own term is written there, in
  // pairs() order (0 for a pair left out by `known`); `pairs` is their sum in that order.
  struct LogitTerms {
    double main = 0.0;
    double pairs = 0.0;
    double dense = 0.0;
    double noise = 0.0;
    double total = 0.0;
  };
  LogitTerms Terms(const int64_t* dense, const int64_t* tokens, const bool* known = nullptr,
                   double* pair_terms = nullptr) const;
  double Probability(const int64_t* dense, const int64_t* tokens) const;

 private:
  double LogitWithoutBias(const int64_t* dense, const int64_t* tokens) const;
  void CalibrateBias(double target_rate);

  std::string shape_;
  std::vector<Field> fields_;
  std::vector<Dense> dense_;
  std::vector<Pair> pairs_;
  double noise_sd_ = 0.0;
  bool missing_dense_as_zero_ = false;  // easy: a missing dense value acts as 0 (reader fill)
  double bias_ = 0.0;
};

}  // namespace rectrain::data::internal
