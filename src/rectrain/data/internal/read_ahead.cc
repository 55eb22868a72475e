#include "rectrain/data/internal/read_ahead.h"

#include <algorithm>

namespace rectrain::data::internal {

ReadAhead::ReadAhead(std::vector<Unit> units, int num_files, int64_t initial_window, int64_t max_window, HintFn hint,
                     WaitsFn waits)
    : units_(std::move(units)),
      hint_(std::move(hint)),
      waits_(std::move(waits)),
      window_(std::min(initial_window, max_window)),
      max_window_(max_window),
      seen_waits_(static_cast<size_t>(num_files), 0) {
  unit_bytes_.reserve(units_.size());
  for (const Unit& u : units_) {
    int64_t b = 0;
    for (const auto& [offset, n] : u.ranges) b += n;
    unit_bytes_.push_back(b);
  }
}

int64_t ReadAhead::window() const {
  std::lock_guard<std::mutex> lock(mu_);
  return window_;
}

void ReadAhead::OnClaim(int64_t seq) {
  const int64_t count = static_cast<int64_t>(units_.size());
  if (seq < 0 || seq >= count) return;
  std::lock_guard<std::mutex> lock(mu_);
  // Units between the previous claim and this one are now being read: no longer ahead.
  for (int64_t u = consumer_ + 1; u <= seq && u < next_; ++u) ahead_ -= unit_bytes_[u];
  if (seq > consumer_) consumer_ = seq;
  next_ = std::max(next_, consumer_ + 1);
  // The claimed unit's file: if one of its reads waited since we last looked, the window was too
  // small for this consumer.
  const int file = units_[seq].file;
  const int64_t w = waits_(file);
  if (w > seen_waits_[file]) {
    seen_waits_[file] = w;
    window_ = std::min(max_window_, window_ * 2);
  }
  while (next_ < count && ahead_ < window_) {
    const Unit& u = units_[next_];
    for (const auto& [offset, n] : u.ranges) hint_(u.file, offset, n);
    ahead_ += unit_bytes_[next_];
    ++next_;
  }
}

}  // namespace rectrain::data::internal
