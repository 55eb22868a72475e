// Dense optimizers: SGD (+momentum), Adagrad, Adam, AdamW. Update formulas: docs/optimizers.md.
#include "rectrain/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rectrain/optim/internal/kernels.h"

namespace rectrain::optim {
namespace {

// Parameters are updated in chunks of at most kChunkElements; chunks run in parallel only when
// the total is at least kMinParallelElements (below that, waking threads costs more than it saves).
constexpr int64_t kChunkElements = 16384;
constexpr int64_t kMinParallelElements = 65536;

using Kind = DenseOptimizerType;

template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

Status ValidateDense(const DenseOptimizerConfig& c) {
  auto bad = [](const std::string& field, const std::string& what) {
    return InvalidArgumentError("optimizer." + field + " " + what);
  };
  const bool adam = c.type == Kind::kAdam || c.type == Kind::kAdamW;
  if (adam && !(c.beta1 >= 0.0f && c.beta1 < 1.0f)) {
    return bad("beta1", "must be in [0, 1), got " + Str(c.beta1));
  }
  if (adam && !(c.beta2 >= 0.0f && c.beta2 < 1.0f)) {
    return bad("beta2", "must be in [0, 1), got " + Str(c.beta2));
  }
  if (!(c.epsilon >= 0.0f && std::isfinite(c.epsilon))) {
    return bad("epsilon", "must be >= 0, got " + Str(c.epsilon));
  }
  if (adam && c.epsilon == 0.0f) return bad("epsilon", "must be > 0 for " + std::string(kDenseOptimizerTypes.Name(c.type)) + ", got 0");
  if (c.type == Kind::kAdagrad && c.epsilon == 0.0f && !(c.initial_accumulator > 0.0f)) {
    return bad("epsilon", "must be > 0 for adagrad when optimizer.initial_accumulator is 0");
  }
  if (!(c.weight_decay >= 0.0f && std::isfinite(c.weight_decay))) {
    return bad("weight_decay", "must be >= 0, got " + Str(c.weight_decay));
  }
  if (!(c.initial_accumulator >= 0.0f && std::isfinite(c.initial_accumulator))) {
    return bad("initial_accumulator", "must be >= 0, got " + Str(c.initial_accumulator));
  }
  if (!(c.momentum >= 0.0f && c.momentum < 1.0f)) {
    return bad("momentum", "must be in [0, 1), got " + Str(c.momentum));
  }
  return OkStatus();
}

struct Chunk {
  int param = 0;
  int64_t begin = 0;  // element offset within the param
  int64_t end = 0;
};

class DenseOptimizer final : public Optimizer {
 public:
  DenseOptimizer(Kind kind, const DenseOptimizerConfig& config) : kind_(kind), config_(config) {}

  Status Init(std::span<const ParamRef> params) override {
    sizes_.clear();
    offsets_.clear();
    chunks_.clear();
    int64_t total = 0;
    for (size_t p = 0; p < params.size(); ++p) {
      const ParamRef& ref = params[p];
      if (ref.value.empty()) {
        return InvalidArgumentError("optimizer: parameter '" + ref.name + "' is empty");
      }
      if (ref.value.size() != ref.grad.size()) {
        return InvalidArgumentError("optimizer: parameter '" + ref.name + "' has " +
                                    Str(ref.value.size()) + " values but " +
                                    Str(ref.grad.size()) + " gradients");
      }
      const int64_t n = static_cast<int64_t>(ref.value.size());
      sizes_.push_back(n);
      offsets_.push_back(total);
      for (int64_t b = 0; b < n; b += kChunkElements) {
        chunks_.push_back({static_cast<int>(p), b, std::min(n, b + kChunkElements)});
      }
      total += n;
    }
    total_ = total;
    const bool momentum = kind_ == Kind::kSgd && config_.momentum > 0.0f;
    const float fill = kind_ == Kind::kAdagrad ? config_.initial_accumulator : 0.0f;
    slot0_.assign(kind_ == Kind::kSgd && !momentum ? 0 : total, fill);
    slot1_.assign(kind_ == Kind::kAdam || kind_ == Kind::kAdamW ? total : 0, 0.0f);
    initialized_ = true;
    return OkStatus();
  }

