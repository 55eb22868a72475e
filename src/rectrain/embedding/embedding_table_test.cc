#include "rectrain/embedding/embedding_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/embedding/internal/initializer.h"
#include "rectrain/testing/table_file.h"

namespace rectrain::embedding {
namespace {

using rectrain::testing::ReadCanonicalTable;

std::unique_ptr<EmbeddingTable> MustMake(const EmbeddingTableConfig& c) {
  auto t = MakeEmbeddingTable(c);
  RECTRAIN_CHECK(t.ok()) << t.status();
  return std::move(*t);
}

std::vector<float> PullVec(EmbeddingTable& t, const std::vector<uint64_t>& ids, PullMode mode,
                           int threads = 1) {
  std::vector<float> out(ids.size() * t.dim());
  Status s = t.Pull(ids, mode, out, ComputeContext{threads});
  RECTRAIN_CHECK(s.ok()) << s;
  return out;
}

void PushVec(EmbeddingTable& t, const std::vector<uint64_t>& ids, const std::vector<float>& g,
             int64_t step, float lr = 0.05f, int threads = 1) {
  Status s = t.Push(ids, g, {.step = step, .learning_rate = lr}, ComputeContext{threads});
  RECTRAIN_CHECK(s.ok()) << s;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("rectrain_emb_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Unique ids drawn from a skewed distribution (a hot head and a long tail), first-occurrence order.
std::vector<uint64_t> RandomBatch(Rng& rng, int n, uint64_t universe) {
  std::vector<uint64_t> ids;
  std::unordered_set<uint64_t> seen;
  while (static_cast<int>(ids.size()) < n) {
    const double u = rng.Uniform();
    const uint64_t id = static_cast<uint64_t>(std::pow(u, 3.0) * universe) * 7919 + 13;
    if (seen.insert(id).second) ids.push_back(id);
  }
  return ids;
}

std::vector<float> RandomGrads(Rng& rng, size_t n) {
  std::vector<float> g(n);
  for (float& v : g) v = static_cast<float>(rng.Normal());
  return g;
}

// The specification of Pull/Push as a plain map: rows by id, sighting counts, one OOV row.
class ReferenceTable {
 public:
  ReferenceTable(const EmbeddingTableConfig& c, std::vector<float> oov)
      : c_(c), init_(*internal::RowInitializer::Make(c.initializer, c.seed)) {
    opt_ = std::move(*optim::MakeSparseOptimizer(c.optimizer));
    width_ = opt_->StateWidth(c.dim);
    oov_ = oov;
    oov_state_.resize(width_);
    opt_->InitState(oov_, oov_state_);
  }
  struct Row {
    std::vector<float> w, s;
    int64_t updates = 0;
    int64_t last = 0;  // tick of the last kTrain pull
  };
  struct Count {
    int64_t n = 0;
    int64_t last = 0;
  };
  // Returns per id whether it read the OOV row.
  std::vector<bool> Pull(const std::vector<uint64_t>& ids, PullMode mode, std::vector<float>* out) {
    out->assign(ids.size() * c_.dim, 0.0f);
    std::vector<bool> oov(ids.size());
    const bool train = mode == PullMode::kTrain;
    if (train) ++tick_;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = rows_.find(ids[i]);
      if (it == rows_.end() && train && Sighted(ids[i]) >= c_.min_count) {
        counts_.erase(ids[i]);
        Row r;
        r.w.resize(c_.dim);
        r.s.resize(width_);
        init_.Fill(ids[i], r.w);
        opt_->InitState(r.w, r.s);
        it = rows_.emplace(ids[i], std::move(r)).first;
      }
      if (it != rows_.end() && train) it->second.last = tick_;
      const std::vector<float>& src = it == rows_.end() ? oov_ : it->second.w;
      oov[i] = it == rows_.end();
      std::copy(src.begin(), src.end(), out->begin() + i * c_.dim);
    }
    if (train) Expire();
    return oov;
  }
  int64_t Sighted(uint64_t id) {
    Count& count = counts_[id];
    count.last = tick_;
    return ++count.n;
  }
  // ttl_steps: entries last pulled more than ttl ticks ago go, checked every max(1, ttl/8) ticks.
  void Expire() {
    const int64_t ttl = c_.ttl_steps;
    if (ttl == 0 || tick_ <= ttl || tick_ % std::max<int64_t>(1, ttl / 8) != 0) return;
    expirations_ += std::erase_if(rows_, [&](const auto& kv) { return tick_ - kv.second.last > ttl; });
    pending_expirations_ += std::erase_if(counts_, [&](const auto& kv) { return tick_ - kv.second.last > ttl; });
  }
  void Push(const std::vector<uint64_t>& ids, const std::vector<float>& g, int64_t step, float lr) {
    std::vector<double> oov_sum(c_.dim, 0.0);
    bool any = false;
    for (size_t i = 0; i < ids.size(); ++i) {
      std::span<const float> gi(g.data() + i * c_.dim, c_.dim);
      auto it = rows_.find(ids[i]);
      if (it == rows_.end()) {
        any = true;
        for (int d = 0; d < c_.dim; ++d) oov_sum[d] += gi[d];
        continue;
      }
      opt_->UpdateRow({.step = step, .learning_rate = lr}, it->second.updates++, it->second.w,
                      it->second.s, gi);
    }
    if (any) {
      std::vector<float> sum(oov_sum.begin(), oov_sum.end());
      opt_->UpdateRow({.step = step, .learning_rate = lr}, oov_updates_++, oov_, oov_state_, sum);
    }
  }
  size_t rows() const { return rows_.size(); }
  size_t pending() const { return counts_.size(); }
  int64_t expirations() const { return expirations_; }
  int64_t pending_expirations() const { return pending_expirations_; }

 private:
  EmbeddingTableConfig c_;
  internal::RowInitializer init_;
  std::unique_ptr<optim::SparseOptimizer> opt_;
  int width_;
  std::unordered_map<uint64_t, Row> rows_;
  std::unordered_map<uint64_t, Count> counts_;
  std::vector<float> oov_, oov_state_;
  int64_t oov_updates_ = 0;
  int64_t tick_ = 0;
  int64_t expirations_ = 0, pending_expirations_ = 0;
};

struct RefCase {
  std::string optimizer;
  int64_t min_count;
  int64_t ttl_steps = 0;
};

class ReferenceModelTest : public ::testing::TestWithParam<RefCase> {};

TEST_P(ReferenceModelTest, MatchesMapOverRandomStreams) {
  EmbeddingTableConfig c;
  c.dim = 5;
  c.num_shards = 4;
  c.optimizer.type = *optim::kSparseOptimizerTypes.Find(GetParam().optimizer);
  c.optimizer.l2 = 0.01f;
  c.min_count = GetParam().min_count;
  c.ttl_steps = GetParam().ttl_steps;
  auto table = MustMake(c);
  const std::vector<float> oov0 = PullVec(*table, {999999999}, PullMode::kEval);
  ReferenceTable ref(c, oov0);
  Rng rng(7);
  for (int step = 0; step < 40; ++step) {
    const std::vector<uint64_t> ids = RandomBatch(rng, 1 + static_cast<int>(rng.Below(300)), 2000);
    std::vector<float> expected;
    const std::vector<bool> is_oov = ref.Pull(ids, PullMode::kTrain, &expected);
    const std::vector<float> got = PullVec(*table, ids, PullMode::kTrain);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int d = 0; d < c.dim; ++d) {
        const float e = expected[i * c.dim + d], g = got[i * c.dim + d];
        if (is_oov[i]) {
          // The OOV row's gradient sum is added in shard order, the reference's in id order.
          ASSERT_NEAR(g, e, 1e-5) << "step " << step << " oov id " << ids[i];
        } else {
          ASSERT_EQ(g, e) << "step " << step << " id " << ids[i] << " d " << d;
        }
      }
    }
    const std::vector<float> grads = RandomGrads(rng, ids.size() * c.dim);
    ref.Push(ids, grads, step, 0.05f);
    PushVec(*table, ids, grads, step);
    const TableStats s = table->Stats();
    ASSERT_EQ(s.rows, static_cast<int64_t>(ref.rows()));
    ASSERT_EQ(s.pending_ids, static_cast<int64_t>(ref.pending()));
    ASSERT_EQ(s.expirations, ref.expirations());
    ASSERT_EQ(s.pending_expirations, ref.pending_expirations());
  }
  EXPECT_GT(ref.rows(), 100u);
  if (c.ttl_steps > 0) {
    EXPECT_GT(ref.expirations(), 100);
  }
  if (c.ttl_steps > 0 && c.min_count > 1) {
    EXPECT_GT(ref.pending_expirations(), 100);
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ReferenceModelTest,
                         ::testing::Values(RefCase{"sgd", 1}, RefCase{"adagrad", 1},
                                           RefCase{"adam", 1}, RefCase{"ftrl", 1},
                                           RefCase{"adagrad", 3}, RefCase{"adam", 2},
                                           RefCase{"adagrad", 1, 5}, RefCase{"adam", 2, 16}),
                         [](const auto& test_info) {
                           return test_info.param.optimizer + "_min_count" +
                                  std::to_string(test_info.param.min_count) +
                                  (test_info.param.ttl_steps > 0 ? "_ttl" + std::to_string(test_info.param.ttl_steps) : "");
                         });

TEST(EmbeddingTableTest, AdmissionThreshold) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.num_shards = 2;
  c.min_count = 3;
  auto t = MustMake(c);
  const std::vector<float> oov = PullVec(*t, {12345}, PullMode::kEval);
  std::vector<float> own(4);
  (*internal::RowInitializer::Make(c.initializer, c.seed)).Fill(77, own);
  EXPECT_EQ(PullVec(*t, {77}, PullMode::kTrain), oov);  // sighting 1
  EXPECT_EQ(t->Stats().pending_ids, 1);
  EXPECT_EQ(t->Stats().rows, 0);
  EXPECT_EQ(PullVec(*t, {77}, PullMode::kTrain), oov);  // sighting 2
  EXPECT_EQ(PullVec(*t, {77}, PullMode::kEval), oov);   // eval does not count
  EXPECT_EQ(PullVec(*t, {77}, PullMode::kTrain), own);  // sighting 3: admitted
  TableStats s = t->Stats();
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.pending_ids, 0);
  EXPECT_EQ(s.admissions, 1);
  EXPECT_EQ(s.lookups, 5);
  EXPECT_EQ(s.oov_lookups, 4);
  // Duplicates in one kTrain call count as separate sightings.
  EXPECT_EQ(PullVec(*t, {5, 5, 5}, PullMode::kTrain).size(), 12u);
  EXPECT_EQ(t->Stats().rows, 2);
}

