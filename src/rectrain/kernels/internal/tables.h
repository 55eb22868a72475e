// rectrain/kernels/internal/tables.h: internal — the per-ISA kernel tables, one per translation
// unit (reference/, x86/). Only dispatch.cc and tests use these.
#pragma once

#include "rectrain/kernels/kernels.h"

namespace rectrain::kernels::internal {

const KernelTable& ReferenceKernels();
#if defined(RECTRAIN_KERNELS_X86)
const KernelTable& Avx2Kernels();
const KernelTable& Avx512Kernels();
#endif

}  // namespace rectrain::kernels::internal
