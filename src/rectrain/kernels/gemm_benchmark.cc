// GFLOP/s of kernels::Gemm (oneDNN sgemm) and kernels::GemmBf16 on the CTR-MLP shapes of criteo-shape and seed-shape
// (batch 4096). Threads follow OMP_NUM_THREADS (run with OMP_NUM_THREADS=1 and =2).
// Reports "GFLOPS" as a rate counter; numbers are recorded in docs/decisions/0001-gemm-backend.md.
#include <omp.h>

#include <vector>

#include <benchmark/benchmark.h>

#include "rectrain/base/random.h"
#include "rectrain/kernels/gemm.h"
#include "rectrain/kernels/kernels.h"

namespace rectrain::kernels {
namespace {

// args: m, n, k, trans_a, trans_b
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool ta = state.range(3), tb = state.range(4);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  Rng rng(1);
  for (float& x : a) x = rng.UniformFloat() - 0.5f;
  for (float& x : b) x = rng.UniformFloat() - 0.5f;
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  for (auto _ : state) {
    Gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n * k * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = omp_get_max_threads();
}

// GemmBf16 on the same shapes (inputs already bf16; the conversion is timed by the model
// benchmark, which includes it). Reports the same GFLOPS counter.
void BM_GemmBf16(benchmark::State& state) {
  if (!Bf16GemmAvailable()) {
    state.SkipWithError("no AVX512_BF16 on this CPU");
    return;
  }
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool ta = state.range(3), tb = state.range(4);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  Rng rng(1);
  for (float& x : a) x = rng.UniformFloat() - 0.5f;
  for (float& x : b) x = rng.UniformFloat() - 0.5f;
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  ActiveKernels().to_bf16(a.data(), static_cast<int64_t>(a.size()), a16.data());
  ActiveKernels().to_bf16(b.data(), static_cast<int64_t>(b.size()), b16.data());
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  for (auto _ : state) {
    GemmBf16(ta, tb, m, n, k, a16.data(), lda, b16.data(), ldb, false, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n * k * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = omp_get_max_threads();
}

// Forward y = x·W (W stored [in × out]), backward dX = dY·Wᵀ and dW = Xᵀ·dY, N=1 output.
BENCHMARK(BM_Gemm)
    ->ArgNames({"m", "n", "k", "ta", "tb"})
    ->Args({4096, 400, 429, 0, 0})   // criteo fwd layer 1
    ->Args({4096, 400, 400, 0, 0})   // fwd layers 2, 3
    ->Args({4096, 429, 400, 0, 1})   // bwd dX layer 1
    ->Args({4096, 400, 400, 0, 1})   // bwd dX layers 2, 3
    ->Args({429, 400, 4096, 1, 0})   // bwd dW layer 1
    ->Args({400, 400, 4096, 1, 0})   // bwd dW layers 2, 3
    ->Args({4096, 1, 400, 0, 0})     // output layer as GEMM (we use row_dot instead)
    ->Args({4096, 400, 882, 0, 0})   // seed-shape fwd layer 1
    ->Args({882, 400, 4096, 1, 0})   // seed-shape bwd dW layer 1
    ->Args({4096, 429, 429, 0, 0})   // dcn_v2 cross layer (criteo)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3)
    ->UseRealTime();  // wall time: with 2 OpenMP threads CPU time of one thread is meaningless

BENCHMARK(BM_GemmBf16)
    ->ArgNames({"m", "n", "k", "ta", "tb"})
    ->Args({4096, 400, 429, 0, 0})   // criteo fwd layer 1
    ->Args({4096, 400, 400, 0, 0})   // fwd layers 2, 3
    ->Args({4096, 429, 400, 0, 1})   // bwd dX layer 1
    ->Args({4096, 400, 400, 0, 1})   // bwd dX layers 2, 3
    ->Args({429, 400, 4096, 1, 0})   // bwd dW layer 1
    ->Args({400, 400, 4096, 1, 0})   // bwd dW layers 2, 3
    ->Args({4096, 400, 882, 0, 0})   // seed-shape fwd layer 1
    ->Args({882, 400, 4096, 1, 0})   // seed-shape bwd dW layer 1
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3)
    ->UseRealTime();

}  // namespace
}  // namespace rectrain::kernels