  Status Update(const StepContext& ctx, std::span<const ParamRef> params,
                const ComputeContext& compute) override {
    if (!initialized_) return FailedPreconditionError("optimizer: Update called before Init");
    if (params.size() != sizes_.size()) {
      return InvalidArgumentError("optimizer: Update got " + Str(params.size()) +
                                  " parameters but Init got " + Str(sizes_.size()));
    }
    for (size_t p = 0; p < params.size(); ++p) {
      if (static_cast<int64_t>(params[p].value.size()) != sizes_[p] ||
          params[p].grad.size() != params[p].value.size()) {
        return InvalidArgumentError("optimizer: parameter '" + params[p].name + "' (#" +
                                    Str(p) + ") has size " + Str(params[p].value.size()) +
                                    " / grad " + Str(params[p].grad.size()) +
                                    " but Init saw " + Str(sizes_[p]));
      }
    }
    const float lr = ctx.learning_rate;
    float inv_bc1 = 1.0f;
    float inv_bc2 = 1.0f;
    if (kind_ == Kind::kAdam || kind_ == Kind::kAdamW) {
      const double t = static_cast<double>(std::max<int64_t>(ctx.step, 0) + 1);
      inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(config_.beta1), t)));
      inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(config_.beta2), t)));
    }
    auto run = [&](int64_t chunk_begin, int64_t chunk_end) {
      for (int64_t c = chunk_begin; c < chunk_end; ++c) {
        const Chunk& ch = chunks_[c];
        const ParamRef& ref = params[ch.param];
        const float wd = ref.decay ? config_.weight_decay : 0.0f;
        float* w = ref.value.data() + ch.begin;
        const float* g = ref.grad.data() + ch.begin;
        const int64_t n = ch.end - ch.begin;
        const int64_t off = offsets_[ch.param] + ch.begin;
        switch (kind_) {
          case Kind::kSgd:
            if (slot0_.empty()) {
              internal::SgdKernel(w, g, n, lr, wd);
            } else {
              internal::SgdMomentumKernel(w, g, slot0_.data() + off, n, lr, wd,
                                          config_.momentum);
            }
            break;
          case Kind::kAdagrad:
            internal::AdagradKernel(w, g, slot0_.data() + off, n, lr, wd, config_.epsilon);
            break;
          case Kind::kAdam:
            internal::AdamKernel(w, g, slot0_.data() + off, slot1_.data() + off, n, lr, wd, 0.0f,
                                 config_.beta1, config_.beta2, config_.epsilon, inv_bc1, inv_bc2);
            break;
          case Kind::kAdamW:
            internal::AdamKernel(w, g, slot0_.data() + off, slot1_.data() + off, n, lr, 0.0f, wd,
                                 config_.beta1, config_.beta2, config_.epsilon, inv_bc1, inv_bc2);
            break;
        }
      }
    };
    const int64_t num_chunks = static_cast<int64_t>(chunks_.size());
    if (total_ < kMinParallelElements || compute.num_threads <= 1) {
      run(0, num_chunks);
    } else {
      const int64_t grain = std::max<int64_t>(1, num_chunks * kMinParallelElements / total_ / 2);
      ParallelForEach(compute, num_chunks, grain,
                      [&](int, int64_t begin, int64_t end) { run(begin, end); });
    }
    return OkStatus();
  }

  std::vector<std::span<float>> State() override {
    std::vector<std::span<float>> out;
    if (!slot0_.empty()) out.emplace_back(slot0_);
    if (!slot1_.empty()) out.emplace_back(slot1_);
    return out;
  }

 private:
  const Kind kind_;
  const DenseOptimizerConfig config_;
  bool initialized_ = false;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> offsets_;  // of each param in the flat state vectors
  std::vector<Chunk> chunks_;
  int64_t total_ = 0;
  // Flat state over all params in Init order: sgd+momentum {velocity}, adagrad {accumulator},
  // adam/adamw {m, v}; plain sgd has none.
  std::vector<float> slot0_;
  std::vector<float> slot1_;
};

}  // namespace

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const DenseOptimizerConfig& config) {
  RECTRAIN_RETURN_IF_ERROR(ValidateDense(config));
  return std::unique_ptr<Optimizer>(std::make_unique<DenseOptimizer>(config.type, config));
}

}  // namespace rectrain::optim
