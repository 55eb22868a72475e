// rectrain/train/internal/evaluator.h (internal to train/): forward-only passes over a split
// (data.valid during training, `rectrain eval`), accumulating the predictions for the metrics.
//
// In a job every rank reads the whole split in file order and scores its slice of every batch
// (dist.data_split batches, whatever the training split: validation sets are small next to the
// training data, and this keeps the per-step lookups of every rank in step). The predictions are
// then gathered and put back in file order on every rank, so the metrics are exact over all rows
// (not averages of per-rank metrics), identical on every rank (early stopping agrees), and the
// oracle's .prob rows line up with them.
//
// Thread safety: used by the training thread only.
#pragma once

#include <memory>

#include "rectrain/base/status.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/metrics.h"

namespace rectrain::train::internal {

class EvalSplit {
 public:
  // `source` reads the whole split (ReadOptions::world 1) in file order.
  EvalSplit(std::unique_ptr<data::EpochSource> source, const Job& job) : source_(std::move(source)), job_(job) {}

  // Scores every row and computes the metrics into *out. A CTR model (one logit) gets AUC,
  // logloss, calibration, NE (GAUC when `gauc`); the predictions stay in accumulator() (for the
  // oracle). A classifier gets accuracy, top-5 accuracy and the mean cross-entropy as logloss,
  // summed over ranks without gathering rows. `downsampling` is the training data's
  // data.negative_downsampling: logits are calibrated (data::CalibrateLogit) when it is < 1.
  // A multi-task model gets the CTR metrics of its first task (the label) and out->tasks: each
  // task's AUC and logloss.
  Status Evaluate(ModelBundle& bundle, const ComputeContext& compute, double downsampling, bool gauc,
                  EvalMetrics* out);
  const MetricAccumulator& accumulator() const { return acc_; }

 private:
  // The phases of Evaluate: clears what a pass accumulates; the forward of one batch into
  // logits_ (a classifier), or probs_ (the label's probabilities, calibrated) and, for a
  // multi-task model, each task's rows into my_task_*; a classifier's batch into class_sums_;
  // a CTR batch's predictions into the accumulator, or kept for the gather in a job (*groups
  // drops to false at the first batch without group keys).
  void Reset(const TaskLayout& tasks);
  Status Forward(ModelBundle& bundle, const data::Batch& batch, int classes, double downsampling,
                 const ComputeContext& compute);
  Status ScoreClasses(const data::Batch& batch, int classes, const ComputeContext& compute);
  void KeepPredictions(const data::Batch& batch, bool* groups);
  // A classifier's metrics from class_sums_ summed over the ranks.
  Status ClassifierMetrics(EvalMetrics* out);
  // Every rank's kept predictions (and each task's), in file order, into the accumulator (and
  // my_task_*) of every rank; group keys only when every rank's every batch had them.
  Status GatherInFileOrder(bool groups);
  // out->tasks from the gathered per-task predictions (a no-op for a single-task model).
  Status AddTaskMetrics(const TaskLayout& tasks, const ComputeContext& compute, EvalMetrics* out);

  std::unique_ptr<data::EpochSource> source_;
  Job job_;
  std::vector<float> logits_, probs_;
  std::vector<float> my_probs_, my_labels_;
  // Multi-task models: the model's dense features and every task's labels of a batch; each
  // task's predictions and labels (this rank's, in a job, until gathered).
  std::vector<float> task_dense_, task_labels_, task_probs_;
  std::vector<std::vector<float>> my_task_probs_, my_task_labels_;
  std::vector<uint64_t> my_groups_;
  std::vector<int64_t> batch_rows_;  // global rows of every batch of the pass
  double class_sums_[4] = {0, 0, 0, 0};  // a classifier's rows, correct at 1, in the top 5, cross-entropy
  MetricAccumulator acc_;
};

}  // namespace rectrain::train::internal
