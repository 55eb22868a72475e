#include "rectrain/nn/loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rectrain/base/check.h"

namespace rectrain::nn {

double SigmoidCrossEntropy(std::span<const float> logits, std::span<const float> labels,
                           std::span<float> dlogits, std::span<float> probs,
                           const ComputeContext& compute) {
  // Size mismatches are programmer errors: the trainer sizes all four from the batch.
  RECTRAIN_CHECK(labels.size() == logits.size())
      << "labels " << labels.size() << " vs logits " << logits.size();
  RECTRAIN_CHECK(dlogits.empty() || dlogits.size() == logits.size());
  RECTRAIN_CHECK(probs.empty() || probs.size() == logits.size());
  const int64_t n = static_cast<int64_t>(logits.size());
  if (n == 0) return 0.0;
  const float inv_n = 1.0f / static_cast<float>(n);
  // Per-range partial sums added in range order: deterministic for a fixed thread count.
  constexpr int kMaxRanges = 256;
  double partial[kMaxRanges] = {};
  ComputeContext ctx = compute;
  ctx.num_threads = std::min(std::max(1, ctx.num_threads), kMaxRanges);
  ParallelForEach(ctx, n, 2048, [&](int range, int64_t begin, int64_t end) {
    double sum = 0;
    for (int64_t i = begin; i < end; ++i) {
      const float z = logits[i];
      const float y = labels[i];
      const float e = std::exp(-std::fabs(z));  // in (0, 1]: no overflow
      // max(z, 0) − z·y + log(1 + exp(−|z|))
      sum += static_cast<double>(std::max(z, 0.0f) - z * y) + std::log1p(static_cast<double>(e));
      const float p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
      if (!dlogits.empty()) dlogits[i] = (p - y) * inv_n;
      if (!probs.empty()) probs[i] = p;
    }
    partial[range] = sum;
  });
  double total = 0;
  for (int r = 0; r < kMaxRanges; ++r) total += partial[r];
  return total / static_cast<double>(n);
}

}  // namespace rectrain::nn
