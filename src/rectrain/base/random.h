// rectrain/base/random.h: small, fast, seedable RNGs and hashing. No global state: every worker
// derives its own generator from the run seed with DeriveSeed(seed, stream).
// Thread safety: a Rng object is not shared between threads; the free functions are pure.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace rectrain {

// SplitMix64 finaliser: a bijective 64-bit mixer (good avalanche, used for ids and seeds).
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Seed for stream `stream` of a run seeded with `seed` (workers, layers, shards).
inline uint64_t DeriveSeed(uint64_t seed, uint64_t stream) { return Mix64(seed ^ Mix64(stream + 1)); }

// 64-bit hash of bytes (FNV-1a over 8-byte words, then Mix64). Stable across platforms and
// versions: checkpoints store ids produced by it, so changing it is a format change.
inline uint64_t HashBytes(std::string_view bytes, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ Mix64(seed);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= uint64_t(static_cast<unsigned char>(bytes[i + b])) << (8 * b);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  for (int b = 0; i < bytes.size(); ++i, ++b) {
    tail |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * b);
  }
  h = (h ^ tail ^ (uint64_t(bytes.size()) << 56)) * 0x100000001b3ULL;
  return Mix64(h);
}

// xoshiro256** generator with float helpers.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& s : s_) {
      x += 0x9e3779b97f4a7c15ULL;
      s = Mix64(x);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  float UniformFloat() { return static_cast<float>(Next() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return static_cast<uint64_t>((static_cast<__uint128_t>(Next()) * n) >> 64); }
  // Standard normal (Box-Muller, no caching so the stream position is simple to reason about).
  double Normal() {
    double u1 = Uniform();
    double u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace rectrain
