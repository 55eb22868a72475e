#include "rectrain/tune/searcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace rectrain::tune {
namespace {

class RandomSearcher : public Searcher {
 public:
  RandomSearcher(SearchSpace space, uint64_t seed) : space_(std::move(space)), seed_(seed) {}
  std::optional<Assignment> Next(std::span<const Observation> trials) override {
    Rng rng(DeriveSeed(seed_, trials.size()));
    return space_.Sample(rng);
  }

 private:
  SearchSpace space_;
  uint64_t seed_;
};

class GridSearcher : public Searcher {
 public:
  explicit GridSearcher(std::vector<Assignment> grid) : grid_(std::move(grid)) {}
  std::optional<Assignment> Next(std::span<const Observation> trials) override {
    if (grid_.empty()) return std::nullopt;
    return grid_[trials.size() % grid_.size()];
  }

 private:
  std::vector<Assignment> grid_;
};

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// A Parzen estimator on [0, 1]: a uniform prior plus one Gaussian per point, truncated to the
// interval, each point's width the larger gap to its neighbours (bounded below so a tight
// cluster does not become a spike).
class Parzen {
 public:
  explicit Parzen(std::vector<double> points) : mu_(std::move(points)) {
    std::sort(mu_.begin(), mu_.end());
    const size_t n = mu_.size();
    sigma_.resize(n);
    const double min_sigma = 1.0 / std::min<double>(100.0, 1.0 + static_cast<double>(n));
    for (size_t i = 0; i < n; ++i) {
      const double left = i == 0 ? mu_[i] : mu_[i] - mu_[i - 1];
      const double right = i + 1 == n ? 1.0 - mu_[i] : mu_[i + 1] - mu_[i];
      sigma_[i] = std::clamp(std::max(left, right), min_sigma, 1.0);
    }
  }
  double Density(double x) const {
    const double w = 1.0 / static_cast<double>(mu_.size() + 1);
    double d = w;  // the prior's density on [0, 1] is 1
    for (size_t i = 0; i < mu_.size(); ++i) {
      const double z = (x - mu_[i]) / sigma_[i];
      const double mass = NormalCdf((1.0 - mu_[i]) / sigma_[i]) - NormalCdf(-mu_[i] / sigma_[i]);
      d += w * std::exp(-0.5 * z * z) / (sigma_[i] * std::sqrt(2 * M_PI) * std::max(mass, 1e-12));
    }
    return d;
  }
  double Draw(Rng& rng) const {
    const size_t k = static_cast<size_t>(rng.Below(mu_.size() + 1));
    if (k == mu_.size()) return rng.Uniform();
    for (int attempt = 0; attempt < 64; ++attempt) {
      const double x = mu_[k] + sigma_[k] * rng.Normal();
      if (x >= 0 && x < 1) return x;
    }
    return std::clamp(mu_[k], 0.0, std::nextafter(1.0, 0.0));
  }

 private:
  std::vector<double> mu_, sigma_;
};

// Smoothed category frequencies (one pseudo-count per category).
class Categorical {
 public:
  Categorical(size_t k, const std::vector<size_t>& picks) : p_(k, 1.0) {
    for (size_t c : picks) p_[c] += 1.0;
    const double total = std::accumulate(p_.begin(), p_.end(), 0.0);
    for (double& v : p_) v /= total;
  }
  double Probability(size_t c) const { return p_[c]; }
  size_t Draw(Rng& rng) const {
    double u = rng.Uniform();
    for (size_t c = 0; c < p_.size(); ++c) {
      if ((u -= p_[c]) < 0) return c;
    }
    return p_.size() - 1;
  }

 private:
  std::vector<double> p_;
};

class TpeSearcher : public Searcher {
 public:
  TpeSearcher(SearchSpace space, SearcherSpec spec, Direction dir)
      : space_(std::move(space)), spec_(spec), dir_(dir) {}