TEST(EmbeddingTableTest, EvalCreatesNothingAndReadsOov) {
  EmbeddingTableConfig c;
  c.dim = 3;
  auto t = MustMake(c);
  const TableStats before = t->Stats();
  const std::vector<float> a = PullVec(*t, {1, 2, 3}, PullMode::kEval);
  for (int i = 1; i < 3; ++i) {
    for (int d = 0; d < 3; ++d) EXPECT_EQ(a[i * 3 + d], a[d]);
  }
  const TableStats s = t->Stats();
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.pending_ids, 0);
  EXPECT_EQ(s.bytes, before.bytes);
  EXPECT_EQ(s.oov_lookups, 3);
  // After admission, eval reads the row.
  const std::vector<float> trained = PullVec(*t, {2}, PullMode::kTrain);
  EXPECT_EQ(PullVec(*t, {2}, PullMode::kEval), trained);
  EXPECT_NE(trained, std::vector<float>(a.begin(), a.begin() + 3));
}

TEST(EmbeddingTableTest, InitDependsOnlyOnSeedAndId) {
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 500; ++i) ids.push_back(Mix64(i) % 100000);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<uint64_t> reversed(ids.rbegin(), ids.rend());
  for (const char* init : {"normal", "uniform", "zeros", "truncated_normal"}) {
    EmbeddingTableConfig c;
    c.dim = 7;
    c.initializer.type = *kInitializerTypes.Find(init);
    c.num_shards = 1;
    auto one = MustMake(c);
    c.num_shards = 64;
    auto many = MustMake(c);
    const std::vector<float> a = PullVec(*one, ids, PullMode::kTrain);
    const std::vector<float> b_rev = PullVec(*many, reversed, PullMode::kTrain);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int d = 0; d < 7; ++d) {
        ASSERT_EQ(a[i * 7 + d], b_rev[(ids.size() - 1 - i) * 7 + d]) << init;
      }
    }
    c.seed = 43;
    auto other_seed = MustMake(c);
    if (std::string(init) != "zeros") {
      EXPECT_NE(PullVec(*other_seed, ids, PullMode::kTrain), a);
    }
  }
}

TEST(EmbeddingTableTest, InitializerDistributions) {
  const int n = 20000, dim = 8;
  struct Case {
    const char* type;
    double expected_std;
    double bound;
  };
  for (Case k : {Case{"normal", 0.1, 1e9}, Case{"truncated_normal", 0.1 * 0.8796, 0.2},
                 Case{"uniform", 0.05 / std::sqrt(3.0), 0.05}, Case{"zeros", 0.0, 0.0}}) {
    InitializerConfig ic;
    ic.type = *kInitializerTypes.Find(k.type);
    ic.stddev = 0.1f;
    ic.scale = 0.05f;
    auto init = internal::RowInitializer::Make(ic, 42);
    ASSERT_TRUE(init.ok());
    double sum = 0, sq = 0;
    std::vector<float> w(dim);
    for (int id = 0; id < n; ++id) {
      init->Fill(id, w);
      for (float v : w) {
        ASSERT_LE(std::fabs(v), k.bound) << k.type;
        sum += v;
        sq += double(v) * v;
      }
    }
    const double mean = sum / (n * dim);
    const double sd = std::sqrt(sq / (n * dim) - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.003) << k.type;
    EXPECT_NEAR(sd, k.expected_std, 0.003) << k.type;
  }
}

// One shard, so "least recently used" is exact: after each step the resident ids must be all
// ids last touched after some tick T, none before it (ties at T may go either way), and the
// hot id touched every step must survive.
TEST(EmbeddingTableTest, EvictionKeepsBudgetAndEvictsLeastRecentlyUsed) {
  EmbeddingTableConfig c;
  c.dim = 8;
  c.num_shards = 1;
  c.memory_budget_bytes = 64 << 10;
  c.on_budget = OnBudget::kEvict;
  auto t = MustMake(c);
  const uint64_t hot = 1;
  std::map<uint64_t, int> last_touch;  // id -> step
  const int per_step = 20;
  for (int step = 0; step < 100; ++step) {
    std::vector<uint64_t> ids = {hot};
    for (int i = 0; i < per_step; ++i) ids.push_back(1000 + step * per_step + i);
    PullVec(*t, ids, PullMode::kTrain);
    for (uint64_t id : ids) last_touch[id] = step;
    const TableStats s = t->Stats();
    ASSERT_LE(s.bytes, c.memory_budget_bytes) << "step " << step;
  }
  const TableStats s = t->Stats();
  EXPECT_GT(s.evictions, 0);
  EXPECT_EQ(s.rows + s.evictions, s.admissions);
  // Residency: eval reads the OOV row for evicted ids.
  const std::vector<float> oov = PullVec(*t, {77777777}, PullMode::kEval);
  int newest_evicted = -1, oldest_resident = 1 << 30;
  for (const auto& [id, step] : last_touch) {
    const bool resident = PullVec(*t, {id}, PullMode::kEval) != oov;
    if (resident) {
      oldest_resident = std::min(oldest_resident, step);
    } else {
      newest_evicted = std::max(newest_evicted, step);
    }
  }
  EXPECT_NE(PullVec(*t, {hot}, PullMode::kEval), oov);
  EXPECT_LE(newest_evicted, oldest_resident);
  EXPECT_GT(newest_evicted, 50);
  EXPECT_EQ(s.rows, static_cast<int64_t>(std::count_if(
                        last_touch.begin(), last_touch.end(), [&](const auto& kv) {
                          return PullVec(*t, {kv.first}, PullMode::kEval) != oov;
                        })));
}

