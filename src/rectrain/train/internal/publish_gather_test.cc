// A job's snapshot gathered on rank 0 (publish_gather.h), with ranks as threads (dist/inproc.h).
#include "rectrain/train/internal/publish_gather.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rectrain/dist/inproc.h"

namespace rectrain::train::internal {
namespace {

// Rank r's part: table "a" (dim 2) with r + 1 rows, table "b" (dim 3) with one row and a removed
// id; the dense parameters and OOV rows say which rank they came from.
serve::ModelSnapshot Part(int r) {
  serve::ModelSnapshot s;
  s.complete = false;
  s.dense.push_back({.name = "w", .values = {static_cast<float>(r)}});
  serve::SnapshotTable a{.name = "a", .dim = 2, .oov = {static_cast<float>(r), 0}};
  for (int i = 0; i <= r; ++i) {
    a.ids.push_back(static_cast<uint64_t>(100 * r + i));
    a.updates.push_back(static_cast<uint32_t>(i));
    a.rows.insert(a.rows.end(), {static_cast<float>(r), static_cast<float>(i)});
  }
  serve::SnapshotTable b{.name = "b", .dim = 3, .oov = {0, 0, 0}};
  b.ids = {static_cast<uint64_t>(1000 + r)};
  b.updates = {7};
  b.rows = {1.0f * r, 2.0f * r, 3.0f * r};
  b.removed = {static_cast<uint64_t>(5000 + r)};
  s.tables = {a, b};
  return s;
}

TEST(GatherSnapshot, RankZeroHoldsEveryRanksRowsInRankOrder) {
  for (int world : {1, 2, 3}) {
    std::vector<serve::ModelSnapshot> got(static_cast<size_t>(world));
    std::vector<Status> s = dist::RunRanks(world, [&](dist::Communicator& comm) -> Status {
      serve::ModelSnapshot mine = Part(comm.rank());
      RECTRAIN_RETURN_IF_ERROR(GatherSnapshot(comm, &mine));
      got[static_cast<size_t>(comm.rank())] = std::move(mine);
      return OkStatus();
    });
    for (const Status& st : s) ASSERT_TRUE(st.ok()) << st;
    // Rank 0: its own dense and OOV rows; every rank's rows and removed ids, rank by rank.
    serve::ModelSnapshot want = Part(0);
    for (int r = 1; r < world; ++r) {
      const serve::ModelSnapshot p = Part(r);
      for (size_t t = 0; t < 2; ++t) {
        auto& w = want.tables[t];
        const auto& q = p.tables[t];
        w.ids.insert(w.ids.end(), q.ids.begin(), q.ids.end());
        w.updates.insert(w.updates.end(), q.updates.begin(), q.updates.end());
        w.rows.insert(w.rows.end(), q.rows.begin(), q.rows.end());
        w.removed.insert(w.removed.end(), q.removed.begin(), q.removed.end());
      }
    }
    const serve::ModelSnapshot& root = got[0];
    EXPECT_EQ(root.dense[0].values, want.dense[0].values);
    for (size_t t = 0; t < 2; ++t) {
      EXPECT_EQ(root.tables[t].ids, want.tables[t].ids) << "world " << world << " table " << t;
      EXPECT_EQ(root.tables[t].updates, want.tables[t].updates);
      EXPECT_EQ(root.tables[t].rows, want.tables[t].rows);
      EXPECT_EQ(root.tables[t].removed, want.tables[t].removed);
      EXPECT_EQ(root.tables[t].oov, want.tables[t].oov);
    }
    for (int r = 1; r < world; ++r) {  // the others sent their rows away
      for (const auto& t : got[static_cast<size_t>(r)].tables) EXPECT_TRUE(t.ids.empty() && t.rows.empty());
    }
  }
}

TEST(GatherSnapshot, PartsOfOtherTablesAreRefusedOnRankZero) {
  std::vector<Status> s = dist::RunRanks(2, [&](dist::Communicator& comm) -> Status {
    serve::ModelSnapshot mine = Part(comm.rank());
    if (comm.rank() == 1) mine.tables.pop_back();
    return GatherSnapshot(comm, &mine);
  });
  EXPECT_EQ(s[0].code(), StatusCode::kInvalidArgument) << s[0];
  EXPECT_NE(s[0].message().find("different numbers of tables"), std::string::npos) << s[0];
  EXPECT_TRUE(s[1].ok()) << s[1];
}

}  // namespace
}  // namespace rectrain::train::internal
