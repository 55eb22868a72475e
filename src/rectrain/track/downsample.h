// rectrain/track/downsample.h: reduces a metric series to at most `max_points` points for
// charts while keeping every local extreme a chart would show: the step range is cut into
// equal-width buckets and each bucket contributes its minimum and its maximum (in step order),
// plus the series' first and last points. A spike of one point is therefore never lost, unlike
// taking every k-th point.
// Thread safety: a MinMaxDownsampler is used by one thread; Downsample() is pure.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rectrain::track {

struct MetricPoint {
  int64_t step = 0;
  double value = 0.0;
  double wall_time = 0.0;  // Unix seconds.
  friend bool operator==(const MetricPoint&, const MetricPoint&) = default;
};

// Streaming form: feed points in non-decreasing step order, then Finish().
// Preconditions: count > 0 and first_step <= last_step are the totals of the points that
// will be fed; max_points >= 4 (callers clamp; see Downsample()).
class MinMaxDownsampler {
 public:
  MinMaxDownsampler(int64_t first_step, int64_t last_step, int64_t count, int64_t max_points);
  void Add(const MetricPoint& p);
  // Returns at most max_points points in non-decreasing step order.
  std::vector<MetricPoint> Finish();

 private:
  void FlushBucket();
  int64_t first_step_;
  int64_t num_buckets_;
  double bucket_width_;
  int64_t current_bucket_ = -1;
  bool have_first_ = false;
  MetricPoint first_{}, last_{}, min_{}, max_{};
  int64_t min_idx_ = 0, max_idx_ = 0, idx_ = 0;
  std::vector<MetricPoint> out_;
};

// Returns `points` unchanged when points.size() <= max_points or max_points <= 0 (no limit);
// else the min/max-bucket reduction. max_points in 1..3 is raised to 4 (first, last and one
// bucket's min and max are the least that keeps the extremes).
// Precondition: points sorted by step.
std::vector<MetricPoint> Downsample(std::span<const MetricPoint> points, int64_t max_points);

}  // namespace rectrain::track
