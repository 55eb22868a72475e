// AVX2 + FMA kernels (compiled with -mavx2 -mfma; see CMakeLists.txt).
#include <cstdint>

#include "rectrain/kernels/internal/tables.h"

namespace rectrain::kernels::internal {
namespace avx2 {
#include "rectrain/kernels/x86/kernels_impl.inc"
}  // namespace avx2

const KernelTable& Avx2Kernels() {
  static const KernelTable table = {
      .level = SimdLevel::kAvx2,
      .bias_act = avx2::BiasAct,
      .act_backward_colsum = avx2::ActBackwardColsum,
      .row_dot = avx2::RowDot,
      .col_weighted_sum = avx2::ColWeightedSum,
      .outer = avx2::Outer,
      .mul_add = avx2::MulAdd,
      .fm_forward = avx2::FmForward,
      .fm_backward = avx2::FmBackward,
      .pair_dots = avx2::PairDots,
      .pair_dots_backward = avx2::PairDotsBackward,
      .attention_forward = avx2::AttentionForward,
      .attention_backward = avx2::AttentionBackward,
      .to_bf16 = avx2::ToBf16,
  };
  return table;
}

}  // namespace rectrain::kernels::internal
