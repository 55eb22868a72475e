// Embedding table micro-benchmarks (Google Benchmark). Units: ids/s (items_per_second).
//
//   build/<dir>/.../embedding_table_benchmark --benchmark_filter='Pull|Push|Insert'
//   RECTRAIN_BENCH_20M=1 .../embedding_table_benchmark --benchmark_filter=Create20M
//   .../embedding_table_benchmark --benchmark_filter='PullTracked|DeltaVsFull'  (incremental checkpoints)
//
// Pull/Push run on a table of 1M resident rows (144 MiB at dim 16 + Adagrad: beyond the caches,
// so every id is a random memory access), with batches of 65,536 unique ids drawn at random.
// Create20M (opt-in, ~6 GB) inserts 20M new ids at dim 32 + Adagrad and reports the seconds and
// the table's accounted bytes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
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
  c.optimizer.type = *optim::kSparseOptimizerTypes.Find(optimizer);
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

// PullExisting with the change record of incremental checkpoints on (TrackChanges): a checkpoint
// (MarkSaved) every 16 batches, so a row's first touch after it is recorded.
void BM_PullTracked(benchmark::State& state) {
  static std::unique_ptr<EmbeddingTable> t;
  if (!t) {
    t = MakeTable(16, "adagrad", kResidentRows);
    std::vector<uint64_t> ids(kBatch);
    std::vector<float> out(kBatch * 16);
    for (int64_t b = 0; b < kResidentRows; b += kBatch) {
      std::iota(ids.begin(), ids.end(), static_cast<uint64_t>(b));
      if (!t->Pull(ids, PullMode::kTrain, out, {}).ok()) std::abort();
    }
  }
  t->TrackChanges(ChangeLog::kCheckpoint, state.range(0) != 0);
  const auto batches = RandomBatches(16);
  std::vector<float> out(kBatch * 16);
  size_t b = 0;
  for (auto _ : state) {
    if (!t->Pull(batches[b], PullMode::kTrain, out, {1}).ok()) std::abort();
    b = (b + 1) % batches.size();
    if (b == 0) t->MarkSaved(ChangeLog::kCheckpoint);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_PullTracked)->Arg(0)->Arg(1)->UseRealTime();

// Incremental checkpoints: a table of 1M rows (dim 16, Adagrad) of which per_mille/1000 were
// trained since the last checkpoint; SaveChanges (the delta) against Save (the full file), both
// to /tmp, written alternately 3 times each (best time of each). Counters: bytes of each and
// their ratio, seconds of each.
void BM_DeltaVsFull(benchmark::State& state) {
  const int64_t touched = kResidentRows * state.range(0) / 1000;
  auto t = MakeTable(16, "adagrad", kResidentRows);
  std::vector<uint64_t> ids(kBatch);
  std::vector<float> out(kBatch * 16);
  for (int64_t b = 0; b < kResidentRows; b += kBatch) {
    std::iota(ids.begin(), ids.end(), static_cast<uint64_t>(b));
    if (!t->Pull(ids, PullMode::kTrain, out, {}).ok()) std::abort();
  }
  t->TrackChanges(ChangeLog::kCheckpoint, true);
  const std::vector<std::vector<uint64_t>> batches = RandomBatches(2);  // disjoint random ids
  for (int64_t done = 0; done < touched; done += kBatch) {  // 10% of 1M rows: 2 batches
    std::vector<uint64_t> part = batches[static_cast<size_t>(done / kBatch)];
    part.resize(static_cast<size_t>(std::min<int64_t>(kBatch, touched - done)));
    std::vector<float> o(part.size() * 16), g(part.size() * 16, 0.01f);
    if (!t->Pull(part, PullMode::kTrain, o, {1}).ok()) std::abort();
    if (!t->Push(part, g, {.step = 1, .learning_rate = 0.01f}, {1}).ok()) std::abort();
  }
  const std::string full = "/tmp/rectrain_bench_full.bin", delta = "/tmp/rectrain_bench_delta.bin";
  double full_s = 1e9, delta_s = 1e9;
  for (auto _ : state) {
    for (int rep = 0; rep < 3; ++rep) {
      Stopwatch a;
      if (!t->SaveChanges(delta).ok()) std::abort();
      delta_s = std::min(delta_s, a.Seconds());
      Stopwatch b;
      if (!t->Save(full).ok()) std::abort();
      full_s = std::min(full_s, b.Seconds());
    }
  }
  auto size = [](const std::string& p) {
    FILE* f = std::fopen(p.c_str(), "rb");
    std::fseek(f, 0, SEEK_END);
    const long n = std::ftell(f);
    std::fclose(f);
    return static_cast<double>(n);
  };
  state.counters["rows_touched"] = static_cast<double>(touched);
  state.counters["delta_bytes"] = size(delta);
  state.counters["full_bytes"] = size(full);
  state.counters["bytes_ratio"] = size(delta) / size(full);
  state.counters["delta_s"] = delta_s;
  state.counters["full_s"] = full_s;
  state.counters["time_ratio"] = delta_s / full_s;
  std::remove(full.c_str());
  std::remove(delta.c_str());
}
BENCHMARK(BM_DeltaVsFull)->Arg(10)->Arg(20)->Arg(100)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

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

// A never-ending stream (issue 29's "TTL keeps memory bounded"): each step pulls and pushes
// 4,096 unique ids, half from a skewed set of 200,000 returning ids and half never seen before
// (new users, new items), dim 16 + Adagrad, 1 thread. Arg: embedding.ttl_steps (0 = no expiry).
// Reports the rows, accounted bytes and RSS after the first quarter of the steps and at the end,
// and the steps/s. Run each Arg in its own process, so one table's memory does not count in the
// other's RSS:  --benchmark_filter='ExpiryStream/0$'  and  'ExpiryStream/400$'.
int64_t RssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * 4096;
}

