// Tests for the min/max bucket downsampler.
#include "rectrain/track/downsample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace rectrain::track {
namespace {

std::vector<MetricPoint> Series(int64_t n) {
  std::vector<MetricPoint> pts;
  for (int64_t i = 0; i < n; ++i) {
    pts.push_back({i * 10, std::sin(static_cast<double>(i) * 0.01), static_cast<double>(i)});
  }
  return pts;
}

bool Contains(const std::vector<MetricPoint>& v, const MetricPoint& p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

TEST(DownsampleTest, ShortSeriesIsReturnedUnchanged) {
  auto pts = Series(50);
  EXPECT_EQ(Downsample(pts, 50), pts);
  EXPECT_EQ(Downsample(pts, 0), pts);
  EXPECT_EQ(Downsample(pts, -1), pts);
}

TEST(DownsampleTest, KeepsSpikesFirstLastAndStaysWithinBudget) {
  auto pts = Series(100000);
  // Isolated one-point spikes that every-k-th sampling would miss.
  for (int64_t idx : {12345, 54321, 77777, 99998}) pts[idx].value = 50.0 + static_cast<double>(idx);
  pts[31337].value = -80.0;
  for (int64_t max_points : {4, 5, 100, 201, 1000}) {
    auto out = Downsample(pts, max_points);
    SCOPED_TRACE("max_points=" + std::to_string(max_points));
    EXPECT_LE(static_cast<int64_t>(out.size()), max_points);
    EXPECT_EQ(out.front(), pts.front());
    EXPECT_EQ(out.back(), pts.back());
    EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                               [](auto& a, auto& b) { return a.step < b.step; }));
    EXPECT_TRUE(Contains(out, pts[31337]));  // global minimum
    EXPECT_TRUE(Contains(out, pts[99998]));  // global maximum
    if (max_points >= 100) {
      for (int64_t idx : {12345, 54321, 77777}) EXPECT_TRUE(Contains(out, pts[idx])) << idx;
    }
  }
}

TEST(DownsampleTest, EveryBucketContributesItsMinAndMax) {
  auto pts = Series(10000);  // steps 0..99990
  const int64_t max_points = 102;  // 50 buckets
  auto out = Downsample(pts, max_points);
  const double width = (99990.0 + 1.0) / 50.0;
  for (int64_t b = 0; b < 50; ++b) {
    const MetricPoint* mn = nullptr;
    const MetricPoint* mx = nullptr;
    for (const auto& p : pts) {
      if (static_cast<int64_t>(static_cast<double>(p.step) / width) != b) continue;
      if (mn == nullptr || p.value < mn->value) mn = &p;
      if (mx == nullptr || p.value > mx->value) mx = &p;
    }
    ASSERT_NE(mn, nullptr);
    EXPECT_TRUE(Contains(out, *mn)) << "bucket " << b;
    EXPECT_TRUE(Contains(out, *mx)) << "bucket " << b;
  }
}

TEST(DownsampleTest, TinyBudgetIsRaisedToFour) {
  auto pts = Series(10);
  pts[4].value = 9.0;
  pts[6].value = -9.0;
  auto out = Downsample(pts, 1);
  EXPECT_EQ(out.size(), 4u);
  EXPECT_TRUE(Contains(out, pts[4]));
  EXPECT_TRUE(Contains(out, pts[6]));
}

TEST(DownsampleTest, AllPointsOnOneStep) {
  std::vector<MetricPoint> pts;
  for (int i = 0; i < 20; ++i) pts.push_back({7, static_cast<double>(i % 5), 0.0});
  auto out = Downsample(pts, 6);
  EXPECT_LE(out.size(), 6u);
  EXPECT_TRUE(Contains(out, MetricPoint{7, 4.0, 0.0}));
  EXPECT_TRUE(Contains(out, MetricPoint{7, 0.0, 0.0}));
}

}  // namespace
}  // namespace rectrain::track