// Rows read earlier in the same Pull count as used: eviction inside that Pull takes other rows.
// (Ids in one shard are processed in call order, so 0..9 are looked up before the new ids.)
TEST(EmbeddingTableTest, EvictionInsidePullSparesRowsUsedByThatPull) {
  EmbeddingTableConfig c;
  c.dim = 8;
  c.num_shards = 1;
  c.memory_budget_bytes = 4224;  // OOV 64 + index 1024 + pending 256 + 36 rows of 80 bytes
  auto t = MustMake(c);
  std::vector<uint64_t> first;
  for (uint64_t id = 0; id < 30; ++id) first.push_back(id);
  PullVec(*t, first, PullMode::kTrain);
  std::vector<uint64_t> second;
  for (uint64_t id = 0; id < 10; ++id) second.push_back(id);
  for (uint64_t id = 100; id < 125; ++id) second.push_back(id);
  const std::vector<float> got = PullVec(*t, second, PullMode::kTrain);
  // Every output is that id's own initial row: nothing was read from a recycled row.
  auto init = internal::RowInitializer::Make(c.initializer, c.seed);
  std::vector<float> own(8);
  for (size_t i = 0; i < second.size(); ++i) {
    init->Fill(second[i], own);
    EXPECT_TRUE(std::equal(own.begin(), own.end(), got.begin() + i * 8)) << second[i];
  }
  const std::vector<float> oov = PullVec(*t, {999999}, PullMode::kEval);
  for (uint64_t id : second) EXPECT_NE(PullVec(*t, {id}, PullMode::kEval), oov) << id;
  int survivors = 0;
  for (uint64_t id = 10; id < 30; ++id) survivors += PullVec(*t, {id}, PullMode::kEval) != oov;
  EXPECT_LE(survivors, 1);
  EXPECT_LE(t->Stats().bytes, c.memory_budget_bytes);
}

// When one Pull needs more rows than the budget holds, rows of that Pull are recycled; the
// ids that lost their row read the OOV row, never another id's row.
TEST(EmbeddingTableTest, PullLargerThanBudgetNeverReturnsAnotherIdsRow) {
  EmbeddingTableConfig c;
  c.dim = 8;
  c.num_shards = 1;
  c.memory_budget_bytes = 4224;
  auto t = MustMake(c);
  const std::vector<float> oov = PullVec(*t, {999999}, PullMode::kEval);
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 200; ++id) ids.push_back(id * 3 + 1);
  const std::vector<float> got = PullVec(*t, ids, PullMode::kTrain);
  auto init = internal::RowInitializer::Make(c.initializer, c.seed);
  std::vector<float> own(8);
  int own_rows = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    init->Fill(ids[i], own);
    const bool is_own = std::equal(own.begin(), own.end(), got.begin() + i * 8);
    const bool is_oov = std::equal(oov.begin(), oov.end(), got.begin() + i * 8);
    EXPECT_TRUE(is_own || is_oov) << ids[i];
    own_rows += is_own;
  }
  EXPECT_GE(own_rows, 30);
  EXPECT_LT(own_rows, 200);
  EXPECT_LE(t->Stats().bytes, c.memory_budget_bytes);
  // The table stays consistent afterwards: every row is either resident exactly once or evicted.
  for (int round = 0; round < 3; ++round) PullVec(*t, ids, PullMode::kTrain);
  const TableStats s = t->Stats();
  EXPECT_EQ(s.rows + s.evictions, s.admissions);
  int resident = 0;
  for (uint64_t id : ids) resident += PullVec(*t, {id}, PullMode::kEval) != oov;
  EXPECT_EQ(resident, s.rows);
  EXPECT_LE(s.bytes, c.memory_budget_bytes);
}

TEST(EmbeddingTableTest, EvictionUnderManyShardsStaysInBudget) {
  EmbeddingTableConfig c;
  c.dim = 16;
  c.num_shards = 8;
  c.min_count = 2;
  c.memory_budget_bytes = 256 << 10;
  auto t = MustMake(c);
  Rng rng(3);
  for (int step = 0; step < 60; ++step) {
    const std::vector<uint64_t> ids = RandomBatch(rng, 500, 20000);
    PullVec(*t, ids, PullMode::kTrain);
    PushVec(*t, ids, RandomGrads(rng, ids.size() * 16), step);
    ASSERT_LE(t->Stats().bytes, c.memory_budget_bytes) << step;
  }
  const TableStats s = t->Stats();
  EXPECT_GT(s.evictions, 0);
  EXPECT_GT(s.rows, 500);
  EXPECT_EQ(s.rows + s.evictions, s.admissions);
}

TEST(EmbeddingTableTest, BudgetErrorPolicy) {
  EmbeddingTableConfig c;
  c.name = "user_id";
  c.dim = 8;
  c.num_shards = 1;
  c.memory_budget_bytes = 4096;
  c.on_budget = OnBudget::kError;
  auto t = MustMake(c);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 100; ++i) ids.push_back(i);
  std::vector<float> out(ids.size() * 8);
  const Status s = t->Pull(ids, PullMode::kTrain, out, {});
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "embedding table 'user_id' is over its memory budget of 4096 bytes "
            "(embedding.memory_budget): shard 0 of 1 holds 34 rows and 0 pending ids in 4000 of "
            "its 4032 bytes; raise embedding.memory_budget or set embedding.on_budget to evict");
  EXPECT_LE(t->Stats().bytes, 4096);
}

TEST(EmbeddingTableTest, ConfigErrors) {
  EmbeddingTableConfig c;
  c.num_shards = 6;
  EXPECT_EQ(MakeEmbeddingTable(c).status().ToString(),
            "INVALID_ARGUMENT: embedding table 'emb': embedding.num_shards must be a power of two "
            "in [1, 65536], got 6");
  c = {};
  c.dim = 0;
  EXPECT_EQ(MakeEmbeddingTable(c).status().message(),
            "embedding table 'emb': embedding.dim must be >= 1, got 0");
  c = {};
  c.memory_budget_bytes = 1000;
  EXPECT_EQ(MakeEmbeddingTable(c).status().message(),
            "embedding table 'emb': embedding.memory_budget of 1000 bytes is below the minimum of "
            "69760 bytes for embedding.num_shards 64 and dim 16 (empty index and 4 rows per "
            "shard); raise it or lower embedding.num_shards");
  c = {};
  c.min_count = 0;
  EXPECT_EQ(MakeEmbeddingTable(c).status().message(),
            "embedding table 'emb': embedding.min_count must be in [1, 2^32-1], got 0");
  c = {};
  c.ttl_steps = -1;
  EXPECT_EQ(MakeEmbeddingTable(c).status().message(),
            "embedding table 'emb': embedding.ttl_steps must be in [0, 4294967293] (0 = no expiry), got -1");
}

TEST(EmbeddingTableTest, SizeMismatch) {
  auto t = MustMake(EmbeddingTableConfig{});
  std::vector<uint64_t> ids = {1, 2};
  std::vector<float> out(31);
  EXPECT_EQ(t->Pull(ids, PullMode::kTrain, out, {}).message(),
            "embedding table 'emb': Pull got 2 ids but an output of 31 floats; expected ids × "
            "dim = 32");
  EXPECT_EQ(t->Push(ids, out, {}, {}).message(),
            "embedding table 'emb': Push got 2 ids but 31 gradient floats; expected ids × dim = 32");
}

