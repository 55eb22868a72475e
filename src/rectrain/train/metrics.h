// rectrain/train/metrics.h: evaluation metrics for binary CTR prediction, computed exactly.
//
//   AUC          ROC AUC by sorting: P(score of a random positive > score of a random
//                negative), ties counted as 1/2. NaN when either class is absent or a score
//                is NaN.
//   logloss      mean binary cross-entropy of the predicted probabilities (clipped to
//                [1e-7, 1 - 1e-7]).
//   GAUC         impression-weighted mean of per-group AUC over the groups (e.g. users) that
//                have both a positive and a negative; groups with one class are skipped.
//   calibration  mean prediction / observed CTR (1.0 is perfectly calibrated).
//   NE           normalized entropy: logloss / entropy of the base rate (a model that
//                predicts the average CTR scores 1.0; lower is better).
//
// MetricAccumulator streams evaluation batches in (appending predictions, labels and group
// keys) and computes everything at the end; exact AUC needs every prediction, 12-20 bytes per
// row. Sorting runs on the compute pool.
// Thread safety: a MetricAccumulator is used by one thread; the free functions are reentrant.
//
// Example:
//   MetricAccumulator acc;
//   for (batch...) acc.Add(probs, batch.labels, batch.group_keys);
//   EvalMetrics m = acc.Compute(compute, /*with_gauc=*/true);
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/parallel.h"

namespace rectrain::train {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct EvalMetrics {
  int64_t rows = 0;
  int64_t positives = 0;
  double auc = kNaN;
  double logloss = kNaN;
  double gauc = kNaN;          // NaN unless requested and some group has both classes
  int64_t gauc_groups = 0;     // groups that entered GAUC
  double calibration = kNaN;
  double ne = kNaN;
  double mean_prediction = kNaN;
  double ctr = kNaN;           // observed positive rate
  // A classifier (model.num_classes >= 2): the share of rows whose label is the top class, or
  // among the top 5; logloss is then the mean softmax cross-entropy. NaN for a CTR model.
  double accuracy = kNaN;
  double top5_accuracy = kNaN;
  // A multi-task model (mmoe): every task's AUC and logloss, the label's first (the fields
  // above are that first task's). Empty for single-task models.
  struct Task {
    std::string name;
    int64_t positives = 0;
    double auc = kNaN;
    double logloss = kNaN;
  };
  std::vector<Task> tasks;
};

// Exact AUC of `scores` against `labels` (label > 0.5 is positive). Sizes must match (CHECK).
double ExactAuc(std::span<const float> scores, std::span<const float> labels,
                const ComputeContext& compute);

// Mean BCE of probabilities (clipped to [1e-7, 1 - 1e-7]); NaN for an empty input.
double LogLoss(std::span<const float> probs, std::span<const float> labels);

class MetricAccumulator {
 public:
  void Reserve(int64_t rows);
  // Appends a batch. `group_keys` is empty or the same size as `probs` (CHECK: a programmer
  // error, the trainer passes batch columns); once one batch came without keys, GAUC is off.
  void Add(std::span<const float> probs, std::span<const float> labels,
           std::span<const uint64_t> group_keys);
  void Clear();
  int64_t rows() const { return static_cast<int64_t>(probs_.size()); }
  const std::vector<float>& probs() const { return probs_; }
  const std::vector<float>& labels() const { return labels_; }

  // Computes every metric; GAUC only when `with_gauc` and every batch had group keys.
  EvalMetrics Compute(const ComputeContext& compute, bool with_gauc) const;

 private:
  std::vector<float> probs_;
  std::vector<float> labels_;
  std::vector<uint64_t> groups_;
  bool all_have_groups_ = true;
};

}  // namespace rectrain::train
