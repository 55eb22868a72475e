// rectrain/tensor/tensor.h: dense float matrices — an owning, 64-byte-aligned, reusable buffer
// (Tensor) and non-owning strided views (MatrixView / ConstMatrixView). No math lives here.
//
// Layout conventions (project-wide):
//   * Row-major. Dimension 0 is the batch: element (row, col) of a [rows × cols] matrix is at
//     data[row * ld + col]. `ld` (leading dimension) is the row stride in *elements*, >= cols,
//     so a view can select a column slice of a wider matrix (how layers "concat" for free:
//     the embedding layer writes its columns and the dense features land in the tail columns of
//     the same matrix).
//   * Vectors are spans; a [B] vector is a [B × 1] matrix with ld == 1 when a view is needed.
//   * Tensor storage is 64-byte aligned (one cache line, one AVX-512 register), so row 0 of a
//     Tensor is aligned; rows after it are aligned only when ld is a multiple of 16.
//
// Memory: first touch of fresh memory is very slow on our machines (ENVIRONMENT.md §0), so a
// Tensor is sized once and reused: Resize() reallocates only when the element count grows past
// its capacity, never when it shrinks (a smaller last batch reuses the buffer).
//
// Thread safety: views and tensors are plain values; concurrent writers must touch disjoint
// elements. Resize() invalidates every view of the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "rectrain/base/check.h"

namespace rectrain::tensor {

struct ConstMatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;  // row stride in elements, >= cols

  const float* row(int64_t r) const { return data + r * ld; }
  float at(int64_t r, int64_t c) const { return data[r * ld + c]; }
  // Columns [begin, begin + n) of every row (same ld).
  ConstMatrixView Cols(int64_t begin, int64_t n) const {
    RECTRAIN_DCHECK(begin >= 0 && n >= 0 && begin + n <= cols);
    return {data + begin, rows, n, ld};
  }
  // Rows [begin, begin + n).
  ConstMatrixView Rows(int64_t begin, int64_t n) const {
    RECTRAIN_DCHECK(begin >= 0 && n >= 0 && begin + n <= rows);
    return {data + begin * ld, n, cols, ld};
  }
  bool empty() const { return rows == 0 || cols == 0; }
  bool contiguous() const { return ld == cols; }
};

struct MatrixView {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;

  float* row(int64_t r) const { return data + r * ld; }
  float& at(int64_t r, int64_t c) const { return data[r * ld + c]; }
  MatrixView Cols(int64_t begin, int64_t n) const {
    RECTRAIN_DCHECK(begin >= 0 && n >= 0 && begin + n <= cols);
    return {data + begin, rows, n, ld};
  }
  MatrixView Rows(int64_t begin, int64_t n) const {
    RECTRAIN_DCHECK(begin >= 0 && n >= 0 && begin + n <= rows);
    return {data + begin * ld, n, cols, ld};
  }
  operator ConstMatrixView() const { return {data, rows, cols, ld}; }  // NOLINT
  bool empty() const { return rows == 0 || cols == 0; }
  bool contiguous() const { return ld == cols; }
  // Sets every element of the view to zero (row by row when strided).
  void SetZero() const;
};

// Views a contiguous span as a [rows × cols] matrix. CHECKs rows * cols == span size.
MatrixView AsMatrix(std::span<float> s, int64_t rows, int64_t cols);
ConstMatrixView AsMatrix(std::span<const float> s, int64_t rows, int64_t cols);

// An owning, aligned, reusable [rows × cols] float matrix (ld == cols).
class Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  Tensor() = default;
  Tensor(int64_t rows, int64_t cols) { Resize(rows, cols); }
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Sets the shape. Reallocates only when rows * cols exceeds capacity(); contents are then
  // unspecified (not preserved, not zeroed). Programmer error (CHECK) if rows or cols < 0.
  void Resize(int64_t rows, int64_t cols);
  // Resize() then zero every element.
  void ResizeZeroed(int64_t rows, int64_t cols);
  void SetZero();

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  int64_t capacity() const { return capacity_; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::span<float> span() { return {data_.get(), static_cast<size_t>(size())}; }
  std::span<const float> span() const { return {data_.get(), static_cast<size_t>(size())}; }
  MatrixView view() { return {data_.get(), rows_, cols_, cols_}; }
  ConstMatrixView view() const { return {data_.get(), rows_, cols_, cols_}; }
  float* row(int64_t r) { return data_.get() + r * cols_; }
  const float* row(int64_t r) const { return data_.get() + r * cols_; }

 private:
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(kAlignment)); }
  };
  std::unique_ptr<float[], AlignedDelete> data_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace rectrain::tensor
