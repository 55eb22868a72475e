// rectrain/testing/grad_check.h: the one finite-difference gradient checker (test-only).
//
// How it works: the code under test is reduced to a scalar L = Σ w·y by a fixed random
// Projection of its output (so a single backward with dy = w gives every input's dL/dx). For
// each checked element x_k the checker evaluates L at x_k ± ε (and optionally ± 2ε for the
// 4-point stencil) and compares the central difference (L(x+ε) − L(x−ε)) / 2ε — computed in
// double — with the analytic gradient.
//
// Precision choice: layers run in float (they are not templated on the scalar type). The
// checker works around float noise by (1) summing the projection in double, (2) using steps
// relative to the value (ε = 1e-2 · max(1, |x_k|), then ε/4 and ε/16), where the O(h²)
// truncation error is ~1e-4 for our smooth layers and the float rounding noise
// (~1e-7 · |L| / h) stays below ~5e-4, and (3) tolerances atol + rtol·|numeric| with
// rtol = 2e-2, atol = 1e-3 by default (per-call options). That is tight enough that a 5% error
// in one gradient element, or a missing term, fails (grad_check_test.cc proves it with
// deliberately wrong backwards).
//
// Kinks (ReLU, max, and several of them at once behind a LayerNorm): for a smooth function
// the central differences at ε and ε/4 agree to O(ε²) and the gap between the two one-sided
// slopes shrinks with the step (it is ~step·|f''|); across a kink at distance t < step the gap
// is ~jump·(1 − t/step) and does not shrink, and the central differences disagree unless both
// steps straddle the kink alike. The checker accepts the central difference at ε/4 when it
// agrees with the one at ε within kink_rtol·|slope| + atol and its slope gap is within that
// bound or at most half the gap at ε; otherwise it tries ε/16 against ε/4; otherwise a
// non-differentiable point lies within the step and the element is skipped, like ggml's
// grad_expect. Skips are counted; more than max_skip_fraction of the checked elements
// skipped fails the check (a kink detector must not be able to hide a whole tensor).
// four_point: Richardson extrapolation of the accepted pair, (16·c(h/4) − c(h)) / 15 — the
// 4-point stencil's O(h⁴) accuracy.
//
// Quick start (see nn/layers_test.cc for the generic layer harness built on this):
//   Projection proj(y.size(), /*seed=*/1);
//   auto loss = [&] { RunForward(); return proj(y); };
//   RunForward(); dy = proj.weights(); RunBackward();           // analytic grads
//   GradCheckResult r = CheckGradient("dense.weight", w.value, snapshot_of_w_grad, loss, {});
//   EXPECT_TRUE(r.ok()) << r.ToString();
//
// Thread safety: none needed (tests); `loss` is called serially.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rectrain::testing {

struct GradCheckOptions {
  double eps = 1e-2;               // step = eps · max(1, |x|)
  double rtol = 2e-2;
  double atol = 1e-3;
  int max_elements = 64;           // per tensor: evenly spaced sample including first and last
  bool four_point = false;         // Richardson / 4-point accuracy O(ε⁴)
  double kink_rtol = 0.02;         // see the top comment
  double max_skip_fraction = 0.3;
};

struct GradCheckResult {
  std::string name;
  int checked = 0;   // compared elements
  int skipped = 0;   // skipped at kinks
  int failed = 0;
  double max_abs_error = 0;
  std::string first_failure;  // "name[17]: analytic 0.12 numeric 0.15"
  bool too_many_skips = false;
  bool ok() const { return failed == 0 && !too_many_skips && checked > 0; }
  std::string ToString() const;
};

// A fixed random projection w ~ N(0, 1) of an n-element output.
class Projection {
 public:
  Projection(int64_t n, uint64_t seed);
  std::span<const float> weights() const { return weights_; }
  // Σ w·y in double. y.size() must equal n (CHECK).
  double operator()(std::span<const float> y) const;
  // Strided [rows × cols] matrix with row stride ld, rows·cols == n.
  double operator()(const float* y, int64_t rows, int64_t cols, int64_t ld) const;

 private:
  std::vector<float> weights_;
};

// Checks `analytic` (dL/dx, same size as x) against finite differences of `loss` in x.
// `x` is perturbed in place and restored exactly. `loss` must recompute L from the current x.
GradCheckResult CheckGradient(std::string_view name, std::span<float> x,
                              std::span<const float> analytic,
                              const std::function<double()>& loss,
                              const GradCheckOptions& options = {});

}  // namespace rectrain::testing
