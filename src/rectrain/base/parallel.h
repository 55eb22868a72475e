// rectrain/base/parallel.h: the compute thread pool and ParallelFor with error capture.
//
// Decision (docs/decisions/0002-openmp-compute-pool.md): the compute pool is OpenMP's, because
// oneDNN (our GEMM) is built on OpenMP; a second pool would spin against it on 2 cores and halve
// both. The number of threads is not global state: every call takes a ComputeContext that the
// Trainer owns and passes down.
// Thread safety: ParallelFor may be called from one thread at a time per ComputeContext; `fn` is
// invoked concurrently on disjoint ranges.
//
// Example:
//   ComputeContext ctx{.num_threads = 2};
//   Status s = ParallelFor(ctx, n, /*grain=*/1024, [&](int64_t begin, int64_t end) -> Status {
//     for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
//     return OkStatus();
//   });
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "rectrain/base/status.h"

namespace rectrain {

struct ComputeContext {
  int num_threads = 1;  // >= 1
};

// Splits [0, n) into at most ctx.num_threads contiguous ranges of at least `grain` elements and
// runs fn(begin, end) on each. Runs inline when one range suffices (the serial fast path).
// Returns the first non-OK Status any range returned (the others still run to completion).
Status ParallelFor(const ComputeContext& ctx, int64_t n, int64_t grain,
                   const std::function<Status(int64_t begin, int64_t end)>& fn);

// Like ParallelFor for functions that cannot fail; `fn(thread_idx, begin, end)`.
void ParallelForEach(const ComputeContext& ctx, int64_t n, int64_t grain,
                     const std::function<void(int thread_idx, int64_t begin, int64_t end)>& fn);

// Sizes the OpenMP pool (its nthreads-var, which oneDNN's GEMMs follow) for the calling thread
// and the parallel regions it starts. Process state: called where a process decides its threads
// (the CLI, a test harness, a benchmark), never inside a library, which gets it as a function
// (train::TrainerOptions::size_compute_pool) or a ComputeContext.
void SetComputePoolThreads(int threads);

// Number of ranges ParallelFor/ParallelForEach will use for (n, grain).
inline int NumRanges(const ComputeContext& ctx, int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  int64_t by_grain = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  return static_cast<int>(std::min<int64_t>(std::max(1, ctx.num_threads), by_grain));
}

}  // namespace rectrain