TEST(EmbeddingTableTest, MemoryAccounting) {
  EmbeddingTableConfig c;
  c.dim = 16;
  c.num_shards = 4;
  auto t = MustMake(c);
  const int64_t empty = t->Stats().bytes;
  std::vector<uint64_t> ids(10000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i * 31 + 5;
  PullVec(*t, ids, PullMode::kTrain);
  const TableStats s = t->Stats();
  const int64_t row_bytes = (4 + 16 + 16) * 4;  // meta + weights + adagrad accumulator
  EXPECT_EQ(s.rows, 10000);
  EXPECT_GE(s.bytes - empty, 10000 * row_bytes + 10000 * 16);          // rows + index slots
  EXPECT_LE(s.bytes - empty, 10000 * row_bytes + 4 * 10000 * 16 + 4096);  // index load >= 3/8
}

class SaveLoadTest : public ::testing::TestWithParam<int> {};

EmbeddingTableConfig SaveLoadConfig(int shards) {
  EmbeddingTableConfig c;
  c.dim = 6;
  c.num_shards = shards;
  c.min_count = 2;
  c.optimizer.type = optim::SparseOptimizerType::kAdam;
  return c;
}

void Train(EmbeddingTable& t, Rng& rng, int steps, int first_step) {
  for (int step = first_step; step < first_step + steps; ++step) {
    const std::vector<uint64_t> ids = RandomBatch(rng, 200, 3000);
    PullVec(t, ids, PullMode::kTrain);
    PushVec(t, ids, RandomGrads(rng, ids.size() * t.dim()), step);
  }
}

std::vector<uint64_t> AllIds() {
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 3000; ++i) ids.push_back(i * 7919 + 13);
  return ids;
}

TEST_P(SaveLoadTest, RoundTripIntoOtherShardCounts) {
  auto original = MustMake(SaveLoadConfig(4));
  Rng rng(11);
  Train(*original, rng, 20, 0);
  const std::string path = TempPath("roundtrip_" + std::to_string(GetParam()));
  ASSERT_TRUE(original->Save(path).ok());
  auto loaded = MustMake(SaveLoadConfig(GetParam()));
  ASSERT_TRUE(loaded->Load(path).ok());
  const std::vector<uint64_t> all = AllIds();
  EXPECT_EQ(PullVec(*loaded, all, PullMode::kEval), PullVec(*original, all, PullMode::kEval));
  TableStats a = original->Stats(), b = loaded->Stats();
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.pending_ids, b.pending_ids);
  EXPECT_EQ(a.admissions, b.admissions);
  EXPECT_EQ(a.lookups, b.lookups);
  // Continued training (same stream) matches: rows exactly, the shared OOV row up to the order of
  // its gradient sum (which follows the shard count).
  Rng rng_a(99), rng_b(99);
  Train(*original, rng_a, 10, 20);
  Train(*loaded, rng_b, 10, 20);
  const std::vector<float> x = PullVec(*original, all, PullMode::kEval);
  const std::vector<float> y = PullVec(*loaded, all, PullMode::kEval);
  for (size_t i = 0; i < x.size(); ++i) {
    if (GetParam() == 4) {
      ASSERT_EQ(x[i], y[i]) << i;
    } else {
      ASSERT_NEAR(x[i], y[i], 1e-6) << i;
    }
  }
  EXPECT_EQ(original->Stats().rows, loaded->Stats().rows);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Shards, SaveLoadTest, ::testing::Values(1, 4, 64));

