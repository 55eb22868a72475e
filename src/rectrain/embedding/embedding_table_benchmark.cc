// Embedding table micro-benchmarks (Google Benchmark). Units: ids/s (items_per_second).
//
//   build/<dir>/.../embedding_table_benchmark --benchmark_filter='Pull|Push|Insert'
//   RECTRAIN_BENCH_20M=1 .../embedding_table_benchmark --benchmark_filter=Create20M
//
// Pull/Push run on a table of 1M resident rows (144 MiB at dim 16 + Adagrad: beyond the caches,
// so every id is a random memory access), with batches of 65,536 unique ids drawn at random.
// Create20M (opt-in, ~6 GB) inserts 20M new ids at dim 32 + Adagrad and reports the seconds and
// the table's accounted bytes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/embedding/embedding_table.h"

namespace rectrain::embedding {
namespace {

constexpr int64_t kResidentRows = 1 << 20;
constexpr int64_t kBatch = 1 << 16;

std::unique_ptr<EmbeddingTable> MakeTable(int dim, const char* optimizer, int64_t expected) {
  EmbeddingTableConfig c;
  c.dim = dim;
  c.optimizer.type = optimizer;
  c.expected_rows = expected;
  auto t = MakeEmbeddingTable(c);
  if (!t.ok()) std::abort();
  return std::move(*t);
}

// A table of kResidentRows rows with ids 0..kResidentRows-1 (created once per dim).
EmbeddingTable& ResidentTable(int dim) {
  static std::unique_ptr<EmbeddingTable> tables[2];
  std::unique_ptr<EmbeddingTable>& t = tables[dim == 16 ? 0 : 1];
  if (!t) {
    t = MakeTable(dim, "adagrad", kResidentRows);
    std::vector<uint64_t> ids(kBatch);
    std::vector<float> out(kBatch * dim);
    for (int64_t b = 0; b < kResidentRows; b += kBatch) {
      std::iota(ids.begin(), ids.end(), static_cast<uint64_t>(b));
      if (!t->Pull(ids, PullMode::kTrain, out, {}).ok()) std::abort();
    }
  }
  return *t;
}

// `count` batches of unique random resident ids.
std::vector<std::vector<uint64_t>> RandomBatches(int count) {
  std::vector<uint64_t> perm(kResidentRows);
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(1);
  for (int64_t i = kResidentRows - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(i + 1)]);
  std::vector<std::vector<uint64_t>> out;
  for (int b = 0; b < count; ++b) {
    const int64_t off = (b * kBatch) % kResidentRows;
    out.emplace_back(perm.begin() + off, perm.begin() + off + kBatch);
  }
  return out;
}

void BM_PullExisting(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  EmbeddingTable& t = ResidentTable(dim);
  const auto batches = RandomBatches(16);
  std::vector<float> out(kBatch * dim);
  size_t b = 0;
  for (auto _ : state) {
    if (!t.Pull(batches[b], PullMode::kTrain, out, {threads}).ok()) std::abort();
    benchmark::DoNotOptimize(out.data());
    b = (b + 1) % batches.size();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_PullExisting)->Args({16, 1})->Args({16, 2})->Args({32, 1})->UseRealTime();

void BM_PullEval(benchmark::State& state) {
  EmbeddingTable& t = ResidentTable(16);
  const auto batches = RandomBatches(16);
  std::vector<float> out(kBatch * 16);
  size_t b = 0;
  for (auto _ : state) {
    if (!t.Pull(batches[b], PullMode::kEval, out, {1}).ok()) std::abort();
    b = (b + 1) % batches.size();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_PullEval)->UseRealTime();

void BM_PushAdagrad(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  EmbeddingTable& t = ResidentTable(dim);
  const auto batches = RandomBatches(16);
  std::vector<float> grads(kBatch * dim);
  Rng rng(2);
  for (float& g : grads) g = static_cast<float>(rng.Normal()) * 0.01f;
  size_t b = 0;
  int64_t step = 0;
  for (auto _ : state) {
    if (!t.Push(batches[b], grads, {.step = step++, .learning_rate = 0.01f}, {threads}).ok()) {
      std::abort();
    }
    b = (b + 1) % batches.size();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_PushAdagrad)->Args({16, 1})->Args({16, 2})->Args({32, 1})->UseRealTime();

// New ids into a fresh table each iteration (includes index growth and first touch of fresh
// memory, which dominates on these machines).
void BM_InsertNew(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int64_t rows = 1 << 20;
  std::vector<uint64_t> ids(kBatch);
  std::vector<float> out(kBatch * dim);
  for (auto _ : state) {
    state.PauseTiming();
    auto t = MakeTable(dim, "adagrad", 0);
    state.ResumeTiming();
    for (int64_t b = 0; b < rows; b += kBatch) {
      std::iota(ids.begin(), ids.end(), static_cast<uint64_t>(b) * 1000003);
      if (!t->Pull(ids, PullMode::kTrain, out, {1}).ok()) std::abort();
    }
    state.PauseTiming();
    t.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_InsertNew)->Arg(32)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Opt-in: 20M rows of dim 32 with Adagrad state (about 6 GB), once.
void BM_Create20M(benchmark::State& state) {
  if (std::getenv("RECTRAIN_BENCH_20M") == nullptr) {
    state.SkipWithError("set RECTRAIN_BENCH_20M=1 to run (allocates ~6 GB)");
    return;
  }
  const int64_t rows = 20'000'000;
  const bool hint = state.range(0) != 0;
  std::vector<uint64_t> ids(kBatch);
  std::vector<float> out(kBatch * 32);
  for (auto _ : state) {
    auto t = MakeTable(32, "adagrad", hint ? rows : 0);
    Stopwatch sw;
    for (int64_t b = 0; b < rows; b += kBatch) {
      const int64_t n = std::min<int64_t>(kBatch, rows - b);
      ids.resize(n);
      for (int64_t i = 0; i < n; ++i) ids[i] = Mix64(static_cast<uint64_t>(b + i));
      if (!t->Pull(ids, PullMode::kTrain, std::span<float>(out.data(), n * 32), {1}).ok()) {
        std::abort();
      }
    }
    const TableStats s = t->Stats();
    state.counters["seconds"] = sw.Seconds();
    state.counters["rows"] = static_cast<double>(s.rows);
    state.counters["GiB"] = static_cast<double>(s.bytes) / (1 << 30);
    state.counters["bytes_per_row"] = static_cast<double>(s.bytes) / s.rows;
  }
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_Create20M)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace rectrain::embedding
