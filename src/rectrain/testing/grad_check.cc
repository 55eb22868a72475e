#include "rectrain/testing/grad_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/base/random.h"

namespace rectrain::testing {

std::string GradCheckResult::ToString() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s: checked %d, skipped %d (kinks), failed %d, max abs err %.3g",
                name.c_str(), checked, skipped, failed, max_abs_error);
  std::string s = buf;
  if (too_many_skips) s += "; too many elements skipped at kinks";
  if (checked == 0) s += "; nothing checked";
  if (!first_failure.empty()) s += "; first failure " + first_failure;
  return s;
}

Projection::Projection(int64_t n, uint64_t seed) : weights_(static_cast<size_t>(n)) {
  Rng rng(seed);
  for (float& w : weights_) w = static_cast<float>(rng.Normal());
}

double Projection::operator()(std::span<const float> y) const {
  RECTRAIN_CHECK(y.size() == weights_.size()) << y.size() << " vs " << weights_.size();
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(weights_[i]) * y[i];
  return s;
}

double Projection::operator()(const float* y, int64_t rows, int64_t cols, int64_t ld) const {
  RECTRAIN_CHECK(rows * cols == static_cast<int64_t>(weights_.size()));
  double s = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      s += static_cast<double>(weights_[r * cols + c]) * y[r * ld + c];
    }
  }
  return s;
}

GradCheckResult CheckGradient(std::string_view name, std::span<float> x,
                              std::span<const float> analytic,
                              const std::function<double()>& loss,
                              const GradCheckOptions& options) {
  RECTRAIN_CHECK(x.size() == analytic.size()) << name << ": " << x.size() << " values vs "
                                              << analytic.size() << " gradients";
  GradCheckResult result;
  result.name = std::string(name);
  const int64_t n = static_cast<int64_t>(x.size());
  std::set<int64_t> picks;
  const int64_t count = std::min<int64_t>(n, options.max_elements);
  for (int64_t j = 0; j < count; ++j) picks.insert(count == 1 ? 0 : j * (n - 1) / (count - 1));

  for (int64_t k : picks) {
    const float original = x[k];
    const double h = options.eps * std::max(1.0, std::fabs(static_cast<double>(original)));
    auto at = [&](double delta) {
      x[k] = static_cast<float>(original + delta);
      const double l = loss();
      x[k] = original;
      return l;
    };
    // The step actually applied in float (original ± h rounds).
    const double hp = static_cast<double>(static_cast<float>(original + h)) - original;
    const double hm = original - static_cast<double>(static_cast<float>(original - h));
    const double lp = at(hp);
    const double lm = at(-hm);
    const double l0 = at(0.0);
    // Kink test: for a smooth f the one-sided slopes differ by about h·f'' (shrinks with h);
    // across a kink they differ by the jump in slope (does not shrink).
    auto kink_gap = [&](double lp_, double lm_, double p, double m) {
      const double sp = (lp_ - l0) / p, sm = (l0 - lm_) / m;
      return std::make_pair(std::fabs(sp - sm), std::max(std::fabs(sp), std::fabs(sm)));
    };
    auto [gap, scale] = kink_gap(lp, lm, hp, hm);
    double numeric = (lp - lm) / (hp + hm);
    if (gap > options.kink_rtol * scale + options.atol * 10) {
      // Retry with a quarter step: a smooth function's gap shrinks ~4x, a kink's does not.
      const double qp = static_cast<double>(static_cast<float>(original + h / 4)) - original;
      const double qm = original - static_cast<double>(static_cast<float>(original - h / 4));
      const double lqp = at(qp);
      const double lqm = at(-qm);
      const double gap_q = kink_gap(lqp, lqm, qp, qm).first;
      if (gap_q > 0.5 * gap) {
        ++result.skipped;
        continue;
      }
      numeric = (lqp - lqm) / (qp + qm);  // smooth at this scale: the closer estimate
    } else if (options.four_point) {
      const double h2p = static_cast<double>(static_cast<float>(original + 2 * h)) - original;
      const double h2m = original - static_cast<double>(static_cast<float>(original - 2 * h));
      const double l2p = at(h2p);
      const double l2m = at(-h2m);
      // Richardson: (8(L(+h) − L(−h)) − (L(+2h) − L(−2h))) / 12h, with symmetric steps assumed.
      numeric = (8 * (lp - lm) - (l2p - l2m)) / (6 * (hp + hm));
    }
    const double a = analytic[k];
    const double err = std::fabs(a - numeric);
    result.max_abs_error = std::max(result.max_abs_error, err);
    ++result.checked;
    if (err > options.atol + options.rtol * std::fabs(numeric)) {
      if (result.failed == 0) {
        char buf[160];
        std::snprintf(buf, sizeof(buf), "%s[%lld]: analytic %.6g numeric %.6g", result.name.c_str(),
                      static_cast<long long>(k), a, numeric);
        result.first_failure = buf;
      }
      ++result.failed;
    }
  }
  const int total = result.checked + result.skipped;
  result.too_many_skips =
      total > 0 && result.skipped > options.max_skip_fraction * static_cast<double>(total);
  return result;
}

}  // namespace rectrain::testing
