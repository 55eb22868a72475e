#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rectrain/base/check.h"
#include "rectrain/kernels/internal/tables.h"
#include "rectrain/kernels/kernels.h"

namespace rectrain::kernels {

std::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return "scalar";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

SimdLevel DetectSimdLevel() {
#if defined(RECTRAIN_KERNELS_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::kAvx2;
#endif
  return SimdLevel::kScalar;
}

const KernelTable& KernelsFor(SimdLevel level) {
  RECTRAIN_CHECK(static_cast<int>(level) <= static_cast<int>(DetectSimdLevel()))
      << "SIMD level " << SimdLevelName(level) << " is not supported by this CPU";
  switch (level) {
#if defined(RECTRAIN_KERNELS_X86)
    case SimdLevel::kAvx512:
      return internal::Avx512Kernels();
    case SimdLevel::kAvx2:
      return internal::Avx2Kernels();
#endif
    default:
      return internal::ReferenceKernels();
  }
}

namespace {
SimdLevel ChooseLevel() {
  SimdLevel level = DetectSimdLevel();
  const char* env = std::getenv("RECTRAIN_SIMD");
  if (env == nullptr || *env == '\0') return level;
  SimdLevel cap = level;
  if (std::strcmp(env, "scalar") == 0) {
    cap = SimdLevel::kScalar;
  } else if (std::strcmp(env, "avx2") == 0) {
    cap = SimdLevel::kAvx2;
  } else if (std::strcmp(env, "avx512") == 0) {
    cap = SimdLevel::kAvx512;
  } else {
    std::fprintf(stderr,
                 "rectrain: ignoring RECTRAIN_SIMD=%s (expected scalar, avx2 or avx512)\n", env);
  }
  return static_cast<int>(cap) < static_cast<int>(level) ? cap : level;
}
}  // namespace

const KernelTable& ActiveKernels() {
  static const KernelTable& table = KernelsFor(ChooseLevel());
  return table;
}

}  // namespace rectrain::kernels