  std::optional<Assignment> Next(std::span<const Observation> trials) override {
    Rng rng(DeriveSeed(spec_.seed, trials.size()));
    // The deepest rung with enough results: its values are comparable (same budget).
    size_t rung = 0;
    for (size_t r = 0;; ++r) {
      const auto n = std::count_if(trials.begin(), trials.end(),
                                   [&](const Observation& o) { return !o.failed && o.rung_values.size() > r; });
      if (n < spec_.startup) break;
      rung = r;
    }
    std::vector<std::pair<double, const Observation*>> scored;  // (loss, trial): lower is better
    std::vector<const Observation*> liars;
    for (const Observation& o : trials) {
      if (o.failed) continue;
      if (o.rung_values.size() > rung && std::isfinite(o.rung_values[rung])) {
        const double v = o.rung_values[rung];
        scored.emplace_back(dir_ == Direction::kMaximize ? -v : v, &o);
      } else if (o.pending) {
        liars.push_back(&o);
      }
    }
    if (static_cast<int64_t>(scored.size()) < spec_.startup) return space_.Sample(rng);
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t n_good = std::max<size_t>(1, static_cast<size_t>(std::ceil(spec_.gamma * static_cast<double>(scored.size()))));
    std::vector<const Observation*> good, bad = liars;
    for (size_t i = 0; i < scored.size(); ++i) (i < n_good ? good : bad).push_back(scored[i].second);

    Assignment out;
    for (const Param& p : space_.params()) {
      if (!SearchSpace::Active(p, out)) continue;
      out.emplace_back(p.key, Propose(p, good, bad, rng));
    }
    return out;
  }

 private:
  std::string Propose(const Param& p, const std::vector<const Observation*>& good,
                      const std::vector<const Observation*>& bad, Rng& rng) const {
    auto encoded = [&](const std::vector<const Observation*>& group) {
      std::vector<double> xs;
      for (const Observation* o : group) {
        if (const std::string* v = Find(o->params, p.key)) {
          if (auto x = p.domain.Encode(*v)) xs.push_back(*x);
        }
      }
      return xs;
    };
    const std::vector<double> g = encoded(good), b = encoded(bad);
    if (g.empty()) return p.domain.Sample(rng);
    if (p.domain.categorical()) {
      const size_t k = p.domain.values.size();
      auto cells = [&](const std::vector<double>& xs) {
        std::vector<size_t> c;
        for (double x : xs) c.push_back(std::min(k - 1, static_cast<size_t>(x * static_cast<double>(k))));
        return c;
      };
      const Categorical l(k, cells(g)), gg(k, cells(b));
      size_t best = 0;
      double best_score = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < spec_.candidates; ++i) {
        const size_t c = l.Draw(rng);
        const double score = std::log(l.Probability(c)) - std::log(gg.Probability(c));
        if (score > best_score) best_score = score, best = c;
      }
      return p.domain.values[best];
    }
    const Parzen l(g), gg(b);
    double best = 0.5, best_score = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < spec_.candidates; ++i) {
      const double x = l.Draw(rng);
      const double score = std::log(l.Density(x)) - std::log(gg.Density(x));
      if (score > best_score) best_score = score, best = x;
    }
    return p.domain.Decode(best);
  }

  SearchSpace space_;
  SearcherSpec spec_;
  Direction dir_;
};

}  // namespace

std::unique_ptr<Searcher> MakeSearcher(const StudySpec& spec) {
  switch (spec.searcher.kind) {
    case SearcherKind::kGrid: {
      auto grid = spec.space.Grid();
      return std::make_unique<GridSearcher>(grid.ok() ? std::move(grid).value() : std::vector<Assignment>{});
    }
    case SearcherKind::kTpe: return std::make_unique<TpeSearcher>(spec.space, spec.searcher, spec.direction);
    case SearcherKind::kRandom: break;
  }
  return std::make_unique<RandomSearcher>(spec.space, spec.searcher.seed);
}

}  // namespace rectrain::tune
