#include "rectrain/data/internal/synthetic_truth.h"

#include <algorithm>
#include <cmath>

namespace rectrain::data::internal {
namespace {

constexpr uint64_t kTruthSeed = 0x7275746872656374ULL;  // fixed: the truth never depends on `seed`

// Real Criteo (Kaggle display-ads) cardinalities and missing rates of C1..C26.
constexpr int64_t kCriteoCard[26] = {1460,    583,   10131227, 2202608, 305,    24,     12517,
                                     633,     3,     93145,    5683,    8351593, 3194,  27,
                                     14992,   5461306, 10,     5652,    2173,   4,      7046547,
                                     18,      15,    286181,   105,     142572};
constexpr double kCriteoCatMissing[26] = {0,     0, 0.034, 0.034, 0,    0.121, 0, 0,    0,
                                          0,     0, 0.034, 0,     0,    0,     0.034, 0, 0,
                                          0.44,  0.44, 0.034, 0.76, 0, 0.034, 0.44, 0.44};
// I1..I13: missing rate, log-normal mu and sigma (floor(exp(mu + sigma z)) is the value).
constexpr double kCriteoDense[13][3] = {
    {0.45, 0.5, 1.2}, {0.0, 2.0, 1.8},  {0.21, 1.5, 1.5}, {0.22, 1.5, 1.0}, {0.026, 7.5, 2.0},
    {0.22, 3.5, 1.8}, {0.04, 1.5, 1.5}, {0.0005, 2.3, 1.0}, {0.04, 3.5, 1.4}, {0.45, 0.2, 0.7},
    {0.04, 0.8, 1.0}, {0.77, 0.3, 1.0}, {0.22, 1.5, 1.1}};
// Interacting field pairs (0-based C indices).
constexpr int kPairs[][2] = {{0, 1},  {0, 5},   {1, 7},   {2, 9},   {4, 13},  {6, 10}, {8, 19},
                             {11, 15}, {12, 17}, {14, 23}, {16, 25}, {18, 24}, {3, 21}, {20, 22}};

uint64_t H(uint64_t kind, uint64_t index, uint64_t key) {
  return Mix64(Mix64(kTruthSeed ^ (kind << 56) ^ (index << 32)) ^ key);
}

// Approximately standard normal from a hash: four 16-bit uniforms (Irwin-Hall, variance 1/3).
double Gauss(uint64_t h) {
  double s = 0;
  for (int i = 0; i < 4; ++i) s += static_cast<double>((h >> (16 * i)) & 0xffff) * (1.0 / 65536.0);
  return (s - 2.0) * 1.7320508075688772;
}
double Uniform01(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// Key of a token: tokens are < 2^32, missing (-1) maps to 2^32.
uint64_t TokenKey(int64_t token) { return token < 0 ? (uint64_t{1} << 32) : static_cast<uint64_t>(token); }

uint32_t LowBias32(uint32_t x) {  // a bijection on 32 bits
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

}  // namespace

Result<SyntheticTruth> SyntheticTruth::ForShape(std::string_view shape) {
  SyntheticTruth t;
  t.shape_ = std::string(shape);
  double main_scale, pair_scale, dense_scale, target_rate;
  int num_dense;
  double card_scale = 1.0;
  int64_t card_cap = 0;
  if (shape == "criteo") {
    num_dense = 13;
    main_scale = 0.17;
    pair_scale = 0.18;
    dense_scale = 0.30;
    t.noise_sd_ = 0.45;
    target_rate = 0.25;
  } else if (shape == "seed") {
    num_dense = 50;
    card_scale = 0.6;  // Σ cardinalities ≈ 20.3M
    main_scale = 0.17;
    pair_scale = 0.18;
    dense_scale = 0.15;
    t.noise_sd_ = 0.45;
    target_rate = 0.25;
  } else if (shape == "easy") {
    num_dense = 13;
    // 100 ids per field at most: 500k rows give every id thousands of rows (with 1000, a 16-dim
    // DeepFM memorised its training rows: train-file AUC 0.878 > oracle 0.870, valid 0.783).
    card_cap = 100;
    // A missing dense value has the effect of a 0, as the reader's default fill makes it look
    // to a model (a separate missing effect cost 0.014 AUC that no model could reach).
    t.missing_dense_as_zero_ = true;
    main_scale = 0.30;
    pair_scale = 0.06;
    dense_scale = 0.35;
    t.noise_sd_ = 0.0;
    target_rate = 0.25;
  } else {
    return InvalidArgumentError("unknown dataset shape \"" + std::string(shape) +
                                "\"; expected criteo, seed or easy");
  }
  for (int f = 0; f < 26; ++f) {
    Field fl;
    int64_t card = static_cast<int64_t>(std::llround(static_cast<double>(kCriteoCard[f]) * card_scale));
    if (card_cap > 0) card = std::min(card, card_cap);
    fl.cardinality = std::max<int64_t>(card, 2);
    // Zipf exponents between 1.0 and 1.2 (huge fields flatter); easy: 0.9.
    fl.zipf_s = card_cap > 0 ? 0.9 : (fl.cardinality > 100000 ? 1.05 : 1.0 + 0.2 * Uniform01(H(1, f, 0)));
    fl.missing_rate = kCriteoCatMissing[f];
    // Per-field effect size: some fields matter much more than others.
    fl.effect_sd = main_scale * (0.25 + 1.5 * Uniform01(H(2, f, 0)));
    if (std::fabs(fl.zipf_s - 1.0) < 1e-9) {
      fl.zipf_a = std::log(static_cast<double>(fl.cardinality) + 1.0);
      fl.zipf_inv = 0.0;
    } else {
      fl.zipf_a = std::pow(static_cast<double>(fl.cardinality) + 1.0, 1.0 - fl.zipf_s) - 1.0;
      fl.zipf_inv = 1.0 / (1.0 - fl.zipf_s);
    }
    t.fields_.push_back(fl);
  }
  for (int j = 0; j < num_dense; ++j) {
    const double* spec = kCriteoDense[j % 13];
    Dense d;
    d.missing_rate = spec[0];
    d.log_mu = spec[1];
    d.log_sd = spec[2];
    d.effect = dense_scale * Gauss(H(3, j, 0));
    d.missing_effect = dense_scale * 0.5 * Gauss(H(3, j, 1));
    t.dense_.push_back(d);
  }
  const int num_pairs = shape == "easy" ? 6 : static_cast<int>(std::size(kPairs));
  for (int p = 0; p < num_pairs; ++p) {
    t.pairs_.push_back({kPairs[p][0], kPairs[p][1], pair_scale * (0.5 + Uniform01(H(4, p, 0)))});
  }
  t.CalibrateBias(target_rate);
  return t;
}

uint32_t SyntheticTruth::TokenOf(int field, uint64_t rank) const {
  const uint32_t salt = static_cast<uint32_t>(H(5, field, 0));
  return LowBias32(static_cast<uint32_t>(rank) + salt);
}

void SyntheticTruth::SampleRow(Rng& rng, int64_t* dense, int64_t* tokens) const {
  for (size_t j = 0; j < dense_.size(); ++j) {
    const Dense& d = dense_[j];
    const double u = rng.Uniform();
    const double z = rng.Normal();
    if (u < d.missing_rate) {
      dense[j] = -1;
    } else {
      const double v = std::floor(std::exp(std::min(d.log_mu + d.log_sd * z, 30.0)));
      dense[j] = static_cast<int64_t>(v);
    }
  }
  for (size_t f = 0; f < fields_.size(); ++f) {
    const Field& fl = fields_[f];
    const double u_missing = rng.Uniform();
    const double u = rng.Uniform();
    if (u_missing < fl.missing_rate) {
      tokens[f] = -1;
      continue;
    }
    double x = fl.zipf_inv == 0.0 ? std::exp(fl.zipf_a * u) : std::pow(fl.zipf_a * u + 1.0, fl.zipf_inv);
    int64_t rank = static_cast<int64_t>(x) - 1;
    rank = std::clamp<int64_t>(rank, 0, fl.cardinality - 1);
    tokens[f] = TokenOf(static_cast<int>(f), static_cast<uint64_t>(rank));
  }
}

double SyntheticTruth::MainEffect(int field, int64_t token) const {
  return fields_[static_cast<size_t>(field)].effect_sd * Gauss(H(10, static_cast<uint64_t>(field), TokenKey(token)));
}

void SyntheticTruth::LatentVector(int field, int64_t token, double* out) const {
  const uint64_t key = TokenKey(token);
  for (int c = 0; c < kLatentDim; ++c) out[c] = Gauss(H(11 + c, static_cast<uint64_t>(field), key));
}

SyntheticTruth::LogitTerms SyntheticTruth::Terms(const int64_t* dense, const int64_t* tokens,
                                                 const bool* known, double* pair_terms) const {
  // `total` adds every term in the order the generator always has, so that
  // LogitWithoutBias (and with it every .prob file) keeps its exact bits.
  LogitTerms t;
  uint64_t row_hash = kTruthSeed;
  for (size_t f = 0; f < fields_.size(); ++f) {
    if (known == nullptr || known[f]) {
      const double main = MainEffect(static_cast<int>(f), tokens[f]);
      t.main += main;
      t.total += main;
    }
    row_hash = Mix64(row_hash ^ TokenKey(tokens[f]));
  }
  if (pair_terms != nullptr) std::fill(pair_terms, pair_terms + pairs_.size(), 0.0);
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const Pair& p = pairs_[i];
    if (known != nullptr && !(known[p.a] && known[p.b])) continue;
    double va[kLatentDim], vb[kLatentDim];
    LatentVector(p.a, tokens[p.a], va);
    LatentVector(p.b, tokens[p.b], vb);
    double dot = 0;
    for (int c = 0; c < kLatentDim; ++c) dot += va[c] * vb[c];
    const double pair = p.weight * dot * 0.5;  // 1/√K with K = 4
    if (pair_terms != nullptr) pair_terms[i] = pair;
    t.pairs += pair;
    t.total += pair;
  }
  for (size_t j = 0; j < dense_.size(); ++j) {
    const Dense& d = dense_[j];
    double effect;
    if (dense[j] < 0 && !missing_dense_as_zero_) {
      effect = d.missing_effect;
      row_hash = Mix64(row_hash ^ 0xffffffffffULL);
    } else {
      const double x = static_cast<double>(std::max<int64_t>(dense[j], 0));
      effect = d.effect * std::tanh((std::log1p(x) - d.log_mu) / d.log_sd);
      row_hash = Mix64(row_hash ^ static_cast<uint64_t>(dense[j]));
    }
    t.dense += effect;
    t.total += effect;
  }
  if (noise_sd_ > 0) {
    t.noise = noise_sd_ * Gauss(row_hash);
    t.total += t.noise;
  }
  return t;
}

double SyntheticTruth::LogitWithoutBias(const int64_t* dense, const int64_t* tokens) const {
  return Terms(dense, tokens).total;
}

double SyntheticTruth::Logit(const int64_t* dense, const int64_t* tokens) const {
  return bias_ + LogitWithoutBias(dense, tokens);
}

double SyntheticTruth::Probability(const int64_t* dense, const int64_t* tokens) const {
  return 1.0 / (1.0 + std::exp(-Logit(dense, tokens)));
}

void SyntheticTruth::CalibrateBias(double target_rate) {
  // Choose the bias so that the mean click probability is target_rate, on a fixed sample (the
  // sample's seed is part of the truth, so the bias depends only on the shape).
  constexpr int kRows = 20000;
  std::vector<double> rest(kRows);
  std::vector<int64_t> dense(dense_.size());
  std::vector<int64_t> tokens(fields_.size());
  Rng rng(kTruthSeed);
  for (int i = 0; i < kRows; ++i) {
    SampleRow(rng, dense.data(), tokens.data());
    rest[i] = LogitWithoutBias(dense.data(), tokens.data());
  }
  double lo = -20, hi = 20;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    double mean = 0;
    for (double r : rest) mean += 1.0 / (1.0 + std::exp(-(mid + r)));
    mean /= kRows;
    (mean < target_rate ? lo : hi) = mid;
  }
  bias_ = 0.5 * (lo + hi);
}

}  // namespace rectrain::data::internal
