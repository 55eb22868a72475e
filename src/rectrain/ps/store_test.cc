// The embedding stores. Local: dedupe per table across fields, indices, push (ported from the
// trainer's former LookupWorkspace tests). Sharded over 2-4 in-process ranks: a sequence of
// global batches split over the ranks trains exactly the tables a single process trains on the
// whole batches — gradients are dyadic numbers, so sums are exact in any order and the rows must
// agree bit for bit — including admission (min_count) through the replicated OOV row, eval
// pulls, ranks with empty batches, and the exchange volume against its minimum.
#include "rectrain/ps/embedding_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "rectrain/base/random.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/dist/inproc.h"
#include "rectrain/testing/fake_table.h"
#include "rectrain/ps/internal/batch_ids.h"

namespace rectrain::ps {
namespace {

using internal::IdDeduper;

TEST(IdDeduper, FirstOccurrenceOrderAndIndices) {
  IdDeduper d;
  for (int round = 0; round < 3; ++round) {  // reuse across resets
    d.Reset(6);
    std::vector<uint64_t> ids = {7, 3, 7, 9, 3, 7};
    std::vector<int32_t> idx;
    for (uint64_t id : ids) idx.push_back(d.Insert(id));
    EXPECT_EQ(d.unique(), (std::vector<uint64_t>{7, 3, 9}));
    EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 0, 2, 1, 0}));
  }
}

TEST(IdDeduper, ManyIdsWithCollisions) {
  IdDeduper d;
  Rng rng(5);
  for (int round = 0; round < 4; ++round) {
    const int n = 50000;
    d.Reset(n);
    std::vector<uint64_t> ids(n);
    for (auto& id : ids) id = rng.Below(20000) << 40;  // low bits all zero: stresses the hash
    std::vector<int32_t> idx(n);
    for (int i = 0; i < n; ++i) idx[i] = d.Insert(ids[i]);
    for (int i = 0; i < n; ++i) ASSERT_EQ(d.unique()[idx[i]], ids[i]);
    std::vector<uint64_t> sorted = d.unique();
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
}

TEST(LocalStore, DedupesPerTableAcrossFields) {
  // Fields 0 and 2 share table 0; field 1 (multi-valued) reads table 1.
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, nn::Pooling::kSum}, {"b", 1, nn::Pooling::kSum}, {"c", 0, nn::Pooling::kSum}};
  testing::FakeTable t0("t0", 2), t1("t1", 3);
  auto ws = MakeLocalStore(spec, {&t0, &t1});
  data::Batch batch;
  batch.size = 3;
  batch.sparse.resize(3);
  batch.sparse[0].ids = {5, 6, 5};
  batch.sparse[1].offsets = {0, 2, 2, 3};
  batch.sparse[1].ids = {1, 1, 4};
  batch.sparse[2].ids = {6, 8, 5};
  for (int threads : {1, 2}) {
    ASSERT_TRUE(ws->Lookup(batch, embedding::PullMode::kEval, ComputeContext{.num_threads = threads}).ok());
    EXPECT_EQ(t0.pulls.back(), (std::vector<uint64_t>{5, 6, 8}));
    EXPECT_EQ(t1.pulls.back(), (std::vector<uint64_t>{1, 4}));
    EXPECT_EQ(t0.last_mode, embedding::PullMode::kEval);
    auto fields = ws->fields();
    ASSERT_EQ(fields.size(), 3u);
    EXPECT_EQ(std::vector<int32_t>(fields[0].rows.begin(), fields[0].rows.end()), (std::vector<int32_t>{0, 1, 0}));
    EXPECT_EQ(std::vector<int32_t>(fields[2].rows.begin(), fields[2].rows.end()), (std::vector<int32_t>{1, 2, 0}));
    EXPECT_EQ(std::vector<int32_t>(fields[1].rows.begin(), fields[1].rows.end()), (std::vector<int32_t>{0, 0, 1}));
    EXPECT_EQ(fields[1].offsets.size(), 4u);
    EXPECT_TRUE(fields[0].offsets.empty());
    auto pulled = ws->pulled();
    EXPECT_EQ(pulled[0].num_unique, 3);
    EXPECT_EQ(pulled[1].dim, 3);
    EXPECT_FLOAT_EQ(pulled[0].rows[2 * 2 + 1], t0.Value(8, 1));
    EXPECT_EQ(ws->num_unique(), 5);
    EXPECT_EQ(ws->grads()[0].size(), 6u);
    EXPECT_EQ(ws->grads()[1].size(), 6u);
  }
  ws->grads()[1][4] = 2.5f;
  ASSERT_TRUE(ws->Push(optim::StepContext{.step = 3, .learning_rate = 0.25f}, ComputeContext{}).ok());
  EXPECT_EQ(t1.pushed_ids, (std::vector<uint64_t>{1, 4}));
  EXPECT_FLOAT_EQ(t1.pushed_grads[4], 2.5f);
  EXPECT_FLOAT_EQ(t1.pushed_lr, 0.25f);
}

