// Tests of the in-memory epoch cache (memory_split.h), the epoch orders (epoch_order.h) and the
// per-pass reader factory over them (epoch_source.h).
#include "rectrain/data/epoch_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "rectrain/data/epoch_order.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/memory_split.h"

namespace rectrain::data {
namespace {

using test_util::TempDir;

// ---------------------------------------------------------------- MemorySplit

// A batch whose row r (global index base + r) has label r%2, dense {r, -r}, field 0 id r,
// field 1 (multi when `multi`) ids {r, r+1, ..} of length r%3, and group key r/7.
Batch MakeBatch(int64_t base, int64_t n, bool multi) {
  Batch b;
  b.size = n;
  b.num_dense = 2;
  b.sparse.resize(2);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = base + i;
    b.labels.push_back(static_cast<float>(r % 2));
    b.dense.push_back(static_cast<float>(r));
    b.dense.push_back(static_cast<float>(-r));
    b.sparse[0].ids.push_back(static_cast<uint64_t>(r));
    b.group_keys.push_back(static_cast<uint64_t>(r / 7));
  }
  if (multi) {
    b.sparse[1].offsets.push_back(0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = base + i;
      for (int64_t k = 0; k < r % 3; ++k) b.sparse[1].ids.push_back(static_cast<uint64_t>(r + k));
      b.sparse[1].offsets.push_back(static_cast<int32_t>(b.sparse[1].ids.size()));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) b.sparse[1].ids.push_back(static_cast<uint64_t>(1000000 + base + i));
  }
  return b;
}

// Row `r` as MakeBatch made it, given whether its batch was multi-valued in field 1.
void ExpectRow(const Batch& b, int64_t i, int64_t r, bool multi) {
  SCOPED_TRACE("output row " + std::to_string(i) + " = input row " + std::to_string(r));
  EXPECT_EQ(b.labels[i], static_cast<float>(r % 2));
  EXPECT_EQ(b.dense[i * 2], static_cast<float>(r));
  EXPECT_EQ(b.dense[i * 2 + 1], static_cast<float>(-r));
  EXPECT_EQ(b.sparse[0].ids[b.sparse[0].RowBegin(i)], static_cast<uint64_t>(r));
  std::vector<uint64_t> got(b.sparse[1].ids.begin() + b.sparse[1].RowBegin(i),
                            b.sparse[1].ids.begin() + b.sparse[1].RowEnd(i));
  std::vector<uint64_t> want;
  if (multi) {
    for (int64_t k = 0; k < r % 3; ++k) want.push_back(static_cast<uint64_t>(r + k));
  } else {
    want.push_back(static_cast<uint64_t>(1000000 + r));
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(b.group_keys[i], static_cast<uint64_t>(r / 7));
}

TEST(MemorySplitTest, GathersAnyRowsAcrossBlocksAndMixedCsr) {
  auto budget = std::make_shared<MemoryBudget>(int64_t{1} << 30);
  MemorySplitBuilder builder(budget, {"d0", "d1"}, {"s0", "s1"});
  // Field 1 is single-valued in the first batches and multi-valued later: earlier blocks are
  // converted. More than one block (kBlockRows) so gathers cross block boundaries.
  const int64_t first = MemorySplit::kBlockRows + 123;
  ASSERT_TRUE(builder.Append(MakeBatch(0, first, false)).ok());
  ASSERT_TRUE(builder.Append(MakeBatch(first, 0, false)).ok());  // empty batches are fine
  ASSERT_TRUE(builder.Append(MakeBatch(first, 5000, true)).ok());
  const int64_t total = first + 5000;
  EXPECT_EQ(builder.rows(), total);
  EXPECT_EQ(budget->used_bytes(), builder.bytes());
  auto split = builder.Finish();
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ((*split)->rows(), total);
  EXPECT_TRUE((*split)->has_group_keys());
  EXPECT_EQ(budget->used_bytes(), (*split)->bytes());
  // Compact: one 40-byte record per row (label + 2 dense = 2 words, 2 field slots, group key)
  // plus the pool of multi-valued ids (the converted rows' ids too), at most doubled.
  EXPECT_GE((*split)->bytes(), total * 40);
  EXPECT_LE((*split)->bytes(), total * 40 + 2 * (first + 5000) * 8 + 64 * 1024);

  std::vector<uint32_t> rows = {0, static_cast<uint32_t>(MemorySplit::kBlockRows - 1),
                                static_cast<uint32_t>(MemorySplit::kBlockRows), static_cast<uint32_t>(total - 1),
                                static_cast<uint32_t>(first), 17, static_cast<uint32_t>(first + 2), 17};
  Batch out;
  (*split)->Gather(rows, &out);
  ASSERT_EQ(out.size, static_cast<int64_t>(rows.size()));
  ASSERT_FALSE(out.sparse[1].single_valued());  // multi-valued in any batch -> CSR everywhere
  EXPECT_TRUE(out.sparse[0].single_valued());
  for (size_t i = 0; i < rows.size(); ++i) {
    ExpectRow(out, static_cast<int64_t>(i), rows[i], rows[i] >= first);
  }
  // A second gather into the same batch reuses it and leaves no stale rows.
  std::vector<uint32_t> two = {3, 2};
  (*split)->Gather(two, &out);
  ASSERT_EQ(out.size, 2);
  EXPECT_EQ(out.labels.size(), 2u);
  EXPECT_EQ(out.sparse[1].offsets.size(), 3u);
  ExpectRow(out, 0, 3, false);
  ExpectRow(out, 1, 2, false);
  split->reset();
  EXPECT_EQ(budget->used_bytes(), 0) << "a destroyed split returns its bytes to the budget";
}

TEST(MemorySplitTest, BudgetExceededIsResourceExhaustedAndReleased) {
  auto budget = std::make_shared<MemoryBudget>(100 * 1024);
  {
    MemorySplitBuilder builder(budget, {"d0", "d1"}, {"s0", "s1"});
    Status s;
    int64_t appended = 0;
    for (int i = 0; i < 100 && s.ok(); ++i) {
      s = builder.Append(MakeBatch(appended, 256, false));
      appended += 256;
    }
    ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
    EXPECT_NE(s.message().find("data.memory_cache_bytes"), std::string::npos) << s;
    EXPECT_LE(budget->used_bytes(), budget->limit_bytes());
    EXPECT_EQ(builder.Append(MakeBatch(0, 1, false)).code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(budget->used_bytes(), 0);
}

TEST(MemorySplitTest, RejectsBatchesOfAnotherShape) {
  auto budget = std::make_shared<MemoryBudget>(int64_t{1} << 30);
  MemorySplitBuilder builder(budget, {"d0"}, {"s0", "s1"});
  EXPECT_EQ(builder.Append(MakeBatch(0, 4, false)).code(), StatusCode::kInvalidArgument);  // 2 dense
  MemorySplitBuilder b2(budget, {"d0", "d1"}, {"s0", "s1"});
  ASSERT_TRUE(b2.Append(MakeBatch(0, 4, false)).ok());
  Batch no_keys = MakeBatch(4, 4, false);
  no_keys.group_keys.clear();
  EXPECT_EQ(b2.Append(no_keys).code(), StatusCode::kInvalidArgument);
  Batch bad_csr = MakeBatch(8, 4, true);
  bad_csr.sparse[1].offsets.pop_back();
  MemorySplitBuilder b3(budget, {"d0", "d1"}, {"s0", "s1"});
  EXPECT_EQ(b3.Append(bad_csr).code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- epoch orders

bool IsPermutation(std::vector<uint32_t> order, int64_t n) {
  if (static_cast<int64_t>(order.size()) != n) return false;
  std::sort(order.begin(), order.end());
  for (int64_t i = 0; i < n; ++i) {
    if (order[static_cast<size_t>(i)] != static_cast<uint32_t>(i)) return false;
  }
  return true;
}

TEST(EpochOrderTest, PermutedOrderIsDeterministicPerSeedAndEpoch) {
  const auto a = PermutedOrder(5000, 1, 0);
  EXPECT_TRUE(IsPermutation(a, 5000));
  EXPECT_EQ(a, PermutedOrder(5000, 1, 0));
  EXPECT_NE(a, PermutedOrder(5000, 1, 1));
  EXPECT_NE(a, PermutedOrder(5000, 2, 0));
  EXPECT_NE(a, IdentityOrder(5000));
  EXPECT_TRUE(PermutedOrder(0, 1, 0).empty());
}

TEST(EpochOrderTest, GoldenStrideIsCoprimeAndNearBOverPhi) {
  for (int64_t b : {1, 2, 3, 4, 10, 100, 101, 245, 1000, 4096}) {
    const int64_t m = GoldenStride(b);
    EXPECT_GE(m, 1);
    if (b > 2) {
      EXPECT_LT(m, b);
      EXPECT_EQ(std::gcd(m, b), 1) << b;
      EXPECT_LE(std::abs(static_cast<double>(m) - static_cast<double>(b) / 1.6180339887), 3.0) << b;
    }
  }
}

// Keys with a skewed size distribution: key 0 has `heavy` rows, key 1 has `b_rows`, key 2 has
// 3x that, then keys of 1..20 rows; rows interleaved so that no key is contiguous in the input.
std::vector<uint64_t> SkewedKeys(int64_t n, int64_t heavy, int64_t b_rows) {
  std::vector<uint64_t> keys;
  for (int64_t i = 0; i < heavy; ++i) keys.push_back(1000);
  for (int64_t i = 0; i < b_rows; ++i) keys.push_back(1001);
  for (int64_t i = 0; i < 3 * b_rows; ++i) keys.push_back(1002);
  uint64_t k = 2000;
  while (static_cast<int64_t>(keys.size()) < n) {
    const int64_t len = std::min<int64_t>(1 + static_cast<int64_t>(k % 20), n - static_cast<int64_t>(keys.size()));
    for (int64_t i = 0; i < len; ++i) keys.push_back(k);
    ++k;
  }
  // Interleave deterministically (a fixed permutation) so input order carries no structure.
  std::vector<uint32_t> perm = PermutedOrder(n, 99, 0);
  std::vector<uint64_t> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out[perm[i]] = keys[i];
  return out;
}

struct KeyBatchStats {
  int64_t violations = 0;      // batches holding more rows of a key than the bound allows
  double worst_gap_ratio = 0;  // max over keys (2 <= n <= B-1) of largest cyclic gap / (B / n)
};

KeyBatchStats CheckStratified(const std::vector<uint64_t>& keys, const std::vector<uint32_t>& order,
                              int64_t batch_size) {
  const int64_t n = static_cast<int64_t>(keys.size());
  const int64_t batches = (n + batch_size - 1) / batch_size;
  const int64_t last = n - (batches - 1) * batch_size;
  std::map<uint64_t, int64_t> count;
  for (uint64_t k : keys) ++count[k];
  std::map<uint64_t, std::vector<int64_t>> batches_of;  // key -> batch of each of its rows
  for (int64_t pos = 0; pos < n; ++pos) batches_of[keys[order[pos]]].push_back(pos / batch_size);
  KeyBatchStats st;
  for (auto& [key, bs] : batches_of) {
    const int64_t rows = count[key];
    const int64_t free_batches = last == batch_size ? batches : batches - 1;
    const int64_t bound = rows <= free_batches ? 1
                          : batches == 1  ? rows
                                          : (rows + batches - 2) / (batches - 1);
    std::map<int64_t, int64_t> per_batch;
    for (int64_t b : bs) ++per_batch[b];
    for (auto& [b, c] : per_batch) {
      if (c > bound) ++st.violations;
    }
    if (rows >= 2 && rows <= batches - 1) {
      std::sort(bs.begin(), bs.end());
      int64_t gap = bs.front() + batches - bs.back();
      for (size_t i = 1; i < bs.size(); ++i) gap = std::max(gap, bs[i] - bs[i - 1]);
      st.worst_gap_ratio = std::max(st.worst_gap_ratio, static_cast<double>(gap) * rows / batches);
    }
  }
  return st;
}

TEST(EpochOrderTest, StratifiedOrderSpreadsEachKeyOverBatches) {
  // (rows, batch size): N a multiple of the batch size, and not (short last batch).
  for (auto [n, bs] : {std::pair<int64_t, int64_t>{10000, 100}, {10037, 100}, {5000, 64}, {999, 1000}}) {
    SCOPED_TRACE("rows=" + std::to_string(n) + " batch_size=" + std::to_string(bs));
    const int64_t batches = (n + bs - 1) / bs;
    const auto keys = SkewedKeys(n, std::min<int64_t>(n / 4, 3 * batches + 5), batches - 1);
    const KeyGroups groups = GroupRowsByKey(keys);
    EXPECT_EQ(groups.num_rows(), n);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const auto order = StratifiedOrder(groups, bs, 5, epoch);
      ASSERT_TRUE(IsPermutation(order, n)) << "every row exactly once";
      EXPECT_EQ(order, StratifiedOrder(groups, bs, 5, epoch)) << "deterministic for (seed, epoch)";
      if (epoch > 0) {
        EXPECT_NE(order, StratifiedOrder(groups, bs, 5, epoch - 1));
      }
      const KeyBatchStats st = CheckStratified(keys, order, bs);
      EXPECT_EQ(st.violations, 0) << "a key has more rows in one batch than n / (B-1) allows";
      // Evenly spread: no gap between a key's batches is much longer than B / n (golden
      // stride: at most three gap lengths; a plain random placement gives ~ln(n) times B/n).
      if (batches > 2) {
        EXPECT_LE(st.worst_gap_ratio, 3.0);
      }
    }
  }
}

TEST(EpochOrderTest, StratifiedOrderIsUniformOverSeeds) {
  // The batch of a given row over 2000 seeds: chi-square over 10 equal bins of batches.
  const int64_t n = 2000, bs = 20;  // 100 batches
  const auto keys = SkewedKeys(n, 150, 99);
  const KeyGroups groups = GroupRowsByKey(keys);
  for (uint32_t row : {0u, 1u, 777u}) {
    std::vector<int64_t> bins(10, 0);
    for (uint64_t seed = 0; seed < 2000; ++seed) {
      const auto order = StratifiedOrder(groups, bs, seed, 0);
      const auto pos = std::find(order.begin(), order.end(), row) - order.begin();
      ++bins[static_cast<size_t>(pos / bs / 10)];
    }
    double chi2 = 0;
    for (int64_t c : bins) chi2 += (c - 200.0) * (c - 200.0) / 200.0;
    EXPECT_LT(chi2, 27.9) << "row " << row << ": batch positions are not uniform (df 9, p=0.001)";
  }
  // Different seeds give different orders.
  EXPECT_NE(StratifiedOrder(groups, bs, 1, 0), StratifiedOrder(groups, bs, 2, 0));
}

TEST(EpochOrderTest, GroupRowsByKeyIsCanonical) {
  const std::vector<uint64_t> keys = {5, 3, 5, 9, 3, 5};
  const KeyGroups g = GroupRowsByKey(keys);
  EXPECT_EQ(g.num_keys(), 3);
  EXPECT_EQ(g.rows, (std::vector<uint32_t>{1, 4, 0, 2, 5, 3}));
  EXPECT_EQ(g.starts, (std::vector<uint32_t>{0, 2, 5, 6}));
}

// ---------------------------------------------------------------- EpochSource

// A criteo file whose I1 is the row index (dense.log1p off, so dense[0] identifies the row)
// and C1 a user id with a skewed number of rows per user.
class EpochSourceTest : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 3000;
  void SetUp() override {
    std::string text;
    for (int64_t r = 0; r < kRows; ++r) {
      const int64_t user = r % 5 == 0 ? 0 : (r * 7919) % 400 + 1;  // user 0: 600 rows
      text += std::to_string((r * 31) % 7 == 0 ? 1 : 0) + "\t" + std::to_string(r) + "\t" +
              std::to_string(r % 13) + "\tu" + std::to_string(user) + "\tc" + std::to_string(r % 17) + "\n";
    }
    path_ = dir_.Write("train.tsv", text);
    config_.files = {path_};
    config_.schema.criteo_dense = 2;
    config_.schema.criteo_sparse = 2;
    config_.dense.log1p = false;
    read_.batch_size = 128;
    read_.shuffle_buffer_rows = 500;
    read_.chunk_bytes = 4096;
    read_.num_threads = 2;
    read_.seed = 11;
  }

  std::unique_ptr<EpochSource> Make(EpochOptions eo, int64_t budget_bytes = int64_t{1} << 30) {
    budget_ = std::make_shared<MemoryBudget>(budget_bytes);
    auto s = EpochSource::Create(config_, read_, eo, budget_, "data.train",
                                 [this](const std::string& line) { log_.push_back(line); });
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  struct Pass {
    std::vector<int64_t> rows;  // I1 of each row, in order
    std::vector<int64_t> batch_sizes;
    std::vector<std::vector<uint64_t>> batch_keys;
  };
  static Result<Pass> Drain(BatchReader& reader) {
    Pass p;
    while (true) {
      RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> b, reader.Next());
      if (!b) break;
      p.batch_sizes.push_back(b->size);
      for (int64_t i = 0; i < b->size; ++i) p.rows.push_back(static_cast<int64_t>(b->dense[i * 2]));
      p.batch_keys.push_back(b->group_keys);
      reader.Recycle(std::move(*b));
    }
    return p;
  }
  Pass Read(EpochSource& src, int64_t epoch, int64_t skip = 0) {
    auto r = src.Open(epoch, skip);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    auto p = Drain(**r);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Pass{};
  }
  // The same pass straight from OpenBatchReader (no cache).
  Pass ReadFiles(int64_t epoch, bool shuffle) {
    ReadOptions ro = read_;
    ro.epoch = epoch;
    ro.shuffle = shuffle;
    auto r = OpenBatchReader(config_, ro);
    EXPECT_TRUE(r.ok()) << r.status();
    auto p = Drain(**r);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  }
  static bool EveryRowOnce(std::vector<int64_t> rows) {
    std::sort(rows.begin(), rows.end());
    for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
      if (rows[static_cast<size_t>(i)] != i) return false;
    }
    return static_cast<int64_t>(rows.size()) == kRows;
  }
  bool Logged(const std::string& text) const {
    for (const auto& l : log_) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }

  TempDir dir_;
  std::string path_;
  DataConfig config_;
  ReadOptions read_;
  std::shared_ptr<MemoryBudget> budget_;
  std::vector<std::string> log_;
};

TEST_F(EpochSourceTest, BufferShuffleCachesEpochZeroAndPermutesLaterEpochs) {
  auto src = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  ASSERT_TRUE(src);
  const Pass e0 = Read(*src, 0);
  EXPECT_EQ(e0.rows, ReadFiles(0, true).rows) << "epoch 0 is the files' shuffled pass";
  ASSERT_TRUE(src->cached());
  EXPECT_EQ(src->split()->rows(), kRows);
  EXPECT_GT(budget_->used_bytes(), 0);
  EXPECT_TRUE(Logged("holds 3000 rows"));
  const Pass e1 = Read(*src, 1), e2 = Read(*src, 2);
  EXPECT_TRUE(EveryRowOnce(e1.rows));
  EXPECT_TRUE(EveryRowOnce(e2.rows));
  EXPECT_NE(e1.rows, e2.rows);
  EXPECT_NE(e1.rows, e0.rows);
  EXPECT_EQ(e1.batch_sizes.size(), 24u);  // ceil(3000 / 128)
  EXPECT_EQ(e1.batch_sizes.back(), 3000 - 23 * 128);
  // A fresh process that starts at epoch 2 (resume) builds the cache from the epoch-0 pass
  // up front and serves exactly the same epoch, also from the middle.
  auto again = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  EXPECT_EQ(Read(*again, 2).rows, e2.rows);
  auto resumed = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  const Pass tail = Read(*resumed, 2, 5 * 128);
  EXPECT_EQ(tail.rows, std::vector<int64_t>(e2.rows.begin() + 5 * 128, e2.rows.end()));
  // Resumed in the middle of epoch 0: the rest of epoch 0 equals the uninterrupted pass.
  auto mid0 = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  EXPECT_EQ(Read(*mid0, 0, 256).rows, std::vector<int64_t>(e0.rows.begin() + 256, e0.rows.end()));
  EXPECT_EQ(Read(*mid0, 1).rows, e1.rows);
}

TEST_F(EpochSourceTest, OffModeServesFileOrderFromMemory) {
  auto src = Make({.shuffle = ShuffleMode::kOff, .memory_cache = MemoryCacheMode::kAuto});
  const Pass files = ReadFiles(0, false);
  const Pass e0 = Read(*src, 0);
  ASSERT_TRUE(src->cached());
  const Pass e1 = Read(*src, 1);
  EXPECT_EQ(e0.rows, files.rows);
  EXPECT_EQ(e1.rows, files.rows);
  EXPECT_EQ(e1.batch_sizes, files.batch_sizes);
  EXPECT_EQ(Read(*src, 3, 1000).rows, std::vector<int64_t>(files.rows.begin() + 1000, files.rows.end()));
}

TEST_F(EpochSourceTest, CacheOffAndAbandonedPassesReadTheFiles) {
  auto off = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOff});
  EXPECT_EQ(Read(*off, 1).rows, ReadFiles(1, true).rows);
  EXPECT_FALSE(off->cached());
  // A pass stopped early (max_steps) leaves no cache behind and no bytes reserved.
  auto src = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  {
    auto r = src->Open(0, 0);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE((*r)->Next().ok());
  }
  EXPECT_FALSE(src->cached());
  EXPECT_EQ(budget_->used_bytes(), 0);
}

TEST_F(EpochSourceTest, AutoFallsBackToFilesWhenTheSplitDoesNotFit) {
  auto src = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kAuto}, 20 * 1024);
  const Pass e0 = Read(*src, 0);
  EXPECT_TRUE(EveryRowOnce(e0.rows)) << "no row lost when caching is abandoned mid-pass";
  EXPECT_FALSE(src->cached());
  EXPECT_EQ(budget_->used_bytes(), 0);
  EXPECT_TRUE(Logged("does not fit")) << (log_.empty() ? "" : log_[0]);
  EXPECT_TRUE(Logged("re-reading the files"));
  EXPECT_EQ(Read(*src, 1).rows, ReadFiles(1, true).rows);
}

