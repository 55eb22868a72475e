#include "rectrain/train/internal/job_figures.h"

#include <gtest/gtest.h>

#include "rectrain/dist/inproc.h"

namespace rectrain::train::internal {
namespace {

config::LoadedConfig SmallConfig(const std::vector<std::string>& sets = {}) {
  auto c = config::LoadTrainConfigFromString(
      "threads: 1\ndata: {train: never_read.tsv}\nmodel: {type: deepfm, embedding_dim: 4, hidden: [8]}\n", "t.yaml", sets);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(JobFigures, OneProcessReportsItsOwnCountersWithoutRanks) {
  const config::LoadedConfig c = SmallConfig();
  auto single = dist::Communicator::Single();
  const Job job{.comm = single.get()};
  auto bundle = BuildModel(c.config, {"C1", "C2"}, {"I1"}, job);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  auto f = GatherJobFigures(*bundle, job, {.rows = 7, .rejected = 2});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->rejected, 2);
  EXPECT_EQ(f->tables.size(), 1u);  // deepfm: one table for every field
  EXPECT_TRUE(f->ranks.empty());
  EXPECT_TRUE(RankLines(f->ranks).empty());
}

TEST(JobFigures, AJobGathersEveryRanksFiguresInRankOrder) {
  const config::LoadedConfig c = SmallConfig();
  std::vector<JobFigures> got(3);
  auto status = dist::RunRanks(3, [&](dist::Communicator& comm) -> Status {
    const Job job{.comm = &comm};
    RECTRAIN_ASSIGN_OR_RETURN(ModelBundle bundle, BuildModel(c.config, {"C1", "C2"}, {"I1"}, job));
    RankInputs mine{.rows = 100 * (comm.rank() + 1), .rejected = comm.rank(), .allreduce_min_bytes = 40};
    mine.breakdown.forward = comm.rank();
    RECTRAIN_ASSIGN_OR_RETURN(got[static_cast<size_t>(comm.rank())], GatherJobFigures(bundle, job, mine));
    return OkStatus();
  });
  for (const Status& s : status) ASSERT_TRUE(s.ok()) << s;
  for (const JobFigures& f : got) {
    EXPECT_EQ(f.rejected, 0 + 1 + 2);
    ASSERT_EQ(f.ranks.size(), 3u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(f.ranks[static_cast<size_t>(r)].rank, r);
      EXPECT_EQ(f.ranks[static_cast<size_t>(r)].rows, 100 * (r + 1));
      EXPECT_DOUBLE_EQ(f.ranks[static_cast<size_t>(r)].breakdown.forward, r);
      EXPECT_EQ(f.ranks[static_cast<size_t>(r)].min_bytes_sent, 40);  // no exchange yet: the AllReduce's
    }
  }
}

TEST(JobFigures, RankLinesShowTheRatioToTheMinimumOnlyWhenThereIsOne) {
  RankFigures sync{.rank = 1, .rows = 500000, .ids_owned = 1210000, .bytes_sent = 2024, .min_bytes_sent = 2000};
  RankFigures async = sync;
  async.min_bytes_sent = 0;
  const std::vector<std::string> lines = RankLines({sync, async});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("rank 1: 500.0k rows, 1.21M ids owned, 2024B sent (1.012x the minimum) | wait 0.0s", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1].find("the minimum"), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace rectrain::train::internal