// A serving model's store reads its tables (TableReader::Read) and refuses to train.
TEST(LocalStore, ReadOnlyStoreReadsAndRefusesToTrain) {
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, nn::Pooling::kSum}};
  testing::FakeTable t0("t0", 2);
  auto ws = MakeReadOnlyStore(spec, {&t0});
  data::Batch batch;
  batch.size = 2;
  batch.sparse.resize(1);
  batch.sparse[0].ids = {7, 3};
  ASSERT_TRUE(ws->Lookup(batch, embedding::PullMode::kEval, ComputeContext{}).ok());
  EXPECT_EQ(t0.pulls.back(), (std::vector<uint64_t>{7, 3}));
  EXPECT_EQ(t0.last_mode, embedding::PullMode::kEval);
  EXPECT_FLOAT_EQ(ws->pulled()[0].rows[3], t0.Value(3, 1));
  EXPECT_EQ(ws->Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ws->Push(optim::StepContext{}, ComputeContext{}).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(t0.pushed_ids.empty());
}

// A model without embedding tables (an MLP) trains through the local store: it has nothing to
// look up, and nothing is read-only about that.
TEST(LocalStore, NoTablesTrains) {
  nn::ModelSpec spec;
  auto ws = MakeLocalStore(spec, {});
  data::Batch batch;
  batch.size = 3;
  ASSERT_TRUE(ws->Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).ok());
  EXPECT_TRUE(ws->Push(optim::StepContext{}, ComputeContext{}).ok());
}

TEST(LocalStore, RejectsMismatchedBatch) {
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, nn::Pooling::kSum}};
  testing::FakeTable t0("t0", 2);
  auto ws = MakeLocalStore(spec, {&t0});
  data::Batch batch;
  batch.size = 2;
  EXPECT_EQ(ws->Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).message(),
            "batch has 0 categorical fields but the model expects 1");
  batch.sparse.resize(1);
  batch.sparse[0].ids = {1};
  EXPECT_EQ(ws->Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).message(),
            "field 0 has 1 ids for 2 rows");
  batch = data::Batch();  // 0 rows without columns: a rank with nothing to read this step
  EXPECT_TRUE(ws->Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).ok());
  EXPECT_EQ(ws->num_unique(), 0);
}

TEST(OwnerRank, UniformAndStable) {
  for (int world : {1, 2, 3, 5, 8}) {
    std::vector<int> n(static_cast<size_t>(world), 0);
    for (uint64_t id = 0; id < 80000; ++id) {
      const int r = OwnerRank(id * 0x9E3779B97F4A7C15ULL, world);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, world);
      ++n[static_cast<size_t>(r)];
    }
    for (int c : n) EXPECT_NEAR(c, 80000.0 / world, 80000.0 / world * 0.05) << world;
  }
  EXPECT_EQ(OwnerRank(12345, 4), OwnerRank(12345, 4));
}

// --- sharded vs local ---------------------------------------------------------------------

// Two tables: fields 0 and 1 (single-valued) read table 0 (dim 4), field 2 (multi-valued,
// 0-3 ids per row) reads table 1 (dim 3).
nn::ModelSpec Spec() {
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, nn::Pooling::kSum}, {"b", 0, nn::Pooling::kSum}, {"c", 1, nn::Pooling::kSum}};
  return spec;
}

