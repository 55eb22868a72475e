#include "rectrain/embedding/internal/initializer.h"

#include <cmath>
#include <sstream>

#include "rectrain/base/random.h"

namespace rectrain::embedding::internal {
namespace {

constexpr float kTwoPi = 6.28318530717958647692f;

// Two independent standard normals from one 64-bit draw (Box-Muller on 24-bit uniforms).
inline void NormalPair(uint64_t bits, float* z0, float* z1) {
  const float u1 = static_cast<float>((bits >> 40) + 1) * 0x1.0p-24f;  // (0, 1]
  const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFF) * 0x1.0p-24f;
  const float r = std::sqrt(-2.0f * std::log(u1));
  const float angle = kTwoPi * u2;
  *z0 = r * std::cos(angle);
  *z1 = r * std::sin(angle);
}

}  // namespace

Result<RowInitializer> RowInitializer::Make(const InitializerConfig& c, uint64_t seed) {
  Kind kind;
  if (c.type == "normal") {
    kind = Kind::kNormal;
  } else if (c.type == "uniform") {
    kind = Kind::kUniform;
  } else if (c.type == "zeros") {
    kind = Kind::kZeros;
  } else if (c.type == "truncated_normal") {
    kind = Kind::kTruncatedNormal;
  } else {
    return InvalidArgumentError("embedding.initializer.type: unknown initializer '" + c.type +
                                "'; valid types: normal, uniform, zeros, truncated_normal");
  }
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
  const size_t dim = w.size();
  if (kind_ == Kind::kZeros) {
    for (float& v : w) v = 0.0f;
    return;
  }
  Rng rng(DeriveSeed(seed_, id));
  if (kind_ == Kind::kUniform) {
    for (float& v : w) v = (rng.UniformFloat() * 2.0f - 1.0f) * scale_;
    return;
  }
  if (kind_ == Kind::kNormal) {
    size_t i = 0;
    for (; i + 2 <= dim; i += 2) {
      float z0, z1;
      NormalPair(rng.Next(), &z0, &z1);
      w[i] = z0 * stddev_;
      w[i + 1] = z1 * stddev_;
    }
    if (i < dim) {
      float z0, z1;
      NormalPair(rng.Next(), &z0, &z1);
      w[i] = z0 * stddev_;
    }
    return;
  }
  // Truncated normal: draws outside 2 standard deviations are discarded and redrawn.
  size_t i = 0;
  while (i < dim) {
    float z[2];
    NormalPair(rng.Next(), &z[0], &z[1]);
    for (float v : z) {
      if (i < dim && std::fabs(v) <= 2.0f) w[i++] = v * stddev_;
    }
  }
}

}  // namespace rectrain::embedding::internal
