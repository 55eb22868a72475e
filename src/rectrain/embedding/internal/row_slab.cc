#include "rectrain/embedding/internal/row_slab.h"

#include <sys/mman.h>

#include <algorithm>

namespace rectrain::embedding::internal {

RowSlab::RowSlab(int64_t stride_floats, int64_t first_block_rows)
    : stride_floats_(stride_floats) {
  const int64_t max_rows = std::max<int64_t>(1, kMaxBlockBytes / (stride_floats * 4));
  next_block_rows_ = std::clamp<int64_t>(first_block_rows, 16, max_rows);
}

float* RowSlab::Allocate() {
  if (!free_.empty()) {
    float* row = free_.back();
    free_.pop_back();
    return row;
  }
  while (current_ < blocks_.size() && used_in_current_ == blocks_[current_].rows) {
    ++current_;
    used_in_current_ = 0;
  }
  if (current_ == blocks_.size()) {
    const int64_t rows = next_block_rows_;
    const int64_t bytes = rows * stride_floats_ * 4;
    // Large blocks are 2 MiB aligned so transparent huge pages can back them (faster first
    // touch and fewer TLB misses on random row access).
    const size_t align = bytes >= (int64_t{2} << 20) ? (size_t{2} << 20) : 64;
    const size_t size = (static_cast<size_t>(bytes) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, size);
    if (p == nullptr) return nullptr;
    if (align > 64) madvise(p, size, MADV_HUGEPAGE);
    blocks_.push_back({std::unique_ptr<float, FreeDeleter>(static_cast<float*>(p)), rows});
    const int64_t max_rows = std::max<int64_t>(1, kMaxBlockBytes / (stride_floats_ * 4));
    next_block_rows_ = std::min(max_rows, rows * 2);
    used_in_current_ = 0;
  }
  float* row = blocks_[current_].data.get() + used_in_current_ * stride_floats_;
  ++used_in_current_;
  ++carved_rows_;
  touched_rows_ = std::max(touched_rows_, carved_rows_);
  return row;
}

void RowSlab::Reset() {
  current_ = 0;
  used_in_current_ = 0;
  carved_rows_ = 0;
  free_.clear();
}

}  // namespace rectrain::embedding::internal
