// rectrain/base/stopwatch.h: monotonic wall-clock timing helpers.
// Thread safety: a value type.
#pragma once

#include <chrono>

namespace rectrain {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void Reset() { start_ = Clock::now(); }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace rectrain
