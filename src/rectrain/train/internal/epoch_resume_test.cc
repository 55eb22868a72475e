#include "rectrain/train/internal/epoch_resume.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace rectrain::train::internal {
namespace {

using checkpoint::CheckpointMeta;

CheckpointMeta Shards(std::vector<int64_t> rank_rows) {
  CheckpointMeta m;
  m.epoch = 1;
  m.world = static_cast<int>(rank_rows.size());
  m.data_split = "shards";
  for (int64_t r : rank_rows) m.rows_in_epoch += r;
  m.rank_rows_in_epoch = std::move(rank_rows);
  return m;
}

TEST(PlanEpochStart, AFreshRunAndTheSamePlanContinueEachStream) {
  auto fresh = PlanEpochStart(CheckpointMeta(), 3, 2);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->replay);
  EXPECT_EQ(fresh->skip, 0);
  EXPECT_TRUE(fresh->note.empty());

  auto same = PlanEpochStart(Shards({100, 120}), 2, 1);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->replay);
  EXPECT_EQ(same->skip, 120);

  CheckpointMeta one;  // one process (or batches): one stream
  one.rows_in_epoch = 500;
  auto batches = PlanEpochStart(one, 1, 0);
  ASSERT_TRUE(batches.ok());
  EXPECT_FALSE(batches->replay);
  EXPECT_EQ(batches->skip, 500);
}

TEST(PlanEpochStart, AnotherPlanReplaysTheOldStreams) {
  for (int world : {1, 3}) {
    auto s = PlanEpochStart(Shards({100, 120}), world, 0);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->replay);
    EXPECT_EQ(s->plan_world, 2);
    EXPECT_EQ(s->plan_rows, (std::vector<int64_t>{100, 120}));
    EXPECT_EQ(s->replay_rows, 0);
    EXPECT_NE(s->note.find("every row of the epoch is trained once"), std::string::npos) << s->note;
  }
  CheckpointMeta one;
  one.rows_in_epoch = 500;
  auto to_shards = PlanEpochStart(one, 4, 3);
  ASSERT_TRUE(to_shards.ok());
  EXPECT_TRUE(to_shards->replay);
  EXPECT_EQ(to_shards->plan_world, 1);
  EXPECT_EQ(to_shards->plan_rows, std::vector<int64_t>{500});
  // At an epoch boundary nothing was read of the epoch: any plan starts it afresh.
  auto boundary = PlanEpochStart(Shards({0, 0}), 3, 1);
  ASSERT_TRUE(boundary.ok());
  EXPECT_FALSE(boundary->replay);
}

TEST(PlanEpochStart, AReplayInProgressContinuesOnAnyPlan) {
  CheckpointMeta m = Shards({40, 60});  // written by 3 ranks in the middle of a replay of 2 shards
  m.world = 3;
  m.rank_rows_in_epoch = {10, 10, 10};
  m.plan_world = 2;
  m.plan_rows = {30, 40};
  for (int world : {1, 2, 5}) {
    auto s = PlanEpochStart(m, world, 0);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->replay);
    EXPECT_EQ(s->plan_world, 2);
    EXPECT_EQ(s->replay_rows, 100 - 70);
  }
  m.rows_in_epoch = 50;  // below what the plan had trained
  EXPECT_EQ(PlanEpochStart(m, 2, 0).status().code(), StatusCode::kDataLoss);
}

TEST(PlanEpochStart, PerRankRowsThatDoNotMatchTheWorldAreDataLoss) {
  CheckpointMeta m = Shards({1, 2});
  m.world = 3;
  EXPECT_EQ(PlanEpochStart(m, 2, 0).status().code(), StatusCode::kDataLoss);
}

// Stream `stream` of a fake pass: `rows` rows labelled stream * 1000 + row, after `skip`.
class FakeStream final : public data::BatchReader {
 public:
  FakeStream(int stream, int64_t rows, int64_t skip, int64_t batch)
      : stream_(stream), rows_(rows), next_(std::min(skip, rows)), batch_(batch) {
    stats_.rows_skipped = next_;
  }
  Result<std::optional<data::Batch>> Next() override {
    if (next_ == rows_) return std::optional<data::Batch>();
    data::Batch b;
    b.size = std::min(batch_, rows_ - next_);
    for (int64_t i = 0; i < b.size; ++i) b.labels.push_back(static_cast<float>(stream_ * 1000 + next_ + i));
    next_ += b.size;
    stats_.rows_read += b.size;
    return std::optional<data::Batch>(std::move(b));
  }
  data::ReaderStats Stats() const override { return stats_; }
  const std::vector<std::string>& dense_names() const override { return names_; }
  const std::vector<std::string>& sparse_names() const override { return names_; }

 private:
  int stream_;
  int64_t rows_, next_, batch_;
  data::ReaderStats stats_;
  std::vector<std::string> names_;
};

std::vector<float> ReadAllLabels(data::BatchReader& r) {
  std::vector<float> out;
  for (;;) {
    auto b = r.Next();
    EXPECT_TRUE(b.ok());
    if (!b.ok() || !b->has_value()) return out;
    out.insert(out.end(), (*b)->labels.begin(), (*b)->labels.end());
  }
}

TEST(OpenReplay, ReadsEveryOldStreamAfterItsRowsThenSkipsTheReplayedRows) {
  // Two old streams of 10 and 8 rows; 3 and 5 of them trained; 4 rows of the replay trained.
  EpochStart start;
  start.replay = true;
  start.plan_world = 2;
  start.plan_rows = {3, 5};
  start.replay_rows = 9;  // stream 0's last 7 rows, then 2 of stream 1's
  std::vector<int64_t> opened_skips;
  StreamOpener open = [&](int rank, int world, int64_t epoch, int64_t skip) -> Result<OpenedStream> {
    EXPECT_EQ(world, 2);
    EXPECT_EQ(epoch, 4);
    opened_skips.push_back(skip);
    OpenedStream s;
    s.reader = std::make_unique<FakeStream>(rank, rank == 0 ? 10 : 8, skip, 4);
    return s;
  };
  auto r = OpenReplay(start, 4, open);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ReadAllLabels(**r), (std::vector<float>{1007}));  // stream 1 rows 7: after 5 + the 2 left to skip
  EXPECT_EQ(opened_skips, (std::vector<int64_t>{3 + 9, 5 + 2}));
  EXPECT_EQ((*r)->Stats().rows_read, 1);
  EXPECT_EQ((*r)->Stats().rows_skipped, 10 + 7);

  start.replay_rows = 0;
  auto whole = OpenReplay(start, 4, open);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(ReadAllLabels(**whole), (std::vector<float>{3, 4, 5, 6, 7, 8, 9, 1005, 1006, 1007}));
}

}  // namespace
}  // namespace rectrain::train::internal