TEST(EmbeddingCheckpointTest, CorruptionIsDataLossAndLeavesTableUnchanged) {
  auto t = MustMake(SaveLoadConfig(4));
  Rng rng(5);
  Train(*t, rng, 5, 0);
  const std::string path = TempPath("corrupt");
  ASSERT_TRUE(t->Save(path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 1000u);
  auto target = MustMake(SaveLoadConfig(4));
  Rng rng2(6);
  Train(*target, rng2, 2, 0);
  const std::vector<uint64_t> all = AllIds();
  const std::vector<float> before = PullVec(*target, all, PullMode::kEval);
  const std::string bad = TempPath("corrupt_bad");
  auto write = [&](const std::string& content) {
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out.write(content.data(), content.size());
  };
  // Flip a bit in the header, the OOV record, the first row block, the last bytes.
  for (size_t pos : {size_t{0}, size_t{13}, size_t{90}, size_t{130}, bytes.size() / 2,
                     bytes.size() - 30, bytes.size() - 1}) {
    std::string c = bytes;
    c[pos] ^= 0x10;
    write(c);
    const Status s = target->Load(bad);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "flip at " << pos << ": " << s;
  }
  for (size_t len : {size_t{0}, size_t{7}, size_t{60}, size_t{200}, bytes.size() / 3,
                     bytes.size() - 8, bytes.size() - 1}) {
    write(bytes.substr(0, len));
    const Status s = target->Load(bad);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "truncated to " << len << ": " << s;
  }
  write(bytes + "x");
  EXPECT_EQ(target->Load(bad).code(), StatusCode::kDataLoss);
  EXPECT_EQ(PullVec(*target, all, PullMode::kEval), before);
  write(bytes.substr(0, 60));
  EXPECT_EQ(target->Load(bad).message(),
            "while loading embedding table 'emb': embedding checkpoint " + bad +
                " is truncated at byte 60 while reading the header (4 more bytes expected)");

  // Mismatched tables are InvalidArgument.
  EmbeddingTableConfig other_dim = SaveLoadConfig(4);
  other_dim.dim = 7;
  const Status dim_status = MustMake(other_dim)->Load(path);
  EXPECT_EQ(dim_status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dim_status.message(), "while loading embedding table 'emb': embedding checkpoint " +
                                      path +
                                      " has dim 6 but table 'emb' has dim 7 (embedding.dim)");
  EmbeddingTableConfig other_opt = SaveLoadConfig(4);
  other_opt.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  const Status opt_status = MustMake(other_opt)->Load(path);
  EXPECT_EQ(opt_status.message(),
            "while loading embedding table 'emb': embedding checkpoint " + path +
                " was written with sparse optimizer 'adam' (state width 12) but table 'emb' uses "
                "'adagrad' (state width 6)");
  EXPECT_EQ(target->Load(TempPath("does_not_exist")).code(), StatusCode::kNotFound);
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

TEST(EmbeddingCheckpointTest, SaveIsAtomicAndLeavesNoTempFiles) {
  auto t = MustMake(SaveLoadConfig(2));
  Rng rng(1);
  Train(*t, rng, 2, 0);
  const std::string dir = TempPath("dir");
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(t->Save(dir + "/emb.ckpt").ok());
  ASSERT_TRUE(t->Save(dir + "/emb.ckpt").ok());  // overwrite
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "emb.ckpt");
    ++files;
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(t->Save(dir + "/missing/emb.ckpt").code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// Pull/Push with 2 threads give bit-identical results to 1 thread (batches big enough to use
// the pool), including eviction, admission and expiry.
TEST(EmbeddingTableTest, ThreadCountDoesNotChangeResults) {
  std::vector<float> results[2];
  TableStats stats[2];
  for (int threads = 1; threads <= 2; ++threads) {
    EmbeddingTableConfig c;
    c.dim = 8;
    c.num_shards = 16;
    c.min_count = 2;
    c.memory_budget_bytes = 2 << 20;
    c.optimizer.type = optim::SparseOptimizerType::kAdam;
    c.ttl_steps = 4;
    auto t = MustMake(c);
    Rng rng(21);
    std::vector<float> all;
    for (int step = 0; step < 12; ++step) {
      const std::vector<uint64_t> ids = RandomBatch(rng, 6000, 200000);
      const std::vector<float> out = PullVec(*t, ids, PullMode::kTrain, threads);
      all.insert(all.end(), out.begin(), out.end());
      PushVec(*t, ids, RandomGrads(rng, ids.size() * 8), step, 0.01f, threads);
    }
    results[threads - 1] = all;
    stats[threads - 1] = t->Stats();
  }
  EXPECT_GT(stats[0].evictions, 0);
  EXPECT_EQ(stats[0].evictions, stats[1].evictions);
  EXPECT_GT(stats[0].expirations, 0);
  EXPECT_EQ(stats[0].expirations, stats[1].expirations);
  EXPECT_EQ(stats[0].pending_expirations, stats[1].pending_expirations);
  EXPECT_EQ(stats[0].rows, stats[1].rows);
  EXPECT_TRUE(results[0] == results[1]);
}

// PushRows + ApplyOovGradient is Push: the rows and the OOV row end up bit-identical.
TEST(EmbeddingTableTest, PushRowsThenOovGradientEqualsPush) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.min_count = 2;  // first sightings read (and train) the OOV row
  c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  auto a = MustMake(c), b = MustMake(c);
  Rng rng(3);
  for (int step = 0; step < 5; ++step) {
    const std::vector<uint64_t> ids = RandomBatch(rng, 50, 200);
    const std::vector<float> g = RandomGrads(rng, ids.size() * 4);
    PullVec(*a, ids, PullMode::kTrain);
    PullVec(*b, ids, PullMode::kTrain);
    PushVec(*a, ids, g, step);
    std::vector<float> oov(4, 0.0f);
    Result<bool> touched = b->PushRows(ids, g, {.step = step, .learning_rate = 0.05f}, ComputeContext{1}, oov);
    ASSERT_TRUE(touched.ok()) << touched.status();
    EXPECT_TRUE(*touched);
    ASSERT_TRUE(b->ApplyOovGradient(oov, {.step = step, .learning_rate = 0.05f}).ok());
  }
  const std::vector<uint64_t> probe = RandomBatch(rng, 100, 200);
  EXPECT_EQ(PullVec(*a, probe, PullMode::kEval), PullVec(*b, probe, PullMode::kEval));
  std::vector<float> wrong(3);
  EXPECT_EQ(b->ApplyOovGradient(wrong, {}).code(), StatusCode::kInvalidArgument);
}

// A table saved as parts (each holding the ids one rank owns) loads back whole by merging the
// parts, and into another number of owners by filtering: rows, OOV row and counters survive.
TEST(EmbeddingCheckpointTest, PartsMergeAndFilterIntoAnyOwnerCount) {
  EmbeddingTableConfig c;
  c.dim = 3;
  c.min_count = 2;
  auto whole = MustMake(c);
  Rng rng(11);
  std::vector<uint64_t> all;
  for (int step = 0; step < 4; ++step) {
    const std::vector<uint64_t> ids = RandomBatch(rng, 80, 300);
    PullVec(*whole, ids, PullMode::kTrain);
    PushVec(*whole, ids, RandomGrads(rng, ids.size() * 3), step);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  const std::string full = TempPath("whole.bin");
  ASSERT_TRUE(whole->Save(full).ok());
  // Split into 3 parts by id % 3 (like 3 ranks), each saved on its own.
  std::vector<std::string> parts;
  for (int r = 0; r < 3; ++r) {
    auto t = MustMake(c);
    LoadOptions o;
    o.keep = [r](uint64_t id) { return id % 3 == static_cast<uint64_t>(r); };
    o.counters = r == 0;
    ASSERT_TRUE(t->Load(full, o).ok());
    parts.push_back(TempPath("part" + std::to_string(r) + ".bin"));
    ASSERT_TRUE(t->Save(parts.back()).ok());
  }
  // Merged back into one table: every row as before.
  auto merged = MustMake(c);
  for (size_t r = 0; r < parts.size(); ++r) {
    LoadOptions o;
    o.merge = r > 0;
    ASSERT_TRUE(merged->Load(parts[r], o).ok());
  }
  EXPECT_EQ(merged->Stats().rows, whole->Stats().rows);
  EXPECT_EQ(merged->Stats().pending_ids, whole->Stats().pending_ids);
  EXPECT_EQ(merged->Stats().admissions, whole->Stats().admissions);
  EXPECT_EQ(PullVec(*merged, all, PullMode::kEval), PullVec(*whole, all, PullMode::kEval));
  // Into 2 owners (id % 2): each keeps only its ids, and together they hold every row.
  int64_t rows = 0;
  for (int r = 0; r < 2; ++r) {
    auto t = MustMake(c);
    for (size_t p = 0; p < parts.size(); ++p) {
      LoadOptions o;
      o.merge = p > 0;
      o.keep = [r](uint64_t id) { return id % 2 == static_cast<uint64_t>(r); };
      ASSERT_TRUE(t->Load(parts[p], o).ok());
    }
    rows += t->Stats().rows;
    std::vector<uint64_t> mine;
    for (uint64_t id : all) {
      if (id % 2 == static_cast<uint64_t>(r)) mine.push_back(id);
    }
    EXPECT_EQ(PullVec(*t, mine, PullMode::kEval), PullVec(*whole, mine, PullMode::kEval)) << r;
  }
  EXPECT_EQ(rows, whole->Stats().rows);
  for (const auto& p : parts) std::filesystem::remove(p);
  std::filesystem::remove(full);
}

// ttl_steps: an id not pulled in kTrain for more than ttl_steps Pulls loses its row (and a
// pending id its count); eval Pulls do not keep it alive; seen again, it starts over from its
// initial values; the removed ids are reported once, ascending, with those evicted.
TEST(EmbeddingTableTest, ExpiryRemovesIdsNotPulledForTtlSteps) {
  for (int shards : {1, 8}) {
    EmbeddingTableConfig c;
    c.dim = 2;
    c.num_shards = shards;
    c.ttl_steps = 4;  // sweeps every Pull (ttl / 8 < 1)
    auto t = MustMake(c);
    t->TrackRemovedIds(true);
    const std::vector<float> oov = PullVec(*t, {999}, PullMode::kEval);
    const std::vector<float> fresh_b = PullVec(*t, {20}, PullMode::kTrain);  // tick 1: hot id 10 not yet
    PushVec(*t, {20}, {1.0f, -1.0f}, 0);
    const std::vector<float> trained_b = PullVec(*t, {20}, PullMode::kEval);
    ASSERT_NE(trained_b, fresh_b);
    for (int tick = 2; tick <= 5; ++tick) PullVec(*t, {10}, PullMode::kTrain);
    EXPECT_EQ(PullVec(*t, {20}, PullMode::kEval), trained_b) << shards << " shards: age 4 is kept";
    EXPECT_EQ(t->Stats().expirations, 0);
    PullVec(*t, {10}, PullMode::kTrain);  // tick 6: id 20 was last pulled 5 ticks ago
    TableStats s = t->Stats();
    EXPECT_EQ(s.expirations, 1) << shards;
    EXPECT_EQ(s.rows, 1);
    EXPECT_EQ(PullVec(*t, {20}, PullMode::kEval), oov);
    EXPECT_EQ(t->TakeRemovedIds(), std::vector<uint64_t>{20});
    EXPECT_TRUE(t->TakeRemovedIds().empty());
    EXPECT_EQ(PullVec(*t, {20}, PullMode::kTrain), fresh_b);  // starts over
    EXPECT_EQ(t->Stats().admissions, 3);
  }
  // Pending ids expire too: their sightings are forgotten.
  EmbeddingTableConfig c;
  c.dim = 2;
  c.min_count = 2;
  c.ttl_steps = 2;
  auto t = MustMake(c);
  PullVec(*t, {7}, PullMode::kTrain);
  for (int tick = 2; tick <= 4; ++tick) PullVec(*t, {8, 9}, PullMode::kTrain);
  TableStats s = t->Stats();
  EXPECT_EQ(s.pending_expirations, 1);
  EXPECT_EQ(s.rows, 2);
  PullVec(*t, {7}, PullMode::kTrain);  // sighting 1 again, not 2
  EXPECT_EQ(t->Stats().rows, 2);
  PullVec(*t, {7}, PullMode::kTrain);
  EXPECT_EQ(t->Stats().rows, 3);
}

// Removed ids include rows evicted for the budget; nothing is recorded unless asked for.
TEST(EmbeddingTableTest, RemovedIdsIncludeEvictions) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.num_shards = 1;
  c.memory_budget_bytes = 8192;
  auto t = MustMake(c);
  std::vector<uint64_t> ids(200);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  PullVec(*t, ids, PullMode::kTrain);
  ASSERT_GT(t->Stats().evictions, 0);
  EXPECT_TRUE(t->TakeRemovedIds().empty());
  t->TrackRemovedIds(true);
  const int64_t before = t->Stats().evictions;
  for (auto& id : ids) id += 1000;
  PullVec(*t, ids, PullMode::kTrain);
  const std::vector<uint64_t> removed = t->TakeRemovedIds();
  EXPECT_EQ(static_cast<int64_t>(removed.size()), t->Stats().evictions - before);
  EXPECT_TRUE(std::is_sorted(removed.begin(), removed.end()));
}

// A run with expiry (and admission) saved at step k and resumed from the file ends bit-identical
// to the uninterrupted run: rows, OOV row, pending counts and every counter.
TEST(EmbeddingCheckpointTest, ResumeWithExpiryIsBitIdentical) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.num_shards = 8;
  c.min_count = 2;
  c.ttl_steps = 6;
  c.optimizer.type = optim::SparseOptimizerType::kAdam;
  auto steps = [](EmbeddingTable& t, int from, int to) {
    for (int step = from; step < to; ++step) {
      Rng rng(500 + static_cast<uint64_t>(step));
      const std::vector<uint64_t> ids = RandomBatch(rng, 150, 2000);
      PullVec(t, ids, PullMode::kTrain);
      PushVec(t, ids, RandomGrads(rng, ids.size() * 4), step);
    }
  };
  auto whole = MustMake(c);
  steps(*whole, 0, 13);  // the save lands between two sweeps, with pending ids half-way
  const std::string path = TempPath("ttl_resume");
  ASSERT_TRUE(whole->Save(path).ok());
  steps(*whole, 13, 40);
  auto resumed = MustMake(c);
  ASSERT_TRUE(resumed->Load(path).ok());
  steps(*resumed, 13, 40);
  std::vector<uint64_t> all;
  for (uint64_t i = 0; i < 2000; ++i) all.push_back(i * 7919 + 13);
  EXPECT_EQ(PullVec(*resumed, all, PullMode::kEval), PullVec(*whole, all, PullMode::kEval));
  const TableStats a = whole->Stats(), b = resumed->Stats();
  EXPECT_GT(a.expirations, 0);
  EXPECT_GT(a.pending_expirations, 0);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.pending_ids, b.pending_ids);
  EXPECT_EQ(a.expirations, b.expirations);
  EXPECT_EQ(a.pending_expirations, b.pending_expirations);
  EXPECT_EQ(a.admissions, b.admissions);
  std::remove(path.c_str());
}

