// rectrain/track/downsample.cc: see downsample.h.
#include "rectrain/track/downsample.h"

#include <algorithm>

namespace rectrain::track {

MinMaxDownsampler::MinMaxDownsampler(int64_t first_step, int64_t last_step, int64_t count,
                                     int64_t max_points)
    : first_step_(first_step) {
  // Two slots go to the first and last points, two per bucket to its min and max.
  num_buckets_ = std::max<int64_t>(1, (std::max<int64_t>(max_points, 4) - 2) / 2);
  double span = static_cast<double>(last_step - first_step) + 1.0;
  bucket_width_ = span / static_cast<double>(num_buckets_);
  out_.reserve(static_cast<size_t>(std::min<int64_t>(count, 2 * num_buckets_ + 2)));
}

void MinMaxDownsampler::Add(const MetricPoint& p) {
  if (!have_first_) {
    first_ = p;
    have_first_ = true;
    out_.push_back(p);
  }
  last_ = p;
  int64_t bucket = std::min<int64_t>(
      num_buckets_ - 1,
      static_cast<int64_t>(static_cast<double>(p.step - first_step_) / bucket_width_));
  if (bucket != current_bucket_) {
    FlushBucket();
    current_bucket_ = bucket;
    min_ = max_ = p;
    min_idx_ = max_idx_ = idx_;
  } else {
    if (p.value < min_.value) {
      min_ = p;
      min_idx_ = idx_;
    }
    if (p.value > max_.value) {
      max_ = p;
      max_idx_ = idx_;
    }
  }
  ++idx_;
}

void MinMaxDownsampler::FlushBucket() {
  if (current_bucket_ < 0) return;
  // Skip points already emitted as the series' first point (index 0).
  auto emit = [&](const MetricPoint& p, int64_t idx) {
    if (idx != 0) out_.push_back(p);
  };
  if (min_idx_ == max_idx_) {
    emit(min_, min_idx_);
  } else if (min_idx_ < max_idx_) {
    emit(min_, min_idx_);
    emit(max_, max_idx_);
  } else {
    emit(max_, max_idx_);
    emit(min_, min_idx_);
  }
}

std::vector<MetricPoint> MinMaxDownsampler::Finish() {
  FlushBucket();
  current_bucket_ = -1;
  int64_t last_idx = idx_ - 1;
  bool last_emitted = (last_idx == 0) || (min_idx_ == last_idx) || (max_idx_ == last_idx);
  if (have_first_ && !last_emitted) out_.push_back(last_);
  return std::move(out_);
}

std::vector<MetricPoint> Downsample(std::span<const MetricPoint> points, int64_t max_points) {
  if (max_points <= 0 || static_cast<int64_t>(points.size()) <= max_points) {
    return {points.begin(), points.end()};
  }
  MinMaxDownsampler ds(points.front().step, points.back().step,
                       static_cast<int64_t>(points.size()), max_points);
  for (const MetricPoint& p : points) ds.Add(p);
  return ds.Finish();
}

}  // namespace rectrain::track
