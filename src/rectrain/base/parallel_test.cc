#include "rectrain/base/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace rectrain {
namespace {

TEST(ParallelForTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      ComputeContext ctx{.num_threads = threads};
      Status s = ParallelFor(ctx, n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
        return OkStatus();
      });
      ASSERT_TRUE(s.ok());
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ParallelForTest, ReturnsAnErrorFromAWorker) {
  ComputeContext ctx{.num_threads = 2};
  Status s = ParallelFor(ctx, 100, 1, [&](int64_t b, int64_t e) -> Status {
    if (b <= 99 && 99 < e) return DataLossError("row 99");
    return OkStatus();
  });
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "row 99");
}

TEST(ParallelForTest, GrainLimitsRanges) {
  ComputeContext ctx{.num_threads = 8};
  EXPECT_EQ(NumRanges(ctx, 10, 100), 1);
  EXPECT_EQ(NumRanges(ctx, 1000, 100), 8);
  EXPECT_EQ(NumRanges(ctx, 0, 1), 0);
}

}  // namespace
}  // namespace rectrain
