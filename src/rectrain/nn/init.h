// rectrain/nn/init.h: deterministic parameter initialisers. Each parameter tensor draws from
// its own stream DeriveSeed(model seed, HashBytes(param name)), so initial values depend only
// on (seed, name) — not on construction order or on which other layers exist.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rectrain::nn {

// The seed of parameter `param_name` in a model seeded with `seed`.
uint64_t ParamSeed(uint64_t seed, std::string_view param_name);

// N(0, stddev²) for every element.
void InitNormal(std::span<float> values, double stddev, uint64_t seed);
// U(-limit, limit) for every element.
void InitUniform(std::span<float> values, double limit, uint64_t seed);
void InitConstant(std::span<float> values, float value);

}  // namespace rectrain::nn
