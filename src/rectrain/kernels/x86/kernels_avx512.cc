// AVX-512 kernels (compiled with -mavx512f -mavx512vl -mavx512bw -mavx512dq
// -mprefer-vector-width=512; see CMakeLists.txt).
#include <cstdint>

#include "rectrain/kernels/internal/tables.h"

namespace rectrain::kernels::internal {
namespace avx512 {
#include "rectrain/kernels/x86/kernels_impl.inc"
}  // namespace avx512

const KernelTable& Avx512Kernels() {
  static const KernelTable table = {
      .level = SimdLevel::kAvx512,
      .bias_act = avx512::BiasAct,
      .act_backward_colsum = avx512::ActBackwardColsum,
      .row_dot = avx512::RowDot,
      .col_weighted_sum = avx512::ColWeightedSum,
      .outer = avx512::Outer,
      .mul_add = avx512::MulAdd,
      .fm_forward = avx512::FmForward,
      .fm_backward = avx512::FmBackward,
      .pair_dots = avx512::PairDots,
      .pair_dots_backward = avx512::PairDotsBackward,
      .attention_forward = avx512::AttentionForward,
      .attention_backward = avx512::AttentionBackward,
      .to_bf16 = avx512::ToBf16,
  };
  return table;
}

}  // namespace rectrain::kernels::internal
