// rectrain/train/internal/run_log.h (internal to train/): train.log and the terminal of a run, and
// the number formats its lines use. In a job of several ranks only rank 0 keeps a RunLogger that
// writes; the others get a silent one (their errors reach their own stderr through the CLI).
// Thread safety: a RunLogger is used by the training thread only.
#pragma once

#include <fstream>
#include <string>

namespace rectrain::train::internal {

// "12.3k", "4.56M", "1.20G", "812".
std::string FormatCount(double v);
// "1h02m", "3m07s", "42s", "?" for unknown.
std::string FormatDuration(double seconds);
// printf("%.*f"), "nan" for NaN.
std::string Fixed(double v, int digits);
// printf("%g"): as many digits as the value needs, up to 6 ("2", "0.5", "0.001").
std::string Shortest(double v);
// getrusage's maximum resident set, in bytes.
int64_t PeakRssBytes();

// train.log always; stderr as plain lines, or a progress bar that log lines print above.
class RunLogger {
 public:
  // `path` empty: a silent logger (no file, no terminal).
  RunLogger(const std::string& path, bool echo, bool bar);
  ~RunLogger() { EndBar(); }
  bool bar() const { return bar_; }

  void Log(const std::string& line);
  void Bar(const std::string& text);
  void EndBar();

 private:
  std::ofstream file_;
  bool echo_;
  bool bar_;
  std::string bar_text_;
};

}  // namespace rectrain::train::internal
