#include "rectrain/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rectrain::optim {
namespace {

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError("lr_schedule." + field + " " + what);
}

template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Status ValidateLrSchedule(const LrScheduleConfig& c) {
  if (!(std::isfinite(c.lr) && c.lr > 0.0f)) return Bad("lr", "must be > 0, got " + Str(c.lr));
  if (c.warmup_steps < 0) {
    return Bad("warmup_steps", "must be >= 0, got " + Str(c.warmup_steps));
  }
  const bool known = c.decay == "none" || c.decay == "linear" || c.decay == "cosine" ||
                     c.decay == "exponential" || c.decay == "step";
  if (!known) {
    return Bad("decay", "is '" + c.decay +
                            "'; valid values: none, linear, cosine, exponential, step");
  }
  if (c.decay != "none" && c.decay_steps <= 0) {
    return Bad("decay_steps", "must be > 0 when lr_schedule.decay is '" + c.decay + "', got " +
                                  Str(c.decay_steps));
  }
  if ((c.decay == "exponential" || c.decay == "step") &&
      !(c.decay_rate > 0.0f && c.decay_rate <= 1.0f)) {
    return Bad("decay_rate", "must be in (0, 1] when lr_schedule.decay is '" + c.decay +
                                 "', got " + Str(c.decay_rate));
  }
  if (!(c.min_lr >= 0.0f && c.min_lr <= c.lr)) {
    return Bad("min_lr", "must be in [0, lr_schedule.lr = " + Str(c.lr) + "], got " +
                             Str(c.min_lr));
  }
  return OkStatus();
}

float ScheduledLr(const LrScheduleConfig& c, int64_t step) {
  step = std::max<int64_t>(step, 0);
  if (step < c.warmup_steps) {
    return static_cast<float>(static_cast<double>(c.lr) * static_cast<double>(step + 1) /
                              static_cast<double>(c.warmup_steps));
  }
  const double t = static_cast<double>(step - c.warmup_steps);
  const double lr = c.lr;
  const double min_lr = c.min_lr;
  const double span = c.decay_steps > 0 ? static_cast<double>(c.decay_steps) : 1.0;
  double out = lr;
  if (c.decay == "linear") {
    const double frac = std::min(t / span, 1.0);
    out = lr - (lr - min_lr) * frac;
  } else if (c.decay == "cosine") {
    const double frac = std::min(t / span, 1.0);
    out = min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * frac));
  } else if (c.decay == "exponential") {
    out = std::max(min_lr, lr * std::pow(static_cast<double>(c.decay_rate), t / span));
  } else if (c.decay == "step") {
    out = std::max(min_lr, lr * std::pow(static_cast<double>(c.decay_rate), std::floor(t / span)));
  }
  return static_cast<float>(out);
}

}  // namespace rectrain::optim
