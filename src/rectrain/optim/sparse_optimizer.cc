// Sparse row rules: SGD, Adagrad, lazy Adam, FTRL-proximal. Formulas: docs/optimizers.md.
#include "rectrain/optim/sparse_optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rectrain/optim/internal/kernels.h"

namespace rectrain::optim {
namespace {

template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError("sparse_optimizer." + field + " " + what);
}

Status ValidateSparse(const SparseOptimizerConfig& c) {
  auto nonneg = [](float v) { return v >= 0.0f && std::isfinite(v); };
  if (!nonneg(c.l2)) return Bad("l2", "must be >= 0, got " + Str(c.l2));
  if (c.type == SparseOptimizerType::kAdagrad) {
    if (!nonneg(c.epsilon)) return Bad("epsilon", "must be >= 0, got " + Str(c.epsilon));
    if (!nonneg(c.initial_accumulator)) {
      return Bad("initial_accumulator", "must be >= 0, got " + Str(c.initial_accumulator));
    }
    if (c.epsilon == 0.0f && c.initial_accumulator == 0.0f) {
      return Bad("epsilon",
                 "must be > 0 for adagrad when sparse_optimizer.initial_accumulator is 0");
    }
  } else if (c.type == SparseOptimizerType::kAdam) {
    if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f)) {
      return Bad("beta1", "must be in [0, 1), got " + Str(c.beta1));
    }
    if (!(c.beta2 >= 0.0f && c.beta2 < 1.0f)) {
      return Bad("beta2", "must be in [0, 1), got " + Str(c.beta2));
    }
    if (!(c.epsilon > 0.0f && std::isfinite(c.epsilon))) {
      return Bad("epsilon", "must be > 0 for adam, got " + Str(c.epsilon));
    }
  } else if (c.type == SparseOptimizerType::kFtrl) {
    if (!(c.ftrl_alpha > 0.0f && std::isfinite(c.ftrl_alpha))) {
      return Bad("ftrl_alpha", "must be > 0, got " + Str(c.ftrl_alpha));
    }
    if (!nonneg(c.ftrl_beta)) return Bad("ftrl_beta", "must be >= 0, got " + Str(c.ftrl_beta));
    if (!nonneg(c.ftrl_l1)) return Bad("ftrl_l1", "must be >= 0, got " + Str(c.ftrl_l1));
    if (!nonneg(c.ftrl_l2)) return Bad("ftrl_l2", "must be >= 0, got " + Str(c.ftrl_l2));
    if (c.ftrl_beta == 0.0f && c.ftrl_l2 == 0.0f) {
      return Bad("ftrl_beta", "and sparse_optimizer.ftrl_l2 must not both be 0 (division by 0)");
    }
  }
  return OkStatus();
}

class SparseSgd final : public SparseOptimizer {
 public:
  explicit SparseSgd(const SparseOptimizerConfig& c) : c_(c) {}
  int StateWidth(int) const override { return 0; }
  void InitState(std::span<float>, std::span<float>) const override {}
  void UpdateRow(const StepContext& ctx, int64_t, std::span<float> w, std::span<float>,
                 std::span<const float> g) const override {
    internal::SgdKernel(w.data(), g.data(), static_cast<int64_t>(w.size()), ctx.learning_rate,
                        c_.l2);
  }
  std::string name() const override { return "sgd"; }

 private:
  const SparseOptimizerConfig c_;
};

class SparseAdagrad final : public SparseOptimizer {
 public:
  explicit SparseAdagrad(const SparseOptimizerConfig& c) : c_(c) {}
  int StateWidth(int dim) const override { return dim; }
  void InitState(std::span<float>, std::span<float> state) const override {
    std::fill(state.begin(), state.end(), c_.initial_accumulator);
  }
  void UpdateRow(const StepContext& ctx, int64_t, std::span<float> w, std::span<float> state,
                 std::span<const float> g) const override {
    internal::AdagradKernel(w.data(), g.data(), state.data(), static_cast<int64_t>(w.size()),
                            ctx.learning_rate, c_.l2, c_.epsilon);
  }
  std::string name() const override { return "adagrad"; }

