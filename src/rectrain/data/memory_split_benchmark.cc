// In-memory epoch cache throughput (memory_split.h, epoch_order.h), criteo shape (label, 13
// dense, 26 single-valued sparse fields), 1M rows (~256 MiB):
//   BM_Gather/0     batches of 4096 rows in file order (identity)
//   BM_Gather/1     batches of 4096 rows of a random permutation (what shuffled epochs read)
//   BM_Append       filling the cache from batches of 4096 (the copy epoch 0 pays)
//   BM_StratifiedOrder / BM_PermutedOrder   building one epoch's order for 1M rows
// Reported as rows/s (items_per_second) of the thread doing the work.
#include <benchmark/benchmark.h>

#include <memory>

#include "rectrain/base/check.h"
#include "rectrain/base/random.h"
#include "rectrain/data/epoch_order.h"
#include "rectrain/data/memory_split.h"

namespace rectrain::data {
namespace {

constexpr int64_t kRows = 1 << 20;
constexpr int64_t kBatch = 4096;

Batch CriteoBatch(int64_t base, int64_t n) {
  Batch b;
  b.size = n;
  b.num_dense = 13;
  b.labels.resize(static_cast<size_t>(n));
  b.dense.resize(static_cast<size_t>(n * 13));
  b.sparse.resize(26);
  Rng rng(static_cast<uint64_t>(base));
  for (int64_t i = 0; i < n; ++i) b.labels[static_cast<size_t>(i)] = static_cast<float>(rng.Below(2));
  for (float& v : b.dense) v = rng.UniformFloat();
  for (auto& col : b.sparse) {
    col.ids.resize(static_cast<size_t>(n));
    for (uint64_t& id : col.ids) id = rng.Next();
  }
  return b;
}

std::vector<std::string> Names(const char* prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i + 1));
  return v;
}

std::shared_ptr<const MemorySplit> BuildSplit() {
  auto budget = std::make_shared<MemoryBudget>(int64_t{4} << 30);
  MemorySplitBuilder builder(budget, Names("I", 13), Names("C", 26));
  const Batch b = CriteoBatch(1, kBatch);
  for (int64_t done = 0; done < kRows; done += kBatch) RECTRAIN_CHECK(builder.Append(b).ok());
  auto split = builder.Finish();
  RECTRAIN_CHECK(split.ok());
  return *split;
}

const MemorySplit& SharedSplit() {
  static const std::shared_ptr<const MemorySplit> split = BuildSplit();
  return *split;
}

void BM_Gather(benchmark::State& state) {
  const MemorySplit& split = SharedSplit();
  const std::vector<uint32_t> order = state.range(0) ? PermutedOrder(kRows, 7, 1) : IdentityOrder(kRows);
  Batch out;
  int64_t pos = 0;
  for (auto _ : state) {
    if (pos + kBatch > kRows) pos = 0;
    split.Gather(std::span<const uint32_t>(order.data() + pos, kBatch), &out);
    benchmark::DoNotOptimize(out.labels.data());
    pos += kBatch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["MiB"] = static_cast<double>(split.bytes()) / (1 << 20);
}
BENCHMARK(BM_Gather)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Append(benchmark::State& state) {
  const Batch b = CriteoBatch(1, kBatch);
  for (auto _ : state) {
    auto budget = std::make_shared<MemoryBudget>(int64_t{4} << 30);
    MemorySplitBuilder builder(budget, Names("I", 13), Names("C", 26));
    for (int64_t done = 0; done < kRows / 4; done += kBatch) RECTRAIN_CHECK(builder.Append(b).ok());
    benchmark::DoNotOptimize(builder.bytes());
  }
  state.SetItemsProcessed(state.iterations() * kRows / 4);
}
BENCHMARK(BM_Append)->Unit(benchmark::kMillisecond);

void BM_PermutedOrder(benchmark::State& state) {
  int64_t epoch = 0;
  for (auto _ : state) benchmark::DoNotOptimize(PermutedOrder(kRows, 7, epoch++).data());
  state.SetItemsProcessed(state.iterations() * kRows);
}
BENCHMARK(BM_PermutedOrder)->Unit(benchmark::kMillisecond);

void BM_StratifiedOrder(benchmark::State& state) {
  // 1M rows over ~100k keys with a heavy tail (key = floor of a Pareto-like draw).
  std::vector<uint64_t> keys(kRows);
  Rng rng(3);
  for (uint64_t& k : keys) k = static_cast<uint64_t>(100000.0 * rng.Uniform() * rng.Uniform());
  const KeyGroups groups = GroupRowsByKey(keys);
  int64_t epoch = 0;
  for (auto _ : state) benchmark::DoNotOptimize(StratifiedOrder(groups, kBatch, 7, epoch++).data());
  state.SetItemsProcessed(state.iterations() * kRows);
  state.counters["keys"] = static_cast<double>(groups.num_keys());
}
BENCHMARK(BM_StratifiedOrder)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rectrain::data

BENCHMARK_MAIN();
