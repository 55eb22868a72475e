// rectrain/optim/lr_schedule.h: the learning-rate schedule (linear warm-up, then an optional
// decay), as a pure function of the 0-based global step. Formulas: docs/optimizers.md.
// Thread safety: pure functions over a value type.
//
// Example:
//   LrScheduleConfig lr{.lr = 1e-3f, .warmup_steps = 1000, .decay = "cosine",
//                       .decay_steps = 100000, .min_lr = 1e-5f};
//   RECTRAIN_RETURN_IF_ERROR(ValidateLrSchedule(lr)) << "while reading the training config";
//   optim::StepContext ctx{.step = step, .learning_rate = ScheduledLr(lr, step)};
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/base/status.h"

namespace rectrain::optim {

struct LrScheduleConfig {
  float lr = 1e-3f;            // peak learning rate, > 0
  int64_t warmup_steps = 0;    // linear ramp lr*(step+1)/warmup_steps for step < warmup_steps
  std::string decay = "none";  // none | linear | cosine | exponential | step
  int64_t decay_steps = 0;     // > 0 unless decay == none (counted after the warm-up)
  float decay_rate = 0.5f;     // exponential, step: in (0, 1]
  float min_lr = 0.0f;         // floor of every decay, in [0, lr]
};

// Returns InvalidArgument naming the field (`lr_schedule.<field>`), the value and the range.
[[nodiscard]] Status ValidateLrSchedule(const LrScheduleConfig& config);

// The learning rate for 0-based `step` (negative steps are treated as 0). Precondition:
// ValidateLrSchedule(config) is OK (otherwise the result is unspecified but finite-safe).
float ScheduledLr(const LrScheduleConfig& config, int64_t step);

}  // namespace rectrain::optim
