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
    // One-sided and central differences at step `step` (the steps actually applied in float).
    struct Probe {
      double gap, scale, central;
    };
    const double l0 = at(0.0);
    auto probe = [&](double step) {
      const double hp = static_cast<double>(static_cast<float>(original + step)) - original;
      const double hm = original - static_cast<double>(static_cast<float>(original - step));
      const double lp = at(hp), lm = at(-hm);
      const double sp = (lp - l0) / hp, sm = (l0 - lm) / hm;
      return Probe{std::fabs(sp - sm), std::max(std::fabs(sp), std::fabs(sm)),
                   (lp - lm) / (hp + hm)};
    };
    // Kink test (see grad_check.h): accept the central difference at h/4 if it agrees with
    // the one at h and its slope gap is small or shrank; else try h/16 against h/4; else skip.
    auto tolerance = [&](const Probe& p) { return options.kink_rtol * p.scale + options.atol; };
    bool accepted = false;
    double numeric = 0;
    Probe coarse = probe(h);
    for (double step = h / 4; step >= h / 16 && !accepted; step /= 4) {
      const Probe fine = probe(step);
      const double tol = tolerance(fine);
      // Smooth: the slope gap is small, or shrinks with the step like ε·f'' (a kink's does
      // not); and the central difference has converged.
      const bool gap_ok = fine.gap <= tol || fine.gap <= 0.5 * coarse.gap;
      if (gap_ok && std::fabs(fine.central - coarse.central) <= tol) {
        accepted = true;
        // Richardson extrapolation over the step ratio 4 (error O(h⁴) instead of O(h²)).
        numeric = options.four_point ? (16 * fine.central - coarse.central) / 15 : fine.central;
      }
      coarse = fine;
    }
    if (!accepted) {
      ++result.skipped;
      continue;
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
