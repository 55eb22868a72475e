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

// Multi-class: `logits` is [n × classes] row-major, `labels[i]` the class index of row i (a
// float holding 0, 1, ..., classes-1). Returns the mean over rows of −log softmax(z_i)[y_i],
// computed stably (the row maximum subtracted). `dlogits` (same size as logits, or empty) gets
// (softmax(z_i) − onehot(y_i)) / n; `probs` (same size, or empty) the softmax. A label outside
// [0, classes) makes the loss NaN and its rows' gradients 0 (the caller reports it: a data
// error, not a programmer error). Deterministic for a fixed thread count.
double SoftmaxCrossEntropy(std::span<const float> logits, int classes, std::span<const float> labels,
                           std::span<float> dlogits, std::span<float> probs,
                           const ComputeContext& compute);

// Several binary tasks: `logits` and `labels` are [n × tasks] row-major, `weights[t]` the loss
// weight of task t. Returns Σ_t weights[t] · (mean over rows of task t's BCE); `task_means`
// (size tasks, or empty) gets each task's unweighted mean. `dlogits` (or empty) gets
// weights[t] · (sigmoid(z) − y) / n; `probs` (or empty) sigmoid(z). Stable as above.
double MultiTaskSigmoidCrossEntropy(std::span<const float> logits, int tasks, std::span<const float> labels,
                                    std::span<const float> weights, std::span<float> dlogits, std::span<float> probs,
                                    std::span<double> task_means, const ComputeContext& compute);

}  // namespace rectrain::nn
