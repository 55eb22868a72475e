// rectrain/nn/loss.h: sigmoid + binary cross-entropy on logits, fused and numerically stable.
// Thread safety: pure functions.
#pragma once

#include <span>

#include "rectrain/base/parallel.h"

namespace rectrain::nn {

// Returns the mean over the batch of BCE(sigmoid(logit), label), computed stably as
// max(z,0) - z*y + log1p(exp(-|z|)). If `dlogits` is non-empty (same size) it receives
// dL/dz = (sigmoid(z) - y) / n. If `probs` is non-empty it receives sigmoid(z).
double SigmoidCrossEntropy(std::span<const float> logits, std::span<const float> labels,
                           std::span<float> dlogits, std::span<float> probs,
                           const ComputeContext& compute);

}  // namespace rectrain::nn
