#include "rectrain/tensor/tensor.h"

#include <cstring>
#include <new>

namespace rectrain::tensor {

void MatrixView::SetZero() const {
  if (empty()) return;
  if (contiguous()) {
    std::memset(data, 0, sizeof(float) * static_cast<size_t>(rows * cols));
    return;
  }
  for (int64_t r = 0; r < rows; ++r) std::memset(row(r), 0, sizeof(float) * cols);
}

MatrixView AsMatrix(std::span<float> s, int64_t rows, int64_t cols) {
  RECTRAIN_CHECK(rows >= 0 && cols >= 0 && static_cast<int64_t>(s.size()) == rows * cols)
      << "span of " << s.size() << " floats viewed as " << rows << "x" << cols;
  return {s.data(), rows, cols, cols};
}

ConstMatrixView AsMatrix(std::span<const float> s, int64_t rows, int64_t cols) {
  RECTRAIN_CHECK(rows >= 0 && cols >= 0 && static_cast<int64_t>(s.size()) == rows * cols)
      << "span of " << s.size() << " floats viewed as " << rows << "x" << cols;
  return {s.data(), rows, cols, cols};
}

void Tensor::Resize(int64_t rows, int64_t cols) {
  RECTRAIN_CHECK(rows >= 0 && cols >= 0) << "Tensor::Resize(" << rows << ", " << cols << ")";
  const int64_t n = rows * cols;
  if (n > capacity_) {
    // Round capacity up to whole cache lines so vector tails never cross the allocation.
    const int64_t cap = (n + 15) / 16 * 16;
    data_.reset(static_cast<float*>(
        ::operator new[](sizeof(float) * static_cast<size_t>(cap), std::align_val_t(kAlignment))));
    capacity_ = cap;
  }
  rows_ = rows;
  cols_ = cols;
}

void Tensor::ResizeZeroed(int64_t rows, int64_t cols) {
  Resize(rows, cols);
  SetZero();
}

void Tensor::SetZero() {
  if (size() > 0) std::memset(data_.get(), 0, sizeof(float) * static_cast<size_t>(size()));
}

}  // namespace rectrain::tensor