TEST_F(EpochSourceTest, AutoDoesNotCopyTheLastPassOfTheRun) {
  // train.epochs: 1 (the benchmark case): the only pass is read from the files, nothing is copied.
  auto one = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kAuto, .epochs = 1});
  EXPECT_EQ(Read(*one, 0).rows, ReadFiles(0, true).rows);
  EXPECT_FALSE(one->cached());
  EXPECT_EQ(budget_->used_bytes(), 0);
  EXPECT_TRUE(Logged("data.train is not copied into memory: epoch 0 is the last of 1 (train.epochs)"))
      << (log_.empty() ? "" : log_[0]);
  log_.clear();
  // train.epochs: 3, resumed at epoch 2: the remaining pass is not built up front either.
  auto last = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kAuto, .epochs = 3});
  const Pass files2 = ReadFiles(2, true);
  EXPECT_EQ(Read(*last, 2, 256).rows, std::vector<int64_t>(files2.rows.begin() + 256, files2.rows.end()));
  EXPECT_FALSE(last->cached());
  EXPECT_TRUE(Logged("epoch 2 is the last of 3"));
  // train.epochs: 2: epoch 0 fills the cache and the last pass (epoch 1) is served from it.
  auto two = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kAuto, .epochs = 2});
  Read(*two, 0);
  ASSERT_TRUE(two->cached());
  const Pass e1 = Read(*two, 1);
  EXPECT_TRUE(EveryRowOnce(e1.rows));
  EXPECT_NE(e1.rows, ReadFiles(1, true).rows) << "epoch 1 is the memory permutation, not the files' pass";
  // memory_cache: on copies even a single pass; epochs 0 (unknown, data.valid) caches as before.
  auto on = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn, .epochs = 1});
  Read(*on, 0);
  EXPECT_TRUE(on->cached());
  auto unknown = Make({.shuffle = ShuffleMode::kOff, .memory_cache = MemoryCacheMode::kAuto});
  Read(*unknown, 0);
  EXPECT_TRUE(unknown->cached());
  // Global shuffle needs the copy even for one epoch.
  auto global = Make({.shuffle = ShuffleMode::kGlobal, .memory_cache = MemoryCacheMode::kAuto, .epochs = 1});
  EXPECT_TRUE(global->cached());
  EXPECT_TRUE(EveryRowOnce(Read(*global, 0).rows));
}

