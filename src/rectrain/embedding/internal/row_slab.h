// rectrain/embedding/internal/row_slab.h: private. Slab allocator for fixed-stride embedding
// rows. Rows are carved from large blocks (first block sized by a hint, then doubling up to
// kMaxBlockBytes); freed rows go to a free list and are reused first. Blocks are kept until the
// slab is destroyed, also across Reset(), because first touch of fresh memory is slow on our
// machines (~0.3 GB/s) while reused memory is fast. Row pointers are stable for a row's life.
// Thread safety: none; one shard is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace rectrain::embedding::internal {

class RowSlab {
 public:
  static constexpr int64_t kMaxBlockBytes = int64_t{8} << 20;

  // `stride_floats` is a multiple of 4 (rows stay 16-byte aligned); `first_block_rows` a hint.
  RowSlab(int64_t stride_floats, int64_t first_block_rows);

  // True when Allocate() would hand out memory not touched before (no free row to recycle, and
  // the blocks are carved past their high-water mark); such a row adds stride bytes to
  // touched_bytes().
  bool NeedsFreshRow() const { return free_.empty() && carved_rows_ == touched_rows_; }
  // Returns a row (contents unspecified), or nullptr if the system is out of memory.
  float* Allocate();
  // Returns `row` (from Allocate) to the free list.
  void Free(float* row) { free_.push_back(row); }
  // Forgets every row; blocks are kept and reused by later Allocate() calls.
  void Reset();
  // High-water mark of rows carved from the blocks (also across Reset): their pages are resident.
  int64_t touched_rows() const { return touched_rows_; }
  int64_t touched_bytes() const { return touched_rows_ * stride_floats_ * 4; }
  // Calls f(row) for every row carved since the last Reset (live or freed), in memory order, so
  // a scan runs at memory bandwidth. The caller tells live from freed rows by their contents.
  template <typename F>
  void ForEachCarved(F&& f) const {
    int64_t left = carved_rows_;
    for (const Block& b : blocks_) {
      if (left == 0) break;
      const int64_t n = std::min(left, b.rows);
      float* base = b.data.get();
      for (int64_t r = 0; r < n; ++r) f(base + r * stride_floats_);
      left -= n;
    }
  }
  // Bookkeeping bytes of the free list.
  int64_t free_list_bytes() const { return static_cast<int64_t>(free_.capacity() * sizeof(float*)); }

 private:
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  struct Block {
    std::unique_ptr<float, FreeDeleter> data;
    int64_t rows = 0;
  };

  const int64_t stride_floats_;
  int64_t next_block_rows_;
  std::vector<Block> blocks_;
  size_t current_ = 0;       // block being carved
  int64_t used_in_current_ = 0;
  int64_t carved_rows_ = 0;   // since the last Reset
  int64_t touched_rows_ = 0;  // max of carved_rows_ over the slab's life
  std::vector<float*> free_;
};

}  // namespace rectrain::embedding::internal
