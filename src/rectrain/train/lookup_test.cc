#include "rectrain/train/lookup.h"

#include <gtest/gtest.h>

#include "rectrain/base/random.h"
#include "rectrain/train/fake_table_test_util.h"

namespace rectrain::train {
namespace {

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

TEST(LookupWorkspace, DedupesPerTableAcrossFields) {
  // Fields 0 and 2 share table 0; field 1 (multi-valued) reads table 1.
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, "sum"}, {"b", 1, "sum"}, {"c", 0, "sum"}};
  testing::FakeTable t0("t0", 2), t1("t1", 3);
  LookupWorkspace ws(spec, {&t0, &t1});
  data::Batch batch;
  batch.size = 3;
  batch.sparse.resize(3);
  batch.sparse[0].ids = {5, 6, 5};
  batch.sparse[1].offsets = {0, 2, 2, 3};
  batch.sparse[1].ids = {1, 1, 4};
  batch.sparse[2].ids = {6, 8, 5};
  for (int threads : {1, 2}) {
    ASSERT_TRUE(ws.Lookup(batch, embedding::PullMode::kEval, ComputeContext{.num_threads = threads}).ok());
    EXPECT_EQ(t0.pulls.back(), (std::vector<uint64_t>{5, 6, 8}));
    EXPECT_EQ(t1.pulls.back(), (std::vector<uint64_t>{1, 4}));
    EXPECT_EQ(t0.last_mode, embedding::PullMode::kEval);
    auto fields = ws.fields();
    ASSERT_EQ(fields.size(), 3u);
    EXPECT_EQ(std::vector<int32_t>(fields[0].rows.begin(), fields[0].rows.end()), (std::vector<int32_t>{0, 1, 0}));
    EXPECT_EQ(std::vector<int32_t>(fields[2].rows.begin(), fields[2].rows.end()), (std::vector<int32_t>{1, 2, 0}));
    EXPECT_EQ(std::vector<int32_t>(fields[1].rows.begin(), fields[1].rows.end()), (std::vector<int32_t>{0, 0, 1}));
    EXPECT_EQ(fields[1].offsets.size(), 4u);
    EXPECT_TRUE(fields[0].offsets.empty());
    auto pulled = ws.pulled();
    EXPECT_EQ(pulled[0].num_unique, 3);
    EXPECT_EQ(pulled[1].dim, 3);
    EXPECT_FLOAT_EQ(pulled[0].rows[2 * 2 + 1], t0.Value(8, 1));
    EXPECT_EQ(ws.num_unique(), 5);
    EXPECT_EQ(ws.grads()[0].size(), 6u);
    EXPECT_EQ(ws.grads()[1].size(), 6u);
  }
  ws.grads()[1][4] = 2.5f;
  ASSERT_TRUE(ws.Push(optim::StepContext{.step = 3, .learning_rate = 0.25f}, ComputeContext{}).ok());
  EXPECT_EQ(t1.pushed_ids, (std::vector<uint64_t>{1, 4}));
  EXPECT_FLOAT_EQ(t1.pushed_grads[4], 2.5f);
  EXPECT_FLOAT_EQ(t1.pushed_lr, 0.25f);
}

TEST(LookupWorkspace, RejectsMismatchedBatch) {
  nn::ModelSpec spec;
  spec.fields = {{"a", 0, "sum"}};
  testing::FakeTable t0("t0", 2);
  LookupWorkspace ws(spec, {&t0});
  data::Batch batch;
  batch.size = 2;
  EXPECT_EQ(ws.Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).message(),
            "batch has 0 categorical fields but the model expects 1");
  batch.sparse.resize(1);
  batch.sparse[0].ids = {1};
  EXPECT_EQ(ws.Lookup(batch, embedding::PullMode::kTrain, ComputeContext{}).message(),
            "field 0 has 1 ids for 2 rows");
}

}  // namespace
}  // namespace rectrain::train
