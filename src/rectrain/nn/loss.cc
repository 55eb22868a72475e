#include "rectrain/nn/loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rectrain/base/check.h"

namespace rectrain::nn {
namespace {

// Σ over rows [0, n) of row_loss(begin, end) (which also writes the rows' gradients), split into
// ranges on the pool; the per-range partial sums are added in range order, so the total is
// deterministic for a fixed thread count.
template <typename RangeLoss>
double SumOverRanges(const ComputeContext& compute, int64_t n, int64_t grain, RangeLoss&& range_loss) {
  constexpr int kMaxRanges = 256;
  double partial[kMaxRanges] = {};
  ComputeContext ctx = compute;
  ctx.num_threads = std::min(std::max(1, ctx.num_threads), kMaxRanges);
  ParallelForEach(ctx, n, grain, [&](int range, int64_t begin, int64_t end) { partial[range] = range_loss(begin, end); });
  double total = 0;
  for (int r = 0; r < kMaxRanges; ++r) total += partial[r];
  return total;
}

}  // namespace

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
  const double total = SumOverRanges(compute, n, 2048, [&](int64_t begin, int64_t end) {
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
    return sum;
  });
  return total / static_cast<double>(n);
}

double SoftmaxCrossEntropy(std::span<const float> logits, int classes, std::span<const float> labels,
                           std::span<float> dlogits, std::span<float> probs,
                           const ComputeContext& compute) {
  RECTRAIN_CHECK(classes >= 1 && logits.size() == labels.size() * static_cast<size_t>(classes))
      << "logits " << logits.size() << " vs labels " << labels.size() << " x " << classes;
  RECTRAIN_CHECK(dlogits.empty() || dlogits.size() == logits.size());
  RECTRAIN_CHECK(probs.empty() || probs.size() == logits.size());
  const int64_t n = static_cast<int64_t>(labels.size());
  if (n == 0) return 0.0;
  const float inv_n = 1.0f / static_cast<float>(n);
  const double total = SumOverRanges(compute, n, 256, [&](int64_t begin, int64_t end) {
    double sum = 0;
    std::vector<float> e(static_cast<size_t>(classes));
    for (int64_t i = begin; i < end; ++i) {
      const float* z = logits.data() + i * classes;
      const float yf = labels[static_cast<size_t>(i)];
      const int y = static_cast<int>(yf);
      const bool valid = yf >= 0.0f && y < classes && static_cast<float>(y) == yf;
      float zmax = z[0];
      for (int c = 1; c < classes; ++c) zmax = std::max(zmax, z[c]);
      double denom = 0;
      for (int c = 0; c < classes; ++c) {
        e[static_cast<size_t>(c)] = std::exp(z[c] - zmax);
        denom += e[static_cast<size_t>(c)];
      }
      // −log softmax(z)[y] = log Σ exp(z − max) − (z_y − max)
      sum += valid ? std::log(denom) - static_cast<double>(z[y] - zmax) : std::nan("");
      const float inv = static_cast<float>(1.0 / denom);
      for (int c = 0; c < classes; ++c) {
        const float p = e[static_cast<size_t>(c)] * inv;
        if (!probs.empty()) probs[static_cast<size_t>(i * classes + c)] = p;
        if (!dlogits.empty()) {
          dlogits[static_cast<size_t>(i * classes + c)] = valid ? (p - (c == y ? 1.0f : 0.0f)) * inv_n : 0.0f;
        }
      }
    }
    return sum;
  });
  return total / static_cast<double>(n);
}

double MultiTaskSigmoidCrossEntropy(std::span<const float> logits, int tasks, std::span<const float> labels,
                                    std::span<const float> weights, std::span<float> dlogits, std::span<float> probs,
                                    std::span<double> task_means, const ComputeContext& compute) {
  RECTRAIN_CHECK(tasks >= 1 && logits.size() % static_cast<size_t>(tasks) == 0 && labels.size() == logits.size());
  RECTRAIN_CHECK(weights.size() == static_cast<size_t>(tasks));
  RECTRAIN_CHECK(dlogits.empty() || dlogits.size() == logits.size());
  RECTRAIN_CHECK(probs.empty() || probs.size() == logits.size());
  RECTRAIN_CHECK(task_means.empty() || task_means.size() == static_cast<size_t>(tasks));
  const int64_t n = static_cast<int64_t>(logits.size()) / tasks;
  if (n == 0) {
    for (double& m : task_means) m = 0;
    return 0.0;
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  double total = 0;
  for (int t = 0; t < tasks; ++t) {
    const double sum = SumOverRanges(compute, n, 2048, [&](int64_t begin, int64_t end) {
      double s = 0;
      for (int64_t r = begin; r < end; ++r) {
        const size_t i = static_cast<size_t>(r * tasks + t);
        const float z = logits[i];
        const float y = labels[i];
        const float e = std::exp(-std::fabs(z));
        s += static_cast<double>(std::max(z, 0.0f) - z * y) + std::log1p(static_cast<double>(e));
        const float p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        if (!dlogits.empty()) dlogits[i] = weights[static_cast<size_t>(t)] * (p - y) * inv_n;
        if (!probs.empty()) probs[i] = p;
      }
      return s;
    });
    const double mean = sum / static_cast<double>(n);
    if (!task_means.empty()) task_means[static_cast<size_t>(t)] = mean;
    total += static_cast<double>(weights[static_cast<size_t>(t)]) * mean;
  }
  return total;
}

}  // namespace rectrain::nn
