// rectrain/nn/internal/parallel_util.h: internal — how nn layers split elementwise work.
// Rows are split for row-wise kernels; column blocks (multiples of 16 floats, one AVX-512
// register) for kernels that sum over rows (bias gradients), so every column is reduced by one
// thread in row order and results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "rectrain/base/parallel.h"

namespace rectrain::nn::internal {

// Rows per task so that a task touches at least ~16K floats (below that the OpenMP fork costs
// more than it saves).
inline int64_t RowGrain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)); }

// fn(row_begin, row_end) over [0, rows).
template <typename Fn>
void ForRows(const ComputeContext& ctx, int64_t rows, int64_t cols, Fn&& fn) {
  ParallelForEach(ctx, rows, RowGrain(cols),
                  [&](int, int64_t begin, int64_t end) { fn(begin, end); });
}

// fn(col_begin, col_end) over [0, cols) in blocks of 16 columns.
template <typename Fn>
void ForColumnBlocks(const ComputeContext& ctx, int64_t cols, int64_t rows, Fn&& fn) {
  const int64_t blocks = (cols + 15) / 16;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rows * 16));
  ParallelForEach(ctx, blocks, grain, [&](int, int64_t begin, int64_t end) {
    fn(begin * 16, std::min(cols, end * 16));
  });
}

}  // namespace rectrain::nn::internal