std::vector<std::unique_ptr<embedding::EmbeddingTable>> MakeTables(int64_t min_count, int64_t ttl_steps = 0) {
  std::vector<std::unique_ptr<embedding::EmbeddingTable>> out;
  for (int t = 0; t < 2; ++t) {
    embedding::EmbeddingTableConfig c;
    c.name = "t" + std::to_string(t);
    c.dim = t == 0 ? 4 : 3;
    c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
    c.min_count = min_count;
    c.ttl_steps = ttl_steps;
    c.num_shards = 8;
    c.seed = 99 + t;
    out.push_back(std::move(*embedding::MakeEmbeddingTable(c)));
  }
  return out;
}

std::vector<embedding::EmbeddingTable*> Raw(const std::vector<std::unique_ptr<embedding::EmbeddingTable>>& v) {
  std::vector<embedding::EmbeddingTable*> out;
  for (const auto& t : v) out.push_back(t.get());
  return out;
}

// Global batch `step` of `rows` rows, ids from a skewed universe (hot ids appear in many rows).
data::Batch GlobalBatch(int step, int64_t rows) {
  Rng rng(1000 + static_cast<uint64_t>(step));
  data::Batch b;
  b.size = rows;
  b.sparse.resize(3);
  b.sparse[2].offsets.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    b.sparse[0].ids.push_back(static_cast<uint64_t>(std::pow(rng.Uniform(), 3.0) * 300));
    b.sparse[1].ids.push_back(1000 + rng.Below(200));
    const int n = static_cast<int>(rng.Below(4));
    for (int k = 0; k < n; ++k) b.sparse[2].ids.push_back(5000 + rng.Below(100));
    b.sparse[2].offsets.push_back(static_cast<int32_t>(b.sparse[2].ids.size()));
  }
  b.labels.assign(static_cast<size_t>(rows), 0.0f);
  return b;
}

// Every occurrence of id contributes Grad(id, d, step) (a dyadic number: sums are exact), so
// the store's summed gradient of a unique id is count × Grad — on one rank or many.
float Grad(uint64_t id, int d, int step) {
  return static_cast<float>(static_cast<int64_t>((id * 7 + static_cast<uint64_t>(d) * 3 + static_cast<uint64_t>(step)) % 17) - 8) / 64.0f;
}

void FillGrads(EmbeddingStore& store, const data::Batch& batch, int step) {
  auto fields = store.fields();
  auto pulled = store.pulled();
  auto grads = store.grads();
  const nn::ModelSpec spec = Spec();
  for (size_t t = 0; t < grads.size(); ++t) std::fill(grads[t].begin(), grads[t].end(), 0.0f);
  for (size_t f = 0; f < fields.size(); ++f) {
    const int t = spec.fields[f].table;
    const int dim = pulled[static_cast<size_t>(t)].dim;
    const auto& col = batch.sparse[f];
    for (size_t k = 0; k < fields[f].rows.size(); ++k) {
      const int32_t u = fields[f].rows[k];
      for (int d = 0; d < dim; ++d) grads[static_cast<size_t>(t)][static_cast<size_t>(u * dim + d)] += Grad(col.ids[k], d, step);
    }
  }
}

// Rows of `ids` of table t as pulled (kEval) through `store`.
std::map<uint64_t, std::vector<float>> RowsOf(EmbeddingStore& store, const data::Batch& probe) {
  std::map<uint64_t, std::vector<float>> out;
  if (!store.Lookup(probe, embedding::PullMode::kEval, ComputeContext{}).ok()) return out;
  auto pulled = store.pulled();
  auto fields = store.fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    const int t = Spec().fields[f].table;
    const int dim = pulled[static_cast<size_t>(t)].dim;
    for (size_t k = 0; k < fields[f].rows.size(); ++k) {
      const float* row = pulled[static_cast<size_t>(t)].rows.data() + fields[f].rows[k] * dim;
      out[probe.sparse[f].ids[k] * 2 + static_cast<uint64_t>(t)] = std::vector<float>(row, row + dim);
    }
  }
  return out;
}

// (world, min_count, ttl_steps): expiry runs on every rank's clock, which advances once a step on
// every rank, so the owners expire exactly the rows one process would.
class ShardedStoreTest : public ::testing::TestWithParam<std::tuple<int, int64_t, int64_t>> {};

