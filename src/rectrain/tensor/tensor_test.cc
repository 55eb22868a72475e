#include "rectrain/tensor/tensor.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace rectrain::tensor {
namespace {

TEST(TensorTest, ResizeIsAlignedAndReusesCapacity) {
  Tensor t(4, 3);
  EXPECT_EQ(t.rows(), 4);
  EXPECT_EQ(t.cols(), 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % Tensor::kAlignment, 0u);
  const float* before = t.data();
  const int64_t cap = t.capacity();
  EXPECT_GE(cap, 12);
  t.Resize(2, 3);  // shrink: same buffer
  EXPECT_EQ(t.data(), before);
  EXPECT_EQ(t.capacity(), cap);
  t.Resize(100, 100);  // grow: new buffer
  EXPECT_GE(t.capacity(), 10000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % Tensor::kAlignment, 0u);
}

TEST(TensorTest, ResizeZeroedZeroes) {
  Tensor t(3, 5);
  for (float& v : t.span()) v = 7.0f;
  t.ResizeZeroed(3, 5);
  for (float v : t.span()) EXPECT_EQ(v, 0.0f);
}

TEST(TensorTest, ViewsSliceColumnsAndRows) {
  Tensor t(3, 4);
  for (int64_t i = 0; i < 12; ++i) t.data()[i] = static_cast<float>(i);
  MatrixView v = t.view();
  MatrixView c = v.Cols(1, 2);
  EXPECT_EQ(c.rows, 3);
  EXPECT_EQ(c.cols, 2);
  EXPECT_EQ(c.ld, 4);
  EXPECT_EQ(c.at(2, 1), 10.0f);
  EXPECT_FALSE(c.contiguous());
  ConstMatrixView r = ConstMatrixView(v).Rows(1, 2);
  EXPECT_EQ(r.at(0, 0), 4.0f);
  c.SetZero();
  EXPECT_EQ(t.row(2)[0], 8.0f);
  EXPECT_EQ(t.row(2)[1], 0.0f);
  EXPECT_EQ(t.row(2)[2], 0.0f);
  EXPECT_EQ(t.row(2)[3], 11.0f);
}

TEST(TensorTest, AsMatrixViewsSpan) {
  std::vector<float> v(6, 1.0f);
  MatrixView m = AsMatrix(std::span<float>(v), 2, 3);
  m.at(1, 2) = 5.0f;
  EXPECT_EQ(v[5], 5.0f);
}

}  // namespace
}  // namespace rectrain::tensor
