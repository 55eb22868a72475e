// The pass planner: unit shares partition the pass and balance the weight, shuffles depend only
// on (seed, epoch), batch slices partition every batch; and every reader (criteo text, Parquet
// row groups, sample-cache blocks) honours ReadOptions::rank/world: the ranks' rows together are
// exactly the single-process pass, each row once.
#include "rectrain/data/pass_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "rectrain/data/cache.h"
#include "rectrain/data/internal/test_util.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::Rows;
using test_util::TempDir;

TEST(PlanPassUnits, SharesPartitionThePassAndBalanceTheWeight) {
  std::vector<int64_t> weights;
  for (int i = 0; i < 37; ++i) weights.push_back(100 + (i * 37) % 61);
  const int64_t total = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  for (bool shuffle : {false, true}) {
    for (int world : {1, 2, 3, 4, 7}) {
      std::vector<int> seen(weights.size(), 0);
      std::vector<int64_t> all_ranks;
      for (int r = 0; r < world; ++r) {
        const std::vector<int64_t> mine = PlanPassUnits(weights, shuffle, 5, 2, r, world);
        int64_t w = 0;
        for (int64_t u : mine) {
          ++seen[static_cast<size_t>(u)];
          w += weights[static_cast<size_t>(u)];
          all_ranks.push_back(u);
        }
        // Within one unit (max weight 160) of the even share.
        EXPECT_LE(std::abs(static_cast<double>(w) - static_cast<double>(total) / world), 161.0)
            << "world " << world << " rank " << r << " shuffle " << shuffle;
      }
      for (int c : seen) EXPECT_EQ(c, 1);
      // The ranks' stretches in rank order are the single-process order: contiguous shares.
      EXPECT_EQ(all_ranks, PlanPassUnits(weights, shuffle, 5, 2, 0, 1)) << world;
    }
  }
}

TEST(PlanPassUnits, OrderDependsOnlyOnSeedAndEpoch) {
  const std::vector<int64_t> w(50, 1);
  const auto a = PlanPassUnits(w, true, 1, 0, 0, 1);
  EXPECT_EQ(a, PlanPassUnits(w, true, 1, 0, 0, 1));
  EXPECT_NE(a, PlanPassUnits(w, true, 1, 1, 0, 1));
  EXPECT_NE(a, PlanPassUnits(w, true, 2, 0, 0, 1));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_EQ(PlanPassUnits(w, false, 1, 0, 0, 1), identity);
}

TEST(PlanPassUnits, FewerUnitsThanRanksLeavesSomeRanksEmpty) {
  const std::vector<int64_t> w = {10, 10};
  int empty = 0;
  for (int r = 0; r < 4; ++r) empty += PlanPassUnits(w, false, 0, 0, r, 4).empty() ? 1 : 0;
  EXPECT_EQ(empty, 2);
  // Zero weights split by count.
  const std::vector<int64_t> zeros(6, 0);
  EXPECT_EQ(PlanPassUnits(zeros, false, 0, 0, 1, 3), (std::vector<int64_t>{2, 3}));
}

TEST(SliceOfBatch, PartitionsEveryBatchSize) {
  for (int world : {1, 2, 3, 4, 5}) {
    for (int64_t rows : {0, 1, 2, 3, 4, 7, 100, 4096}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const RowRange s = SliceOfBatch(rows, r, world);
        EXPECT_EQ(s.begin, next);
        EXPECT_GE(s.size(), rows / world);
        EXPECT_LE(s.size(), rows / world + 1);
        next = s.end;
      }
      EXPECT_EQ(next, rows);
    }
  }
  EXPECT_EQ(SliceOfBatch(10, 0, 3).size(), 4);  // the first ranks take the extra rows
  EXPECT_EQ(SliceOfBatch(10, 2, 3).size(), 3);
}

TEST(ValidateRankShare, RejectsRanksOutsideTheWorld) {
  ReadOptions o;
  EXPECT_TRUE(ValidateRankShare(o).ok());
  o.world = 2;
  o.rank = 2;
  EXPECT_EQ(ValidateRankShare(o).code(), StatusCode::kInvalidArgument);
  o.rank = -1;
  EXPECT_EQ(ValidateRankShare(o).code(), StatusCode::kInvalidArgument);
  o.rank = 0;
  o.world = 0;
  EXPECT_EQ(ValidateRankShare(o).code(), StatusCode::kInvalidArgument);
}