TEST_F(EpochSourceTest, MemoryPassesEndCleanlyAndCanBeAbandoned) {
  read_.prefetch_batches = 1;
  auto src = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn});
  Read(*src, 0);
  ASSERT_TRUE(src->cached());
  {
    // Abandoned after one batch (max_steps): the gather thread stops and is joined.
    auto r = src->Open(1, 0);
    ASSERT_TRUE(r.ok()) << r.status();
    auto b = (*r)->Next();
    ASSERT_TRUE(b.ok() && b->has_value());
    EXPECT_EQ((*b)->size, 128);
  }
  auto r = src->Open(1, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  auto all = Drain(**r);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(EveryRowOnce(all->rows));
  EXPECT_EQ((*r)->Stats().rows_read, kRows);
  auto end = (*r)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value()) << "a finished pass keeps answering end of data";
}

TEST_F(EpochSourceTest, OnFailsClearlyWhenTheSplitDoesNotFit) {
  auto src = Make({.shuffle = ShuffleMode::kBuffer, .memory_cache = MemoryCacheMode::kOn}, 20 * 1024);
  auto r = src->Open(0, 0);
  ASSERT_TRUE(r.ok());
  auto p = Drain(**r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("data.memory_cache: on (data.train)"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("raise data.memory_cache_bytes"), std::string::npos) << p.status();
}

TEST_F(EpochSourceTest, GlobalShuffleValidatesItsOptions) {
  budget_ = std::make_shared<MemoryBudget>(20 * 1024);
  auto small = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal}, budget_, "data.train", {});
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(small.status().message().find("data.shuffle: global needs all of data.train in memory"),
            std::string::npos)
      << small.status();
  EXPECT_EQ(budget_->used_bytes(), 0);
  auto off = EpochSource::Create(config_, read_,
                                 {.shuffle = ShuffleMode::kGlobal, .memory_cache = MemoryCacheMode::kOff},
                                 budget_, "data.train", {});
  EXPECT_EQ(off.status().code(), StatusCode::kInvalidArgument);
  auto key = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kBuffer, .shuffle_key = "C1"},
                                 budget_, "data.train", {});
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("needs data.shuffle: global"), std::string::npos) << key.status();
  auto missing = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal, .shuffle_key = "user"},
                                     std::make_shared<MemoryBudget>(1 << 30), "data.train", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument) << missing.status();
}

