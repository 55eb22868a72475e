#include "rectrain/base/parallel.h"

#include <omp.h>

#include <mutex>

namespace rectrain {

void SetComputePoolThreads(int threads) { omp_set_num_threads(std::max(1, threads)); }

Status ParallelFor(const ComputeContext& ctx, int64_t n, int64_t grain,
                   const std::function<Status(int64_t, int64_t)>& fn) {
  const int ranges = NumRanges(ctx, n, grain);
  if (ranges == 0) return OkStatus();
  if (ranges == 1) return fn(0, n);
  Status first_error;
  std::mutex mu;
#pragma omp parallel for num_threads(ranges) schedule(static, 1)
  for (int r = 0; r < ranges; ++r) {
    const int64_t begin = n * r / ranges;
    const int64_t end = n * (r + 1) / ranges;
    Status s = fn(begin, end);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = std::move(s);
    }
  }
  return first_error;
}

void ParallelForEach(const ComputeContext& ctx, int64_t n, int64_t grain,
                     const std::function<void(int, int64_t, int64_t)>& fn) {
  const int ranges = NumRanges(ctx, n, grain);
  if (ranges == 0) return;
  if (ranges == 1) {
    fn(0, 0, n);
    return;
  }
#pragma omp parallel for num_threads(ranges) schedule(static, 1)
  for (int r = 0; r < ranges; ++r) {
    fn(r, n * r / ranges, n * (r + 1) / ranges);
  }
}

}  // namespace rectrain