std::string CriteoRows(int n, int salt) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::to_string((i + salt) % 2) + "\t" + std::to_string(i) + "\t" + std::to_string(salt) + "\tid" +
         std::to_string(i * 7 + salt) + "\tc" + std::to_string(i % 13) + "\n";
  }
  return s;
}

DataConfig Criteo(const std::vector<std::string>& files) {
  DataConfig c;
  c.files = files;
  c.schema.criteo_dense = 2;
  c.schema.criteo_sparse = 2;
  c.cache = CacheMode::kOff;
  return c;
}

// (label, dense..., ids...) of every row, as a multiset key.
std::map<std::vector<double>, int> RowSet(const Rows& rows) {
  std::map<std::vector<double>, int> out;
  for (size_t r = 0; r < rows.labels.size(); ++r) {
    std::vector<double> key = {rows.labels[r]};
    for (float d : rows.dense[r]) key.push_back(d);
    for (uint64_t id : rows.ids[r]) key.push_back(static_cast<double>(id));
    ++out[key];
  }
  return out;
}

// Reads `config` as every rank of `world` and checks the shares against the whole pass.
void ExpectRankSharesPartition(const DataConfig& config, ReadOptions o, int world) {
  o.world = 1;
  o.rank = 0;
  auto whole = ReadAll(config, o);
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::map<std::vector<double>, int> merged;
  int64_t rows = 0, min_rows = INT64_MAX, max_rows = 0;
  for (int r = 0; r < world; ++r) {
    o.world = world;
    o.rank = r;
    auto share = ReadAll(config, o);
    ASSERT_TRUE(share.ok()) << share.status();
    const int64_t n = static_cast<int64_t>(share->labels.size());
    rows += n;
    min_rows = std::min(min_rows, n);
    max_rows = std::max(max_rows, n);
    for (const auto& [k, c] : RowSet(*share)) merged[k] += c;
  }
  EXPECT_EQ(rows, static_cast<int64_t>(whole->labels.size()));
  EXPECT_EQ(merged, RowSet(*whole)) << "world " << world;
  EXPECT_GT(min_rows, 0) << "world " << world;
}

TEST(RankShares, TextChunksPartitionThePass) {
  TempDir dir;
  const std::string a = dir.Write("a.tsv", CriteoRows(3000, 1));
  const std::string b = dir.Write("b.tsv", CriteoRows(1000, 2));
  ReadOptions o;
  o.batch_size = 128;
  o.chunk_bytes = 4096;  // ~40 chunks
  for (int world : {2, 3, 4}) {
    ExpectRankSharesPartition(Criteo({a, b}), o, world);
    o.shuffle = true;
    o.shuffle_buffer_rows = 500;
    o.epoch = 3;
    ExpectRankSharesPartition(Criteo({a, b}), o, world);
    o.shuffle = false;
  }
}

TEST(RankShares, TextSharesAreBalancedByBytesNotFiles) {
  TempDir dir;
  // One large file and three tiny ones: by file count rank 0 would get 3000 of 3030 rows.
  std::vector<std::string> files = {dir.Write("a.tsv", CriteoRows(3000, 1))};
  for (int i = 0; i < 3; ++i) files.push_back(dir.Write("t" + std::to_string(i) + ".tsv", CriteoRows(10, 3 + i)));
  ReadOptions o;
  o.chunk_bytes = 2048;
  o.world = 2;
  std::vector<int64_t> n;
  for (int r = 0; r < 2; ++r) {
    o.rank = r;
    auto share = ReadAll(Criteo(files), o);
    ASSERT_TRUE(share.ok()) << share.status();
    n.push_back(static_cast<int64_t>(share->labels.size()));
  }
  EXPECT_NEAR(static_cast<double>(n[0]), 1515.0, 120.0);
  EXPECT_NEAR(static_cast<double>(n[1]), 1515.0, 120.0);
}

#ifdef RECTRAIN_PARQUET_FIXTURES
TEST(RankShares, ParquetRowGroupsPartitionThePass) {
  DataConfig c;
  c.files = {std::string(RECTRAIN_PARQUET_FIXTURES) + "/pqwasm_snappy_v1.parquet"};
  c.schema.format = DataFormat::kParquet;
  c.schema.label = "label";
  c.schema.dense = {"i32", "f64"};
  c.schema.sparse = {"c_low", "s_high"};
  c.cache = CacheMode::kOff;
  ReadOptions o;
  o.batch_size = 100;
  for (int world : {2, 3}) ExpectRankSharesPartition(c, o, world);
}
#endif

