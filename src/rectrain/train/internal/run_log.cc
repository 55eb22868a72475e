#include "rectrain/train/internal/run_log.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace rectrain::train::internal {

std::string FormatCount(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  } else if (v >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[32];
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s / 60) % 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

std::string Fixed(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Shortest(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

RunLogger::RunLogger(const std::string& path, bool echo, bool bar)
    : echo_(echo && !path.empty()), bar_(bar && echo_) {
  if (!path.empty()) file_.open(path, std::ios::app);
}

void RunLogger::Log(const std::string& line) {
  if (file_) file_ << line << "\n" << std::flush;
  if (!echo_) return;
  if (bar_ && !bar_text_.empty()) {
    std::fprintf(stderr, "\r\033[K%s\n%s", line.c_str(), bar_text_.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void RunLogger::Bar(const std::string& text) {
  if (!bar_) return;
  bar_text_ = text;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

void RunLogger::EndBar() {
  if (bar_ && !bar_text_.empty()) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    bar_text_.clear();
  }
}

}  // namespace rectrain::train::internal