 private:
  const SparseOptimizerConfig c_;
};

class SparseAdam final : public SparseOptimizer {
 public:
  explicit SparseAdam(const SparseOptimizerConfig& c) : c_(c) {}
  int StateWidth(int dim) const override { return 2 * dim; }
  void InitState(std::span<float>, std::span<float> state) const override {
    std::fill(state.begin(), state.end(), 0.0f);
  }
  void UpdateRow(const StepContext& ctx, int64_t row_step, std::span<float> w,
                 std::span<float> state, std::span<const float> g) const override {
    const int64_t dim = static_cast<int64_t>(w.size());
    // Lazy Adam: the bias correction uses the row's own update count, not the global step.
    const double t = static_cast<double>(std::max<int64_t>(row_step, 0) + 1);
    const float inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(double{c_.beta1}, t)));
    const float inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(double{c_.beta2}, t)));
    internal::AdamKernel(w.data(), g.data(), state.data(), state.data() + dim, dim,
                         ctx.learning_rate, c_.l2, 0.0f, c_.beta1, c_.beta2, c_.epsilon, inv_bc1,
                         inv_bc2);
  }
  std::string name() const override { return "adam"; }

 private:
  const SparseOptimizerConfig c_;
};

class SparseFtrl final : public SparseOptimizer {
 public:
  explicit SparseFtrl(const SparseOptimizerConfig& c) : c_(c) {}
  int StateWidth(int dim) const override { return 2 * dim; }
  // State is [z (dim) | n (dim)]. n = 0 and z is chosen so that the FTRL weight formula gives
  // back the initialised weight: z = -(w * (beta / alpha + l2_ftrl) + sign(w) * l1).
  void InitState(std::span<float> w, std::span<float> state) const override {
    const size_t dim = w.size();
    const float k = c_.ftrl_beta / c_.ftrl_alpha + c_.ftrl_l2;
    for (size_t i = 0; i < dim; ++i) {
      state[i] = w[i] == 0.0f ? 0.0f : -(w[i] * k + std::copysign(c_.ftrl_l1, w[i]));
      state[dim + i] = 0.0f;
    }
  }
  // FTRL's learning rate is ftrl_alpha; ctx.learning_rate is not used.
  void UpdateRow(const StepContext&, int64_t, std::span<float> w, std::span<float> state,
                 std::span<const float> g) const override {
    const int64_t dim = static_cast<int64_t>(w.size());
    internal::FtrlKernel(w.data(), g.data(), state.data(), state.data() + dim, dim, c_.l2,
                         c_.ftrl_alpha, c_.ftrl_beta, c_.ftrl_l1, c_.ftrl_l2);
  }
  std::string name() const override { return "ftrl"; }

 private:
  const SparseOptimizerConfig c_;
};

}  // namespace

Result<std::unique_ptr<SparseOptimizer>> MakeSparseOptimizer(const SparseOptimizerConfig& config) {
  RECTRAIN_RETURN_IF_ERROR(ValidateSparse(config));
  switch (config.type) {
    case SparseOptimizerType::kSgd: return std::unique_ptr<SparseOptimizer>(std::make_unique<SparseSgd>(config));
    case SparseOptimizerType::kAdagrad: return std::unique_ptr<SparseOptimizer>(std::make_unique<SparseAdagrad>(config));
    case SparseOptimizerType::kAdam: return std::unique_ptr<SparseOptimizer>(std::make_unique<SparseAdam>(config));
    case SparseOptimizerType::kFtrl: return std::unique_ptr<SparseOptimizer>(std::make_unique<SparseFtrl>(config));
  }
  return InvalidArgumentError("embedding.optimizer.type: not a sparse optimizer type");  // an out-of-range enum
}

}  // namespace rectrain::optim