// tests/golden/embedding/v1_adagrad_dim2.emb was written by the version-1 writer from the steps
// below (dim 2, 4 shards, min_count 2, adagrad): it loads with every row and pending count, its
// pending ids count as seen at the file's clock, and it saves again as the current version.
TEST(EmbeddingCheckpointTest, LoadsVersion1Files) {
  EmbeddingTableConfig c;
  c.dim = 2;
  c.num_shards = 4;
  c.min_count = 2;
  c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  c.ttl_steps = 2;
  auto same = MustMake(c);
  std::vector<uint64_t> all;
  for (int step = 0; step < 3; ++step) {
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 6; ++i) ids.push_back(i * 2 + static_cast<uint64_t>(step));
    std::vector<float> g(ids.size() * 2);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
    PullVec(*same, ids, PullMode::kTrain);
    PushVec(*same, ids, g, step, 0.1f);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  auto loaded = MustMake(c);
  const Status st = loaded->Load(std::string(RECTRAIN_GOLDEN_DIR) + "/embedding/v1_adagrad_dim2.emb");
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(loaded->Stats().rows, 5);
  EXPECT_EQ(loaded->Stats().pending_ids, 8);
  EXPECT_EQ(PullVec(*loaded, all, PullMode::kEval), PullVec(*same, all, PullMode::kEval));
  // The file's clock is 3: ids 0 and 1 (last seen at ticks 1 and 2) are not yet expired when
  // loaded, and at tick 6 every id not pulled since has gone from both tables alike.
  for (int tick = 4; tick <= 6; ++tick) {
    PullVec(*same, {12}, PullMode::kTrain);
    PullVec(*loaded, {12}, PullMode::kTrain);
  }
  EXPECT_EQ(loaded->Stats().rows, same->Stats().rows);
  EXPECT_EQ(loaded->Stats().pending_ids, 0);
  EXPECT_EQ(same->Stats().pending_ids, 0);
  const std::string path = TempPath("v1_resaved");
  ASSERT_TRUE(loaded->Save(path).ok());
  auto reloaded = MustMake(c);
  ASSERT_TRUE(reloaded->Load(path).ok());
  EXPECT_EQ(PullVec(*reloaded, all, PullMode::kEval), PullVec(*loaded, all, PullMode::kEval));
  std::remove(path.c_str());
}

// ---- Incremental checkpoints (SaveChanges / LoadChanges) ----

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Admission, eviction under a budget and expiry all at work, so deltas carry changed, new and
// removed rows and pending ids.
EmbeddingTableConfig DeltaConfig() {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.num_shards = 8;
  c.min_count = 2;
  c.ttl_steps = 12;
  c.memory_budget_bytes = 64 << 10;
  c.optimizer.type = optim::SparseOptimizerType::kAdam;
  return c;
}

// Full checkpoint, then k deltas: loading them in order equals loading a full checkpoint of the
// same state (canonical bytes of a re-save, every counter). Without a memory budget (whose
// loads forget pending counts and size indexes anew, deltas or not) the restored table also
// equals the run's own, and training on from it gives the table of the run never saved.
void CheckDeltaChain(const EmbeddingTableConfig& c) {
  const bool budget = c.memory_budget_bytes > 0;
  auto run = MustMake(c);
  run->TrackChanges(ChangeLog::kCheckpoint, true);
  Rng rng(3);
  Train(*run, rng, 12, 0);
  const std::string base = TempPath("delta_base");
  ASSERT_TRUE(run->Save(base).ok());
  run->MarkSaved(ChangeLog::kCheckpoint);
  std::vector<std::string> deltas;
  for (int k = 0; k < 4; ++k) {
    Train(*run, rng, 3 + k, 100 * (k + 1));
    deltas.push_back(TempPath("delta_" + std::to_string(k)));
    ASSERT_TRUE(run->SaveChanges(deltas.back()).ok());
    run->MarkSaved(ChangeLog::kCheckpoint);
  }
  ASSERT_EQ(run->Stats().evictions > 0, budget);
  ASSERT_GT(run->Stats().expirations, 0);
  ASSERT_GT(run->Stats().pending_ids, 0);
  const std::string full = TempPath("delta_full");
  ASSERT_TRUE(run->Save(full).ok());
  auto chained = MustMake(c), whole = MustMake(c);
  ASSERT_TRUE(chained->Load(base).ok());
  for (const std::string& d : deltas) ASSERT_TRUE(chained->LoadChanges(d, {}).ok()) << d;
  ASSERT_TRUE(whole->Load(full).ok());
  const std::string a = TempPath("delta_resaved_chain"), b = TempPath("delta_resaved_full");
  ASSERT_TRUE(chained->Save(a).ok());
  ASSERT_TRUE(whole->Save(b).ok());
  EXPECT_TRUE(ReadCanonicalTable(a) == ReadCanonicalTable(b));
  if (!budget) {
    EXPECT_TRUE(ReadCanonicalTable(a) == ReadCanonicalTable(full));
    Rng r1(77), r2(77);
    Train(*run, r1, 6, 1000);
    Train(*chained, r2, 6, 1000);
    ASSERT_TRUE(run->Save(a).ok());
    ASSERT_TRUE(chained->Save(b).ok());
    EXPECT_TRUE(ReadCanonicalTable(a) == ReadCanonicalTable(b));
  }
  for (const std::string& p : deltas) std::remove(p.c_str());
  for (const std::string& p : {base, full, a, b}) std::remove(p.c_str());
}

