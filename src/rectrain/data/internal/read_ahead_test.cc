#include "rectrain/data/internal/read_ahead.h"

#include <gtest/gtest.h>

namespace rectrain::data::internal {
namespace {

struct Recorder {
  std::vector<std::tuple<int, int64_t, int64_t>> hints;
  std::vector<int64_t> waits{0, 0};
  ReadAhead Make(std::vector<ReadAhead::Unit> units, int64_t window, int64_t max) {
    return ReadAhead(
        std::move(units), 2, window, max, [this](int f, int64_t o, int64_t n) { hints.emplace_back(f, o, n); },
        [this](int f) { return waits[f]; });
  }
};

std::vector<ReadAhead::Unit> TenUnits() {  // 10 units of 100 bytes, alternating files
  std::vector<ReadAhead::Unit> units;
  for (int i = 0; i < 10; ++i) units.push_back({i % 2, {{i * 100, 100}}});
  return units;
}

TEST(ReadAhead, HintsTheExactRangesOfTheUnitsAfterTheClaimWithinTheWindow) {
  Recorder r;
  ReadAhead ra = r.Make(TenUnits(), 250, 1000);
  ra.OnClaim(0);
  // Units 1..3 (300 bytes: the window is filled, then one unit over).
  ASSERT_EQ(r.hints.size(), 3u);
  EXPECT_EQ(r.hints[0], std::make_tuple(1, int64_t{100}, int64_t{100}));
  EXPECT_EQ(r.hints[2], std::make_tuple(1, int64_t{300}, int64_t{100}));
  ra.OnClaim(1);  // one unit consumed: one more hinted
  ASSERT_EQ(r.hints.size(), 4u);
  EXPECT_EQ(std::get<1>(r.hints[3]), 400);
  ra.OnClaim(1);  // a repeated claim changes nothing
  EXPECT_EQ(r.hints.size(), 4u);
}

TEST(ReadAhead, TheWindowDoublesWhenReadsWaitUpToTheCap) {
  Recorder r;
  ReadAhead ra = r.Make(TenUnits(), 100, 400);
  ra.OnClaim(0);
  EXPECT_EQ(ra.window(), 100);
  r.waits[1] = 1;  // a read of file 1 waited
  ra.OnClaim(1);
  EXPECT_EQ(ra.window(), 200);
  r.waits[1] = 5;
  ra.OnClaim(3);
  EXPECT_EQ(ra.window(), 400);
  r.waits[1] = 9;
  ra.OnClaim(5);
  EXPECT_EQ(ra.window(), 400);  // capped
  ra.OnClaim(9);
  EXPECT_EQ(r.hints.size(), 9u);  // every unit after the first, each once
}

}  // namespace
}  // namespace rectrain::data::internal
