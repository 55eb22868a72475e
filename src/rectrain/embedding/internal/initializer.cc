#include "rectrain/embedding/internal/initializer.h"

#include <bit>
#include <cmath>
#include <sstream>

#include "rectrain/base/random.h"

// Clones for AVX-512, AVX2 and the x86-64 baseline; the loader picks one (no -march needed).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define RECTRAIN_INIT_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RECTRAIN_INIT_CLONES
#endif

namespace rectrain::embedding::internal {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
// Rows can be long (dim up to thousands); values are generated in chunks of this many pairs.
constexpr int64_t kPairsPerChunk = 64;

// Counter-based bits: element stream `k` of row key `key` (SplitMix64 of key + k * golden), so
// every value is a pure function of (seed, id, k) and the loop vectorises.
inline uint64_t Bits(uint64_t key, uint64_t k) { return Mix64(key + k * kGolden); }

// ln(x) for x in (0, 1]: exponent + 2 atanh((m-1)/(m+1)) series on the mantissa m in [1, 2).
// Absolute error < 2e-7 (enough for initial values; not a general-purpose log).
inline float LogUnit(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  const float m = std::bit_cast<float>((bits & 0x7fffffu) | 0x3f800000u);
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float series =
      s * (2.0f + s2 * (2.0f / 3 + s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9 + s2 * (2.0f / 11))))));
  return e * 0.69314718056f + series;
}

// Box-Muller on 24-bit uniforms, pairs written to z0[k] and z1[k]. sin/cos of 2*pi*u2 use a
// quadrant reduction and Taylor polynomials on [0, pi/2) (error < 1e-7).
RECTRAIN_INIT_CLONES
void NormalPairs(uint64_t key, uint64_t first, int64_t n, float* __restrict z0, float* __restrict z1) {
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t bits = Bits(key, first + static_cast<uint64_t>(k));
    // 24-bit uniforms through int32 (vectorisable conversions): u1 in (0, 1]; u2 as a quadrant
    // (its top 2 bits) and a fraction of the quadrant (the low 22 bits).
    const int32_t u1_bits = static_cast<int32_t>(bits >> 40);
    const int32_t u2_bits = static_cast<int32_t>((bits >> 16) & 0xffffffu);
    const float u1 = static_cast<float>(u1_bits + 1) * 0x1.0p-24f;
    const float r = std::sqrt(-2.0f * LogUnit(u1));
    const int32_t quadrant = u2_bits >> 22;
    const float a = static_cast<float>(u2_bits & 0x3fffff) * (0x1.0p-22f * 1.57079632679f);
    const float a2 = a * a;
    const float s = a * (1.0f + a2 * (-1.0f / 6 + a2 * (1.0f / 120 + a2 * (-1.0f / 5040 + a2 * (1.0f / 362880 + a2 * (-1.0f / 39916800))))));
    const float c = 1.0f + a2 * (-0.5f + a2 * (1.0f / 24 + a2 * (-1.0f / 720 + a2 * (1.0f / 40320 + a2 * (-1.0f / 3628800 + a2 * (1.0f / 479001600))))));
    // Rotate (cos a, sin a) by quadrant * pi/2.
    const float cos_v = quadrant == 0 ? c : quadrant == 1 ? -s : quadrant == 2 ? -c : s;
    const float sin_v = quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
    z0[k] = r * cos_v;
    z1[k] = r * sin_v;
  }
}

RECTRAIN_INIT_CLONES
void UniformFill(uint64_t key, int64_t n, float scale, float* __restrict out) {
  for (int64_t k = 0; k < n; ++k) {
    const float u =
        static_cast<float>(static_cast<int32_t>(Bits(key, static_cast<uint64_t>(k)) >> 40)) * 0x1.0p-24f;
    out[k] = (u * 2.0f - 1.0f) * scale;
  }
}

}  // namespace

Result<RowInitializer> RowInitializer::Make(const InitializerConfig& c, uint64_t seed) {
  const Kind kind = c.type;
  std::ostringstream os;
  if ((kind == Kind::kNormal || kind == Kind::kTruncatedNormal) &&
      !(c.stddev >= 0.0f && std::isfinite(c.stddev))) {
    os << "embedding.initializer.stddev must be >= 0, got " << c.stddev;
    return InvalidArgumentError(os.str());
  }
  if (kind == Kind::kUniform && !(c.scale >= 0.0f && std::isfinite(c.scale))) {
    os << "embedding.initializer.scale must be >= 0, got " << c.scale;
    return InvalidArgumentError(os.str());
  }
  return RowInitializer(kind, c.stddev, c.scale, seed);
}

void RowInitializer::Fill(uint64_t id, std::span<float> w) const {
  const int64_t dim = static_cast<int64_t>(w.size());
  if (kind_ == Kind::kZeros) {
    for (float& v : w) v = 0.0f;
    return;
  }
  const uint64_t key = DeriveSeed(seed_, id);
  if (kind_ == Kind::kUniform) {
    UniformFill(key, dim, scale_, w.data());
    return;
  }
  float z0[kPairsPerChunk];
  float z1[kPairsPerChunk];
  if (kind_ == Kind::kNormal) {
    // Pair k fills element k (cosine branch) and element half + k (sine branch).
    const int64_t half = (dim + 1) / 2;
    for (int64_t base = 0; base < half; base += kPairsPerChunk) {
      const int64_t n = std::min(kPairsPerChunk, half - base);
      NormalPairs(key, static_cast<uint64_t>(base), n, z0, z1);
      for (int64_t k = 0; k < n; ++k) {
        w[base + k] = z0[k] * stddev_;
        if (half + base + k < dim) w[half + base + k] = z1[k] * stddev_;
      }
    }
    return;
  }
  // Truncated normal: draws outside 2 standard deviations are discarded; draws are consumed in
  // stream order (all cosine values of a chunk, then its sine values) until the row is full.
  int64_t filled = 0;
  for (uint64_t base = 0; filled < dim; base += kPairsPerChunk) {
    NormalPairs(key, base, kPairsPerChunk, z0, z1);
    for (const float* z : {z0, z1}) {
      for (int64_t k = 0; k < kPairsPerChunk && filled < dim; ++k) {
        if (std::fabs(z[k]) <= 2.0f) w[filled++] = z[k] * stddev_;
      }
    }
  }
}

}  // namespace rectrain::embedding::internal