TEST(EmbeddingDeltaTest, FullPlusDeltasEqualsFull) {
  EmbeddingTableConfig c = DeltaConfig();
  c.memory_budget_bytes = 0;
  CheckDeltaChain(c);
}

TEST(EmbeddingDeltaTest, FullPlusDeltasEqualsFullUnderEviction) { CheckDeltaChain(DeltaConfig()); }

using RowMap = std::map<uint64_t, std::vector<float>>;

RowMap AllRows(const EmbeddingTable& t) {
  RowMap rows;
  EXPECT_TRUE(t.ForEachRow([&](uint64_t id, uint32_t, std::span<const float> w) { rows[id].assign(w.begin(), w.end()); }).ok());
  return rows;
}

// The publish log and the checkpoint log keep their own marks: checkpoints (SaveChanges +
// MarkSaved(kCheckpoint)) between two publishes take nothing from the next publish, and
// publishes between checkpoints take nothing from the next checkpoint. A consumer that applies
// each ForEachChangedRow(kPublish) to its copy holds the table's rows exactly (admission,
// eviction and expiry at work), and the checkpoint chain restores the table as before.
TEST(EmbeddingDeltaTest, PublishAndCheckpointLogsAreIndependent) {
  const EmbeddingTableConfig c = DeltaConfig();
  auto run = MustMake(c);
  std::vector<uint64_t> removed;
  EXPECT_EQ(run->ForEachChangedRow(ChangeLog::kPublish, [](uint64_t, uint32_t, std::span<const float>) {}, &removed).code(),
            StatusCode::kFailedPrecondition);
  run->TrackChanges(ChangeLog::kCheckpoint, true);
  run->TrackChanges(ChangeLog::kPublish, true);
  Rng rng(5);
  Train(*run, rng, 10, 0);
  const std::string base = TempPath("logs_base");
  ASSERT_TRUE(run->Save(base).ok());
  run->MarkSaved(ChangeLog::kCheckpoint);
  RowMap published = AllRows(*run);  // the consumer's first copy is complete
  run->MarkSaved(ChangeLog::kPublish);
  std::vector<std::string> deltas;
  int64_t changed_total = 0, removed_total = 0;
  for (int round = 0; round < 12; ++round) {
    Train(*run, rng, 2, 100 * (round + 1));
    if (round % 3 != 2) {  // checkpoints twice as often as publishes
      deltas.push_back(TempPath("logs_delta_" + std::to_string(round)));
      ASSERT_TRUE(run->SaveChanges(deltas.back()).ok());
      run->MarkSaved(ChangeLog::kCheckpoint);
    }
    if (round % 4 == 3) {
      removed.clear();
      ASSERT_TRUE(run->ForEachChangedRow(
                         ChangeLog::kPublish,
                         [&](uint64_t id, uint32_t, std::span<const float> w) {
                           published[id].assign(w.begin(), w.end());
                           ++changed_total;
                         },
                         &removed)
                      .ok());
      for (uint64_t id : removed) published.erase(id);  // also ids admitted after the mark
      removed_total += static_cast<int64_t>(removed.size());
      run->MarkSaved(ChangeLog::kPublish);
      EXPECT_TRUE(published == AllRows(*run)) << "after round " << round;
    }
  }
  EXPECT_GT(changed_total, 0);
  EXPECT_GT(removed_total, 0);
  EXPECT_GT(run->Stats().evictions, 0);
  deltas.push_back(TempPath("logs_delta_last"));  // the rounds since the last checkpoint
  ASSERT_TRUE(run->SaveChanges(deltas.back()).ok());
  const std::string full = TempPath("logs_full"), resaved = TempPath("logs_resaved");
  ASSERT_TRUE(run->Save(full).ok());
  auto chained = MustMake(c), whole = MustMake(c);
  ASSERT_TRUE(chained->Load(base).ok());
  for (const std::string& d : deltas) ASSERT_TRUE(chained->LoadChanges(d, {}).ok()) << d;
  ASSERT_TRUE(whole->Load(full).ok());
  ASSERT_TRUE(chained->Save(resaved).ok());
  ASSERT_TRUE(whole->Save(full).ok());
  EXPECT_TRUE(ReadCanonicalTable(resaved) == ReadCanonicalTable(full));
  for (const std::string& p : deltas) std::remove(p.c_str());
  for (const std::string& p : {base, full, resaved}) std::remove(p.c_str());
}

// A delta split over ranks: each rank's table saves its rows' changes; every part loads into any
// owner count (each keeping its ids), as full parts do.
TEST(EmbeddingDeltaTest, PartsApplyIntoAnyOwnerCount) {
  EmbeddingTableConfig c = DeltaConfig();
  c.memory_budget_bytes = 0;
  auto owner_of = [](uint64_t id, int world) { return static_cast<int>(Mix64(id ^ 0x5eed) % world); };
  auto ref = MustMake(c);
  std::vector<std::unique_ptr<EmbeddingTable>> ranks;
  for (int r = 0; r < 2; ++r) ranks.push_back(MustMake(c));
  auto step = [&](Rng& rng, int n, int first) {
    for (int s = first; s < first + n; ++s) {
      const std::vector<uint64_t> ids = RandomBatch(rng, 200, 3000);
      const std::vector<float> g = RandomGrads(rng, ids.size() * c.dim);
      PullVec(*ref, ids, PullMode::kTrain);
      PushVec(*ref, ids, g, s);
      for (int r = 0; r < 2; ++r) {
        std::vector<uint64_t> mine;
        std::vector<float> mg;
        for (size_t i = 0; i < ids.size(); ++i) {
          if (owner_of(ids[i], 2) != r) continue;
          mine.push_back(ids[i]);
          mg.insert(mg.end(), g.begin() + i * c.dim, g.begin() + (i + 1) * c.dim);
        }
        PullVec(*ranks[r], mine, PullMode::kTrain);
        std::vector<float> oov(c.dim, 0.0f);
        ASSERT_TRUE(ranks[r]->PushRows(mine, mg, {.step = s, .learning_rate = 0.05f}, {1}, oov).ok());
      }
    }
  };
  Rng rng(9);
  step(rng, 8, 0);
  std::vector<std::string> base, delta;
  for (int r = 0; r < 2; ++r) {
    base.push_back(TempPath("parts_base_" + std::to_string(r)));
    delta.push_back(TempPath("parts_delta_" + std::to_string(r)));
    ASSERT_TRUE(ranks[r]->Save(base[r]).ok());
    ranks[r]->TrackChanges(ChangeLog::kCheckpoint, true);
  }
  step(rng, 5, 8);
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(ranks[r]->SaveChanges(delta[r]).ok());
  using Rows = std::map<uint64_t, std::pair<uint32_t, std::vector<float>>>;
  auto rows_of = [](const EmbeddingTable& t, Rows* out) {
    ASSERT_TRUE(t.ForEachRow([&](uint64_t id, uint32_t updates, std::span<const float> w) {
                   (*out)[id] = {updates, std::vector<float>(w.begin(), w.end())};
                 }).ok());
  };
  Rows want;
  rows_of(*ref, &want);
  for (int world : {1, 3}) {
    Rows got;
    for (int me = 0; me < world; ++me) {
      auto t = MustMake(c);
      LoadOptions o;
      if (world > 1) o.keep = [&, me, world](uint64_t id) { return owner_of(id, world) == me; };
      for (int p = 0; p < 2; ++p) {
        o.merge = p > 0;
        ASSERT_TRUE(t->Load(base[p], o).ok());
      }
      for (int p = 0; p < 2; ++p) {
        o.merge = p > 0;
        const Status st = t->LoadChanges(delta[p], o);
        ASSERT_TRUE(st.ok()) << st;
      }
      rows_of(*t, &got);
    }
    EXPECT_EQ(got, want) << "world " << world;
  }
  for (int r = 0; r < 2; ++r) {
    std::remove(base[r].c_str());
    std::remove(delta[r].c_str());
  }
}