TEST_P(ShardedStoreTest, TrainsTheSameRowsAsOneProcess) {
  const auto [world, min_count, ttl_steps] = GetParam();
  const int steps = 6;
  const int64_t rows = 97;
  // The single-process reference.
  auto ref_tables = MakeTables(min_count, ttl_steps);
  auto ref = MakeLocalStore(Spec(), Raw(ref_tables));
  for (int s = 0; s < steps; ++s) {
    const data::Batch b = GlobalBatch(s, rows);
    ASSERT_TRUE(ref->Lookup(b, embedding::PullMode::kTrain, ComputeContext{}).ok());
    FillGrads(*ref, b, s);
    ASSERT_TRUE(ref->Push({.step = s, .learning_rate = 0.1f}, ComputeContext{}).ok());
  }
  const int64_t ref_served = ref->stats().ids_served;
  int64_t ref_expired = 0;
  for (const auto& t : ref_tables) ref_expired += t->Stats().expirations;
  if (ttl_steps > 0) {
    ASSERT_GT(ref_expired, 0);
  }
  const data::Batch probe = GlobalBatch(0, 400);  // covers most ids
  const auto want = RowsOf(*ref, probe);
  ASSERT_FALSE(want.empty());

  std::vector<std::map<uint64_t, std::vector<float>>> got(static_cast<size_t>(world));
  std::vector<StoreStats> stats(static_cast<size_t>(world));
  std::vector<int64_t> expired(static_cast<size_t>(world));
  std::vector<Status> st = dist::RunRanks(world, [&, min_count = min_count, ttl_steps = ttl_steps, world = world](dist::Communicator& comm) -> Status {
    auto tables = MakeTables(min_count, ttl_steps);
    auto store = MakeShardedStore(Spec(), Raw(tables), &comm);
    for (int s = 0; s < steps; ++s) {
      const data::Batch global = GlobalBatch(s, rows);
      const data::RowRange mine = data::SliceOfBatch(rows, comm.rank(), world);
      data::Batch local;
      data::CopyBatchRows(global, mine.begin, mine.end, &local);
      RECTRAIN_RETURN_IF_ERROR(store->Lookup(local, embedding::PullMode::kTrain, ComputeContext{.num_threads = 1 + s % 2}));
      FillGrads(*store, local, s);
      RECTRAIN_RETURN_IF_ERROR(store->Push({.step = s, .learning_rate = 0.1f}, ComputeContext{}));
    }
    // Each rank holds only the rows it owns.
    for (const auto& t : tables) {
      const int64_t rows_here = t->Stats().rows;
      if (world > 1 && rows_here == 0) return InternalError("rank owns no rows");
      expired[static_cast<size_t>(comm.rank())] += t->Stats().expirations;
    }
    stats[static_cast<size_t>(comm.rank())] = store->stats();
    // Every rank reads every row (and the OOV row) through the store, like the reference.
    data::RowRange pr = data::SliceOfBatch(probe.size, comm.rank(), world);
    data::Batch local_probe;
    data::CopyBatchRows(probe, pr.begin, pr.end, &local_probe);
    got[static_cast<size_t>(comm.rank())] = RowsOf(*store, local_probe);
    return OkStatus();
  });
  for (size_t r = 0; r < st.size(); ++r) ASSERT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r];
  size_t seen = 0;
  for (int r = 0; r < world; ++r) {
    for (const auto& [key, row] : got[static_cast<size_t>(r)]) {
      auto it = want.find(key);
      ASSERT_NE(it, want.end());
      ASSERT_EQ(row.size(), it->second.size());
      EXPECT_EQ(std::memcmp(row.data(), it->second.data(), row.size() * sizeof(float)), 0)
          << "id " << key / 2 << " table " << key % 2 << " on rank " << r;
      ++seen;
    }
  }
  EXPECT_GT(seen, want.size() / 2);
  // Owners dedupe across ranks: together they served exactly the ids the reference pulled.
  int64_t served = 0;
  for (const auto& s : stats) served += s.ids_served;
  EXPECT_EQ(served, ref_served);
  int64_t expired_total = 0;
  for (int64_t e : expired) expired_total += e;
  EXPECT_EQ(expired_total, ref_expired);
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShardedStoreTest,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Values(int64_t{1}, int64_t{2}),
                                            ::testing::Values(int64_t{0}, int64_t{2})),
                         [](const auto& param_info) {
                           return "world" + std::to_string(std::get<0>(param_info.param)) + "_min_count" +
                                  std::to_string(std::get<1>(param_info.param)) + "_ttl" +
                                  std::to_string(std::get<2>(param_info.param));
                         });

