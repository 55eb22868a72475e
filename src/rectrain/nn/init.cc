#include "rectrain/nn/init.h"

#include "rectrain/base/random.h"

namespace rectrain::nn {

uint64_t ParamSeed(uint64_t seed, std::string_view param_name) {
  return DeriveSeed(seed, HashBytes(param_name, 0));
}

void InitNormal(std::span<float> values, double stddev, uint64_t seed) {
  Rng rng(seed);
  for (float& v : values) v = static_cast<float>(rng.Normal() * stddev);
}

void InitUniform(std::span<float> values, double limit, uint64_t seed) {
  Rng rng(seed);
  for (float& v : values) v = static_cast<float>((2.0 * rng.Uniform() - 1.0) * limit);
}

void InitConstant(std::span<float> values, float value) {
  for (float& v : values) v = value;
}

}  // namespace rectrain::nn