void BM_ExpiryStream(benchmark::State& state) {
  constexpr int kSteps = 2000;
  constexpr int kIds = 4096;
  EmbeddingTableConfig c;
  c.dim = 16;
  c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
  c.ttl_steps = state.range(0);
  std::vector<uint64_t> ids;
  std::vector<float> out(kIds * 16), grads(kIds * 16, 0.001f);
  for (auto _ : state) {
    auto t = MakeEmbeddingTable(c);
    if (!t.ok()) std::abort();
    Rng rng(3);
    uint64_t next_new = uint64_t{1} << 40;
    double quarter_rows = 0, quarter_bytes = 0, quarter_rss = 0;
    Stopwatch sw;
    for (int step = 0; step < kSteps; ++step) {
      ids.clear();
      for (int i = 0; i < kIds / 2; ++i) ids.push_back(static_cast<uint64_t>(std::pow(rng.Uniform(), 3.0) * 200000));
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      while (static_cast<int>(ids.size()) < kIds) ids.push_back(next_new++);
      if (!(*t)->Pull(ids, PullMode::kTrain, out, {1}).ok()) std::abort();
      if (!(*t)->Push(ids, grads, {.step = step, .learning_rate = 0.01f}, {1}).ok()) std::abort();
      if (step == kSteps / 4 - 1) {
        quarter_rows = static_cast<double>((*t)->Stats().rows);
        quarter_bytes = static_cast<double>((*t)->Stats().bytes);
        quarter_rss = static_cast<double>(RssBytes());
      }
    }
    const TableStats s = (*t)->Stats();
    state.counters["steps_per_s"] = kSteps / sw.Seconds();
    state.counters["rows_q1"] = quarter_rows;
    state.counters["rows_end"] = static_cast<double>(s.rows);
    state.counters["MiB_q1"] = quarter_bytes / (1 << 20);
    state.counters["MiB_end"] = static_cast<double>(s.bytes) / (1 << 20);
    state.counters["rss_MiB_q1"] = quarter_rss / (1 << 20);
    state.counters["rss_MiB_end"] = static_cast<double>(RssBytes()) / (1 << 20);
    state.counters["expired"] = static_cast<double>(s.expirations);
  }
}
BENCHMARK(BM_ExpiryStream)->Arg(0)->Arg(400)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace rectrain::embedding