TEST_F(EpochSourceTest, GlobalShuffleIsAFullPermutationFromTheFirstEpoch) {
  auto src = Make({.shuffle = ShuffleMode::kGlobal});
  ASSERT_TRUE(src && src->cached()) << "read up front";
  const Pass e0 = Read(*src, 0), e1 = Read(*src, 1);
  EXPECT_TRUE(EveryRowOnce(e0.rows));
  EXPECT_TRUE(EveryRowOnce(e1.rows));
  EXPECT_NE(e0.rows, e1.rows);
  // Not a chunk/buffer shuffle: rows from the whole file are mixed even in the first batch.
  const auto first = std::vector<int64_t>(e0.rows.begin(), e0.rows.begin() + 128);
  EXPECT_GT(*std::max_element(first.begin(), first.end()) - *std::min_element(first.begin(), first.end()), 2500);
  auto again = Make({.shuffle = ShuffleMode::kGlobal});
  EXPECT_EQ(Read(*again, 1).rows, e1.rows);
  EXPECT_EQ(Read(*again, 1, 384).rows, std::vector<int64_t>(e1.rows.begin() + 384, e1.rows.end()));
}

TEST_F(EpochSourceTest, GlobalShuffleByKeySpreadsHeavyUsersOverBatches) {
  auto src = Make({.shuffle = ShuffleMode::kGlobal, .shuffle_key = "C1"});
  ASSERT_TRUE(src);
  EXPECT_TRUE(Logged("321 distinct C1 keys"));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const Pass p = Read(*src, epoch);
    EXPECT_TRUE(EveryRowOnce(p.rows));
    ASSERT_EQ(p.batch_sizes.size(), 24u);
    // User 0 has 600 rows over 24 batches: exactly 25 per batch (ceil(600 / 23) = 27 at most);
    // every other user (at most 8 rows) appears at most once per batch.
    for (const auto& keys : p.batch_keys) {
      std::map<uint64_t, int> per_key;
      for (uint64_t k : keys) ++per_key[k];
      int heavy = 0, max_other = 0;
      for (auto [k, c] : per_key) {
        if (c > 8) {
          heavy = c;
        } else {
          max_other = std::max(max_other, c);
        }
      }
      EXPECT_LE(heavy, 27);
      EXPECT_EQ(max_other, 1);
    }
  }
  // Without the key, the same heavy user piles up in some batch (that is what the key is for).
  auto plain = Make({.shuffle = ShuffleMode::kGlobal});
  const Pass p = Read(*plain, 0);
  int max_rows_of_user0 = 0;
  for (size_t b = 0; b * 128 < p.rows.size(); ++b) {
    int c = 0;
    for (size_t i = b * 128; i < std::min(p.rows.size(), (b + 1) * 128); ++i) c += p.rows[i] % 5 == 0;
    max_rows_of_user0 = std::max(max_rows_of_user0, c);
  }
  EXPECT_GT(max_rows_of_user0, 27);
}

TEST_F(EpochSourceTest, SplitsShareOneBudget) {
  budget_ = std::make_shared<MemoryBudget>(int64_t{1} << 30);
  auto a = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal}, budget_, "data.train", {});
  ASSERT_TRUE(a.ok());
  const int64_t one = budget_->used_bytes();
  EXPECT_GT(one, kRows * 4);
  {
    auto b = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal}, budget_, "data.valid", {});
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(budget_->used_bytes(), 2 * one);
  }
  EXPECT_EQ(budget_->used_bytes(), one);
  // A budget that holds one split but not two: the second split's error names it.
  auto tight = std::make_shared<MemoryBudget>(one + one / 2);
  auto c = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal}, tight, "data.train", {});
  ASSERT_TRUE(c.ok());
  auto d = EpochSource::Create(config_, read_, {.shuffle = ShuffleMode::kGlobal}, tight, "data.valid", {});
  EXPECT_EQ(d.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(d.status().message().find("data.valid"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::data