// Each step sends, per rank: the unique ids to their owners (8 bytes each, plus one count per
// table and destination), the rows back and the gradients (4 × dim bytes each way), and the OOV
// AllReduce — compared here with the bare minimum of ids and rows each way.
TEST(ShardedStore, BytesAreNearTheMinimum) {
  const int world = 2;
  const int64_t rows = 4096;
  std::vector<int64_t> sent(world), minimum(world);
  auto st = dist::RunRanks(world, [&](dist::Communicator& comm) -> Status {
    auto tables = MakeTables(1);
    auto store = MakeShardedStore(Spec(), Raw(tables), &comm);
    const data::Batch global = GlobalBatch(0, rows);
    const data::RowRange mine = data::SliceOfBatch(rows, comm.rank(), world);
    data::Batch local;
    data::CopyBatchRows(global, mine.begin, mine.end, &local);
    RECTRAIN_RETURN_IF_ERROR(store->Lookup(local, embedding::PullMode::kTrain, ComputeContext{}));
    FillGrads(*store, local, 0);
    RECTRAIN_RETURN_IF_ERROR(store->Push({.step = 0, .learning_rate = 0.1f}, ComputeContext{}));
    // Unique ids this rank asked other ranks for, by table.
    int64_t remote_bytes = 0;
    std::vector<std::map<uint64_t, bool>> uniq(2);
    for (size_t f = 0; f < 3; ++f) {
      for (uint64_t id : local.sparse[f].ids) uniq[static_cast<size_t>(Spec().fields[f].table)][id] = true;
    }
    for (int t = 0; t < 2; ++t) {
      for (const auto& [id, unused] : uniq[static_cast<size_t>(t)]) {
        if (OwnerRank(id, world) != comm.rank()) remote_bytes += 8 + 2 * 4 * (t == 0 ? 4 : 3);
      }
    }
    sent[static_cast<size_t>(comm.rank())] = store->stats().bytes_sent;
    minimum[static_cast<size_t>(comm.rank())] = remote_bytes;
    return OkStatus();
  });
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s;
  // Sent: own requests and gradients out, rows back to the other rank for its requests; the
  // minimum counts this rank's side of both directions, so compare the totals.
  for (int r = 0; r < world; ++r) EXPECT_GT(sent[r], 0);
  const double total_sent = static_cast<double>(sent[0] + sent[1]);
  const double total_min = static_cast<double>(minimum[0] + minimum[1]);
  std::printf("store bytes per step: %.0f sent, minimum %.0f (%.3fx)\n", total_sent, total_min, total_sent / total_min);
  EXPECT_LE(total_sent, 1.05 * total_min + 1024) << total_sent << " vs " << total_min;
  EXPECT_GE(total_sent, total_min);
}

// A rank whose share of the pass has ended still takes part in every exchange.
TEST(ShardedStore, EmptyBatchesParticipate) {
  auto st = dist::RunRanks(3, [&](dist::Communicator& comm) -> Status {
    auto tables = MakeTables(1);
    auto store = MakeShardedStore(Spec(), Raw(tables), &comm);
    for (int s = 0; s < 3; ++s) {
      data::Batch b = comm.rank() == 1 ? data::Batch() : GlobalBatch(s, 50);
      RECTRAIN_RETURN_IF_ERROR(store->Lookup(b, embedding::PullMode::kTrain, ComputeContext{}));
      if (comm.rank() != 1) FillGrads(*store, b, s);
      RECTRAIN_RETURN_IF_ERROR(store->Push({.step = s, .learning_rate = 0.1f}, ComputeContext{}));
    }
    if (comm.rank() == 1 && tables[0]->Stats().rows == 0) return InternalError("rank 1 should still own rows");
    return OkStatus();
  });
  for (size_t r = 0; r < st.size(); ++r) EXPECT_TRUE(st[r].ok()) << r << ": " << st[r];
}

}  // namespace
}  // namespace rectrain::ps