// A delta's bytes follow the rows touched since the checkpoint, not the table's size: exactly a
// fixed part plus one record per changed row.
TEST(EmbeddingDeltaTest, BytesProportionalToRowsTouched) {
  EmbeddingTableConfig c;
  c.dim = 16;
  c.num_shards = 16;
  c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  const int64_t rows = 20000;
  std::vector<uint64_t> all(rows);
  for (int64_t i = 0; i < rows; ++i) all[i] = static_cast<uint64_t>(i) * 7919 + 13;
  const std::string full = TempPath("bytes_full");
  std::map<int64_t, int64_t> bytes;  // rows touched -> delta bytes
  for (int64_t touched : {int64_t{200}, int64_t{400}, int64_t{2000}}) {
    auto t = MustMake(c);
    PullVec(*t, all, PullMode::kTrain);
    ASSERT_TRUE(t->Save(full).ok());
    t->TrackChanges(ChangeLog::kCheckpoint, true);
    const std::vector<uint64_t> some(all.begin(), all.begin() + touched);
    PullVec(*t, some, PullMode::kTrain);
    PushVec(*t, some, std::vector<float>(some.size() * c.dim, 0.5f), 1);
    const std::string d = TempPath("bytes_delta");
    ASSERT_TRUE(t->SaveChanges(d).ok());
    bytes[touched] = static_cast<int64_t>(std::filesystem::file_size(d));
    std::remove(d.c_str());
  }
  const int64_t full_bytes = static_cast<int64_t>(std::filesystem::file_size(full));
  std::remove(full.c_str());
  const int64_t record = 16 + 4 * (c.dim + c.dim);  // id, updates, tick, weights, adagrad state
  // 200 -> 400 -> 2000 rows: the bytes grow by exactly one record per row (plus a block header
  // and CRC per 4096 rows), and 1% of the rows is about 1% of the full file.
  EXPECT_EQ(bytes[400] - bytes[200], 200 * record);
  EXPECT_EQ(bytes[2000] - bytes[200], 1800 * record);
  EXPECT_LT(bytes[200], full_bytes / 100 + 1024) << "full " << full_bytes;
  EXPECT_GT(bytes[200], full_bytes / 100 - 1024) << "full " << full_bytes;
}

TEST(EmbeddingDeltaTest, SaveChangesNeedsTracking) {
  auto t = MustMake(DeltaConfig());
  const Status st = t->SaveChanges(TempPath("untracked"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
}

// A corrupt or truncated delta is DataLoss naming the file, and leaves the table as it was; a
// full file given as a delta (and the other way round) says which it is.
TEST(EmbeddingDeltaTest, CorruptDeltaIsDataLossAndLeavesTableUnchanged) {
  const EmbeddingTableConfig c = DeltaConfig();
  auto t = MustMake(c);
  Rng rng(4);
  Train(*t, rng, 6, 0);
  const std::string base = TempPath("corrupt_delta_base"), d = TempPath("corrupt_delta");
  ASSERT_TRUE(t->Save(base).ok());
  t->TrackChanges(ChangeLog::kCheckpoint, true);
  Train(*t, rng, 2, 6);
  ASSERT_TRUE(t->SaveChanges(d).ok());
  const std::string good = ReadBytes(d);
  auto loaded = MustMake(c);
  ASSERT_TRUE(loaded->Load(base).ok());
  const std::vector<float> before = PullVec(*loaded, AllIds(), PullMode::kEval);
  for (size_t at : {size_t{30}, good.size() / 2, good.size() - 20}) {
    std::string bad = good;
    bad[at] ^= 0x20;
    { std::ofstream(d, std::ios::binary | std::ios::trunc) << bad; }
    const Status st = loaded->LoadChanges(d, {});
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << "byte " << at << ": " << st;
    EXPECT_NE(st.message().find(d), std::string::npos) << st;
  }
  { std::ofstream(d, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() - 9); }
  EXPECT_EQ(loaded->LoadChanges(d, {}).code(), StatusCode::kDataLoss);
  EXPECT_EQ(PullVec(*loaded, AllIds(), PullMode::kEval), before);
  const Status full_as_delta = loaded->LoadChanges(base, {});
  EXPECT_NE(full_as_delta.message().find("a full table file where a delta was expected"), std::string::npos) << full_as_delta;
  { std::ofstream(d, std::ios::binary | std::ios::trunc) << good; }
  const Status delta_as_full = loaded->Load(d);
  EXPECT_NE(delta_as_full.message().find("a delta file where a full table file was expected"), std::string::npos)
      << delta_as_full;
  EXPECT_EQ(PullVec(*loaded, AllIds(), PullMode::kEval), before);
  std::remove(base.c_str());
  std::remove(d.c_str());
}

// tests/golden/embedding/delta_v1_adagrad_dim2.embd: the delta the steps below save (format
// version 1 of docs/formats/checkpoint-embedding-delta.md). The writer must keep producing these
// bytes (regenerate only with a version bump: RECTRAIN_UPDATE_GOLDEN=1 ./embedding_test), and
// they apply onto the base to the state a full save holds.
TEST(EmbeddingDeltaTest, GoldenDeltaFile) {
  EmbeddingTableConfig c;
  c.dim = 2;
  c.num_shards = 4;
  c.min_count = 2;
  c.ttl_steps = 2;  // removed ids
  c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  auto t = MustMake(c);
  auto step = [&](int s) {
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 5; ++i) ids.push_back(i * 3 + static_cast<uint64_t>(s));
    std::vector<float> g(ids.size() * 2);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
    PullVec(*t, ids, PullMode::kTrain);
    PushVec(*t, ids, g, s, 0.1f);
  };
  for (int s = 0; s < 3; ++s) step(s);
  const std::string base = TempPath("golden_base"), d = TempPath("golden_delta");
  ASSERT_TRUE(t->Save(base).ok());
  t->TrackChanges(ChangeLog::kCheckpoint, true);
  for (int s = 3; s < 8; ++s) step(s);
  ASSERT_TRUE(t->SaveChanges(d).ok());
  const std::string golden = std::string(RECTRAIN_GOLDEN_DIR) + "/embedding/delta_v1_adagrad_dim2.embd";
  if (std::getenv("RECTRAIN_UPDATE_GOLDEN") != nullptr) std::filesystem::copy_file(d, golden, std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(ReadBytes(d), ReadBytes(golden));
  auto loaded = MustMake(c);
  ASSERT_TRUE(loaded->Load(base).ok());
  const Status st = loaded->LoadChanges(golden, {});
  ASSERT_TRUE(st.ok()) << st;
  const std::string a = TempPath("golden_a"), b = TempPath("golden_b");
  ASSERT_TRUE(t->Save(a).ok());
  ASSERT_TRUE(loaded->Save(b).ok());
  EXPECT_TRUE(ReadCanonicalTable(a) == ReadCanonicalTable(b));
  for (const std::string& p : {base, d, a, b}) std::remove(p.c_str());
}

}  // namespace
}  // namespace rectrain::embedding