TEST(RankShares, CacheBlocksPartitionThePass) {
  TempDir dir;
  const std::string a = dir.Write("a.tsv", CriteoRows(5000, 1));
  CacheWriteOptions w;
  w.block_rows = 256;
  const std::string rtc = dir.Path("a.rtc");
  ASSERT_TRUE(BuildCache(Criteo({a}), ReadOptions(), w, rtc).ok());
  DataConfig c = Criteo({rtc});
  ReadOptions o;
  o.batch_size = 100;
  for (int world : {2, 3, 4}) {
    ExpectRankSharesPartition(c, o, world);
    o.shuffle = true;
    o.shuffle_buffer_rows = 300;
    ExpectRankSharesPartition(c, o, world);
    o.shuffle = false;
  }
}

TEST(SliceBatches, EveryRankGetsItsSliceOfEveryBatch) {
  TempDir dir;
  const std::string a = dir.Write("a.tsv", CriteoRows(1003, 1));
  ReadOptions o;
  o.batch_size = 100;
  auto whole = ReadAll(Criteo({a}), o);
  ASSERT_TRUE(whole.ok());
  const int world = 3;
  std::vector<std::vector<int64_t>> sizes(world);
  std::vector<float> labels_in_order;  // rank 0's slice, then 1's, ... per batch
  std::vector<std::vector<float>> per_rank(world);
  for (int r = 0; r < world; ++r) {
    auto inner = OpenBatchReader(Criteo({a}), o);
    ASSERT_TRUE(inner.ok());
    std::unique_ptr<BatchReader> reader = SliceBatches(std::move(*inner), r, world);
    while (true) {
      auto b = reader->Next();
      ASSERT_TRUE(b.ok());
      if (!b->has_value()) break;
      sizes[r].push_back((*b)->size);
      per_rank[r].insert(per_rank[r].end(), (*b)->labels.begin(), (*b)->labels.end());
      reader->Recycle(std::move(**b));
    }
    EXPECT_EQ(reader->Stats().rows_read, static_cast<int64_t>(per_rank[r].size()));
  }
  // Same number of batches everywhere; slices put back together give the whole pass in order.
  ASSERT_EQ(sizes[0].size(), whole->batch_sizes.size());
  size_t at[3] = {0, 0, 0};
  std::vector<float> rebuilt;
  for (size_t k = 0; k < sizes[0].size(); ++k) {
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(sizes[r].size(), sizes[0].size());
      EXPECT_EQ(sizes[r][k], SliceOfBatch(whole->batch_sizes[k], r, world).size());
      rebuilt.insert(rebuilt.end(), per_rank[r].begin() + at[r], per_rank[r].begin() + at[r] + sizes[r][k]);
      at[r] += sizes[r][k];
    }
  }
  EXPECT_EQ(rebuilt, whole->labels);
}

}  // namespace
}  // namespace rectrain::data

namespace rectrain::data {
namespace {

// A binary file given to a text format says what it is, instead of a field-count error.
TEST(BinaryInputAsText, ParquetAndCacheFilesAreNamed) {
  TempDir dir;
#ifdef RECTRAIN_PARQUET_FIXTURES
  {
    DataConfig c = Criteo({std::string(RECTRAIN_PARQUET_FIXTURES) + "/duckdb_snappy_v1.parquet"});
    c.schema.format = DataFormat::kCriteo;
    auto r = OpenBatchReader(c, ReadOptions());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("is a Parquet file (it starts with PAR1) but data.format is criteo; "
                                        "set data.format: parquet"),
              std::string::npos)
        << r.status();
  }
#endif
  const std::string a = dir.Write("a.tsv", CriteoRows(100, 1));
  const std::string disguised = dir.Path("rows.dat");  // a cache file without the .rtc extension
  ASSERT_TRUE(BuildCache(Criteo({a}), ReadOptions(), CacheWriteOptions{}, disguised).ok());
  auto r = OpenBatchReader(Criteo({disguised}), ReadOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a rectrain sample cache (it starts with RTCACHE)"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("set data.format: cache"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace rectrain::data
