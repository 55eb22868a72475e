#include "posterior_bound.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_map>

namespace rectrain::bench {
namespace {

using data::internal::SyntheticTruth;

constexpr int kLatent = SyntheticTruth::kLatentDim;
constexpr int kParams = 1 + kLatent;  // an id's main effect, then its latent vector
constexpr int kSparse = TruthRow::kSparse;

// The factor of a pair's latent inner product in the logit (its term is scale · <v_a, v_b>).
double PairScale(const SyntheticTruth::Pair& p) { return p.weight / std::sqrt(double{kLatent}); }

// The pairs a field is in, seen from that field: the partner field and the pair's scale.
struct Partner {
  int field = 0;
  double scale = 0;
};

// The training rows of every id of one field, grouped: the rows of id k are
// rows[start[k] .. start[k + 1]).
struct FieldIds {
  std::unordered_map<int64_t, int32_t> index;  // token -> id
  std::vector<int64_t> token;                  // id -> token
  std::vector<int64_t> start;
  std::vector<int32_t> rows;
};

// Solves H d = g for a symmetric positive definite H (kParams²) by Cholesky, in place.
void SolveSpd(double* h, double* g) {
  for (int j = 0; j < kParams; ++j) {
    double d = h[j * kParams + j];
    for (int k = 0; k < j; ++k) d -= h[j * kParams + k] * h[j * kParams + k];
    d = std::sqrt(d);
    h[j * kParams + j] = d;
    for (int i = j + 1; i < kParams; ++i) {
      double v = h[i * kParams + j];
      for (int k = 0; k < j; ++k) v -= h[i * kParams + k] * h[j * kParams + k];
      h[i * kParams + j] = v / d;
    }
  }
  for (int i = 0; i < kParams; ++i) {  // L y = g
    for (int k = 0; k < i; ++k) g[i] -= h[i * kParams + k] * g[k];
    g[i] /= h[i * kParams + i];
  }
  for (int i = kParams - 1; i >= 0; --i) {  // Lᵀ d = y
    for (int k = i + 1; k < kParams; ++k) g[i] -= h[k * kParams + i] * g[k];
    g[i] /= h[i * kParams + i];
  }
}

// The posterior mode of one id's parameters given its rows' features x (kParams per row), the
// rest of their logits (offset) and labels. prior_precision: kParams values (a diagonal prior).
// slope: the probit factor of the marginalised row noise.
void PosteriorMode(const std::vector<double>& x, const std::vector<double>& offset, const std::vector<float>& labels,
                   const double* prior_precision, double slope, double* theta) {
  std::fill(theta, theta + kParams, 0.0);
  const size_t n = offset.size();
  for (int iter = 0; iter < 50; ++iter) {
    double g[kParams], h[kParams * kParams] = {};
    for (int j = 0; j < kParams; ++j) {
      g[j] = -prior_precision[j] * theta[j];
      h[j * kParams + j] = prior_precision[j];
    }
    for (size_t r = 0; r < n; ++r) {
      const double* xr = &x[r * kParams];
      double z = offset[r];
      for (int j = 0; j < kParams; ++j) z += theta[j] * xr[j];
      const double p = 1.0 / (1.0 + std::exp(-slope * z));
      const double resid = slope * (labels[r] - p);
      const double weight = slope * slope * p * (1.0 - p);
      for (int i = 0; i < kParams; ++i) {
        g[i] += resid * xr[i];
        for (int j = 0; j <= i; ++j) h[i * kParams + j] += weight * xr[i] * xr[j];
      }
    }
    SolveSpd(h, g);
    double largest = 0;
    for (int j = 0; j < kParams; ++j) {
      const double step = std::clamp(g[j], -1.0, 1.0);  // damped: a first step far from the mode
      theta[j] += step;
      largest = std::max(largest, std::fabs(step));
    }
    if (largest < 1e-7) break;
  }
}

}  // namespace

std::vector<float> PosteriorBoundLogits(const SyntheticTruth& truth, const std::vector<TruthRow>& train,
                                        const std::vector<TruthRow>& valid, const ComputeContext& compute) {
  std::vector<std::vector<Partner>> partners(kSparse);
  for (const auto& p : truth.pairs()) {
    const double scale = PairScale(p);
    partners[static_cast<size_t>(p.a)].push_back({p.b, scale});
    partners[static_cast<size_t>(p.b)].push_back({p.a, scale});
  }
  auto true_params = [&](int f, int64_t token, double* out) {
    out[0] = truth.MainEffect(f, token);
    truth.LatentVector(f, token, out + 1);
  };

  // Group the training rows by id, field by field.
  std::vector<FieldIds> ids(kSparse);
  for (int f = 0; f < kSparse; ++f) {
    FieldIds& fi = ids[static_cast<size_t>(f)];
    std::vector<int32_t> id_of_row(train.size());
    std::vector<int64_t> count;
    for (size_t r = 0; r < train.size(); ++r) {
      const int64_t token = train[r].tokens[f];
      auto [it, added] = fi.index.emplace(token, static_cast<int32_t>(fi.token.size()));
      if (added) {
        fi.token.push_back(token);
        count.push_back(0);
      }
      id_of_row[r] = it->second;
      ++count[static_cast<size_t>(it->second)];
    }
    fi.start.assign(fi.token.size() + 1, 0);
    for (size_t k = 0; k < count.size(); ++k) fi.start[k + 1] = fi.start[k] + count[k];
    fi.rows.resize(train.size());
    std::vector<int64_t> next(fi.start.begin(), fi.start.end() - 1);
    for (size_t r = 0; r < train.size(); ++r) fi.rows[static_cast<size_t>(next[static_cast<size_t>(id_of_row[r])]++)] = static_cast<int32_t>(r);
  }

  // Every id's estimate, from its own rows with the rest of each row given.
  const double noise_sd = truth.noise_sd();
  const double slope = 1.0 / std::sqrt(1.0 + std::numbers::pi * noise_sd * noise_sd / 8.0);
  std::vector<std::vector<double>> estimate(kSparse);
  for (int f = 0; f < kSparse; ++f) {
    const FieldIds& fi = ids[static_cast<size_t>(f)];
    const double sd = truth.fields()[static_cast<size_t>(f)].effect_sd;
    double precision[kParams];
    precision[0] = 1.0 / (sd * sd);
    for (int c = 1; c < kParams; ++c) precision[c] = 1.0;
    std::vector<double>& est = estimate[static_cast<size_t>(f)];
    est.assign(fi.token.size() * kParams, 0.0);
    ParallelForEach(compute, static_cast<int64_t>(fi.token.size()), 256, [&](int, int64_t begin, int64_t end) {
      std::vector<double> x, offset;
      std::vector<float> labels;
      for (int64_t k = begin; k < end; ++k) {
        double own[kParams];
        true_params(f, fi.token[static_cast<size_t>(k)], own);
        x.clear();
        offset.clear();
        labels.clear();
        for (int64_t j = fi.start[static_cast<size_t>(k)]; j < fi.start[static_cast<size_t>(k) + 1]; ++j) {
          const TruthRow& row = train[static_cast<size_t>(fi.rows[static_cast<size_t>(j)])];
          // The id's features in this row: 1 for its main effect, and for its latent vector the
          // sum of its partners' vectors, each times its pair's scale.
          double xr[kParams] = {1.0};
          for (const Partner& p : partners[static_cast<size_t>(f)]) {
            double v[kLatent];
            truth.LatentVector(p.field, row.tokens[p.field], v);
            for (int c = 0; c < kLatent; ++c) xr[1 + c] += p.scale * v[c];
          }
          double own_term = 0;
          for (int c = 0; c < kParams; ++c) own_term += own[c] * xr[c];
          x.insert(x.end(), xr, xr + kParams);
          offset.push_back(row.noise_free_logit - own_term);
          labels.push_back(row.label);
        }
        PosteriorMode(x, offset, labels, precision, slope, &est[static_cast<size_t>(k) * kParams]);
      }
    });
  }

  // Validation scores: the truth's logit with every id's estimate (0 for an id never seen).
  std::vector<float> scores(valid.size());
  ParallelForEach(compute, static_cast<int64_t>(valid.size()), 4096, [&](int, int64_t begin, int64_t end) {
    static const double kUnseen[kParams] = {};
    for (int64_t r = begin; r < end; ++r) {
      const TruthRow& row = valid[static_cast<size_t>(r)];
      const double* params[kSparse];
      for (int f = 0; f < kSparse; ++f) {
        const FieldIds& fi = ids[static_cast<size_t>(f)];
        const auto it = fi.index.find(row.tokens[f]);
        params[f] = it == fi.index.end() ? kUnseen : &estimate[static_cast<size_t>(f)][static_cast<size_t>(it->second) * kParams];
      }
      double z = row.dense_logit;
      for (int f = 0; f < kSparse; ++f) z += params[f][0];
      for (const auto& p : truth.pairs()) {
        double dot = 0;
        for (int c = 1; c < kParams; ++c) dot += params[p.a][c] * params[p.b][c];
        z += PairScale(p) * dot;
      }
      scores[static_cast<size_t>(r)] = static_cast<float>(z);
    }
  });
  return scores;
}

}  // namespace rectrain::bench
