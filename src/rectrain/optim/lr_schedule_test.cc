#include "rectrain/optim/lr_schedule.h"

#include <gtest/gtest.h>

namespace rectrain::optim {
namespace {

LrScheduleConfig Cfg(const char* decay, int64_t warmup = 0, int64_t steps = 100) {
  LrScheduleConfig c;
  c.lr = 0.1f;
  c.warmup_steps = warmup;
  c.decay = decay;
  c.decay_steps = steps;
  c.min_lr = 0.01f;
  return c;
}

TEST(LrScheduleTest, Values) {
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("none"), 0), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("none"), 123456), 0.1f);
  // Warm-up: lr * (step + 1) / warmup_steps, then the decay starts at t = 0.
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("none", 4), 0), 0.025f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("none", 4), 3), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("linear", 4), 4), 0.1f);
  // linear: lr - (lr - min_lr) * t / decay_steps, clamped at min_lr.
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("linear"), 50), 0.055f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("linear"), 100), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("linear"), 1000), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("linear", 10), 60), 0.055f);
  // cosine: min + (lr - min) * (1 + cos(pi t / T)) / 2.
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("cosine"), 0), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("cosine"), 50), 0.055f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("cosine"), 100), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("cosine"), 500), 0.01f);
  // exponential: max(min, lr * rate^(t/T)); step: max(min, lr * rate^floor(t/T)).
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("exponential"), 100), 0.05f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("exponential"), 50), 0.1f * 0.70710678f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("exponential"), 10000), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("step"), 99), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("step"), 100), 0.05f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("step"), 250), 0.025f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("step"), 100000), 0.01f);
  EXPECT_FLOAT_EQ(ScheduledLr(Cfg("none"), -5), 0.1f);
}

TEST(LrScheduleTest, Validation) {
  EXPECT_TRUE(ValidateLrSchedule(Cfg("cosine")).ok());
  EXPECT_TRUE(ValidateLrSchedule(LrScheduleConfig{}).ok());
  LrScheduleConfig c = Cfg("poly");
  EXPECT_EQ(ValidateLrSchedule(c).ToString(),
            "INVALID_ARGUMENT: lr_schedule.decay is 'poly'; valid values: none, linear, cosine, "
            "exponential, step");
  c = Cfg("cosine", 0, 0);
  EXPECT_EQ(ValidateLrSchedule(c).message(),
            "lr_schedule.decay_steps must be > 0 when lr_schedule.decay is 'cosine', got 0");
  c = Cfg("none");
  c.lr = 0.0f;
  EXPECT_EQ(ValidateLrSchedule(c).message(), "lr_schedule.lr must be > 0, got 0");
  c = Cfg("none", -1);
  EXPECT_EQ(ValidateLrSchedule(c).message(), "lr_schedule.warmup_steps must be >= 0, got -1");
  c = Cfg("step");
  c.decay_rate = 1.5f;
  EXPECT_EQ(ValidateLrSchedule(c).message(),
            "lr_schedule.decay_rate must be in (0, 1] when lr_schedule.decay is 'step', got 1.5");
  c = Cfg("none");
  c.min_lr = 0.5f;
  EXPECT_EQ(ValidateLrSchedule(c).message(),
            "lr_schedule.min_lr must be in [0, lr_schedule.lr = 0.1], got 0.5");
}

}  // namespace
}  // namespace rectrain::optim
