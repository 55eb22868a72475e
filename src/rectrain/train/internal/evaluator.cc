#include "rectrain/train/internal/evaluator.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "rectrain/data/pass_plan.h"
#include "rectrain/data/transform.h"
#include "rectrain/nn/loss.h"

namespace rectrain::train::internal {
namespace {

// Rank-major gathered values (rank 0's rows of every batch, then rank 1's, ...) put back in
// file order: batch k holds rows SliceOfBatch(batch_rows[k], r, w) of each rank r in turn.
template <typename T>
std::vector<T> FileOrder(const std::vector<T>& gathered, const std::vector<int64_t>& per_rank,
                         const std::vector<int64_t>& batch_rows, int world) {
  std::vector<size_t> at(static_cast<size_t>(world), 0);
  for (int r = 1; r < world; ++r) at[static_cast<size_t>(r)] = at[static_cast<size_t>(r - 1)] + static_cast<size_t>(per_rank[static_cast<size_t>(r - 1)]);
  std::vector<T> out;
  out.reserve(gathered.size());
  for (int64_t rows : batch_rows) {
    for (int r = 0; r < world; ++r) {
      const int64_t n = data::SliceOfBatch(rows, r, world).size();
      out.insert(out.end(), gathered.begin() + static_cast<int64_t>(at[static_cast<size_t>(r)]),
                 gathered.begin() + static_cast<int64_t>(at[static_cast<size_t>(r)]) + n);
      at[static_cast<size_t>(r)] += static_cast<size_t>(n);
    }
  }
  return out;
}

}  // namespace

Status EvalSplit::Evaluate(ModelBundle& bundle, const ComputeContext& compute, double downsampling, bool gauc,
                           EvalMetrics* out) {
  const TaskLayout& tasks = bundle.tasks;
  const int classes = tasks.multi() ? 1 : bundle.model->num_outputs();
  Reset(tasks);
  bool groups = true;  // every batch so far had group keys (GAUC)
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::BatchReader> reader, source_->Open(/*epoch=*/0, /*skip_rows=*/0));
  if (job_.distributed()) reader = data::SliceBatches(std::move(reader), job_.rank(), job_.world());
  LockstepPass pass(std::move(reader), job_);
  while (true) {
    double waited = 0;
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<LockstepPass::Step> step, pass.Next(false, &waited));
    if (!step) break;
    const data::Batch& batch = *step->batch;
    batch_rows_.push_back(step->global_rows);
    RECTRAIN_RETURN_IF_ERROR(bundle.store->Lookup(batch, embedding::PullMode::kEval, compute));
    if (batch.size == 0) continue;
    RECTRAIN_RETURN_IF_ERROR(Forward(bundle, batch, classes, downsampling, compute));
    if (classes > 1) {
      RECTRAIN_RETURN_IF_ERROR(ScoreClasses(batch, classes, compute));
    } else {
      KeepPredictions(batch, &groups);
    }
  }
  if (classes > 1) return ClassifierMetrics(out);
  if (job_.distributed()) {
    RECTRAIN_RETURN_IF_ERROR(GatherInFileOrder(groups));
  }
  *out = acc_.Compute(compute, gauc);
  return AddTaskMetrics(tasks, compute, out);
}

void EvalSplit::Reset(const TaskLayout& tasks) {
  acc_.Clear();
  const size_t multi_tasks = tasks.multi() ? static_cast<size_t>(tasks.tasks()) : 0;
  my_task_probs_.assign(multi_tasks, {});
  my_task_labels_.assign(multi_tasks, {});
  std::fill(std::begin(class_sums_), std::end(class_sums_), 0.0);
  my_probs_.clear();
  my_labels_.clear();
  my_groups_.clear();
  batch_rows_.clear();
}

Status EvalSplit::Forward(ModelBundle& bundle, const data::Batch& batch, int classes, double downsampling,
                          const ComputeContext& compute) {
  const TaskLayout& tasks = bundle.tasks;
  logits_.resize(static_cast<size_t>(batch.size * classes));
  probs_.resize(static_cast<size_t>(batch.size * classes));
  nn::ForwardInput in{.batch_size = batch.size,
                      .dense = batch.dense,
                      .tables = bundle.store->pulled(),
                      .fields = bundle.store->fields(),
                      .seed = 0};
  if (!tasks.multi()) {
    RECTRAIN_RETURN_IF_ERROR(bundle.model->Forward(in, /*training=*/false, logits_, compute));
    if (classes > 1) return OkStatus();  // ScoreClasses takes the softmax
    if (downsampling < 1.0) {
      for (float& l : logits_) l = static_cast<float>(data::CalibrateLogit(l, downsampling));
    }
    nn::SigmoidCrossEntropy(logits_, batch.labels, {}, probs_, compute);
    return OkStatus();
  }
  const int T = tasks.tasks();
  RECTRAIN_RETURN_IF_ERROR(tasks.Split(batch, 0, batch.size, &task_dense_, &task_labels_));
  in.dense = task_dense_;
  logits_.resize(static_cast<size_t>(batch.size * T));
  task_probs_.resize(logits_.size());
  RECTRAIN_RETURN_IF_ERROR(bundle.model->Forward(in, /*training=*/false, logits_, compute));
  if (downsampling < 1.0) {  // negative downsampling thins the label's negatives: task 0 only
    for (int64_t r = 0; r < batch.size; ++r) {
      float& l = logits_[static_cast<size_t>(r * T)];
      l = static_cast<float>(data::CalibrateLogit(l, downsampling));
    }
  }
  nn::MultiTaskSigmoidCrossEntropy(logits_, T, task_labels_, tasks.weights, {}, task_probs_, {}, compute);
  for (int t = 0; t < T; ++t) {
    for (int64_t r = 0; r < batch.size; ++r) {
      my_task_probs_[static_cast<size_t>(t)].push_back(task_probs_[static_cast<size_t>(r * T + t)]);
      my_task_labels_[static_cast<size_t>(t)].push_back(task_labels_[static_cast<size_t>(r * T + t)]);
    }
  }
  // The label's task is scored as a single-task model's (AUC, GAUC, the oracle's rows).
  for (int64_t r = 0; r < batch.size; ++r) probs_[static_cast<size_t>(r)] = task_probs_[static_cast<size_t>(r * T)];
  return OkStatus();
}

Status EvalSplit::ScoreClasses(const data::Batch& batch, int classes, const ComputeContext& compute) {
  const double ce = nn::SoftmaxCrossEntropy(logits_, classes, batch.labels, {}, probs_, compute);
  if (!std::isfinite(ce)) {
    return InvalidArgumentError("a label of data.valid is not a class of model.num_classes = " +
                                std::to_string(classes) + " (labels must be 0 .. " + std::to_string(classes - 1) + ")");
  }
  class_sums_[0] += static_cast<double>(batch.size);
  class_sums_[3] += ce * static_cast<double>(batch.size);
  for (int64_t r = 0; r < batch.size; ++r) {
    const float* p = probs_.data() + r * classes;
    const int y = static_cast<int>(batch.labels[static_cast<size_t>(r)]);
    int above = 0;  // classes scored above the label's (ties count for the label)
    for (int k = 0; k < classes; ++k) above += p[k] > p[y] ? 1 : 0;
    class_sums_[1] += above == 0 ? 1 : 0;
    class_sums_[2] += above < 5 ? 1 : 0;
  }
  return OkStatus();
}

void EvalSplit::KeepPredictions(const data::Batch& batch, bool* groups) {
  if (!job_.distributed()) {
    acc_.Add(probs_, batch.labels, batch.group_keys);
    return;
  }
  my_probs_.insert(my_probs_.end(), probs_.begin(), probs_.end());
  my_labels_.insert(my_labels_.end(), batch.labels.begin(), batch.labels.end());
  *groups &= !batch.group_keys.empty();
  if (*groups) my_groups_.insert(my_groups_.end(), batch.group_keys.begin(), batch.group_keys.end());
}

Status EvalSplit::ClassifierMetrics(EvalMetrics* out) {
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<double>(class_sums_, 4), dist::ReduceOp::kSum));
  *out = EvalMetrics();
  out->rows = static_cast<int64_t>(class_sums_[0]);
  if (class_sums_[0] > 0) {
    out->accuracy = class_sums_[1] / class_sums_[0];
    out->top5_accuracy = class_sums_[2] / class_sums_[0];
    out->logloss = class_sums_[3] / class_sums_[0];
  }
  return OkStatus();
}

Status EvalSplit::GatherInFileOrder(bool groups) {
  std::vector<float> probs, labels;
  std::vector<uint64_t> group_keys;
  std::vector<int64_t> per_rank;
  dist::Communicator& comm = *job_.comm;
  RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const float>(my_probs_), &probs, &per_rank));
  RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const float>(my_labels_), &labels, nullptr));
  // GAUC needs keys from every rank's every batch.
  std::vector<int64_t> all_groups = {groups ? 1 : 0};
  RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<int64_t>(all_groups), dist::ReduceOp::kMin));
  if (all_groups[0] != 0) {
    RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const uint64_t>(my_groups_), &group_keys, nullptr));
    group_keys = FileOrder(group_keys, per_rank, batch_rows_, job_.world());
  }
  const std::vector<float> p = FileOrder(probs, per_rank, batch_rows_, job_.world());
  const std::vector<float> l = FileOrder(labels, per_rank, batch_rows_, job_.world());
  acc_.Add(p, l, group_keys);
  for (size_t t = 0; t < my_task_probs_.size(); ++t) {  // every task's rows, in file order
    std::vector<float> tp, tl;
    std::vector<int64_t> tr;
    RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const float>(my_task_probs_[t]), &tp, &tr));
    RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const float>(my_task_labels_[t]), &tl, nullptr));
    my_task_probs_[t] = FileOrder(tp, tr, batch_rows_, job_.world());
    my_task_labels_[t] = FileOrder(tl, tr, batch_rows_, job_.world());
  }
  return OkStatus();
}

Status EvalSplit::AddTaskMetrics(const TaskLayout& tasks, const ComputeContext& compute, EvalMetrics* out) {
  if (!tasks.multi()) return OkStatus();
  for (int t = 0; t < tasks.tasks(); ++t) {
    MetricAccumulator a;
    a.Add(my_task_probs_[static_cast<size_t>(t)], my_task_labels_[static_cast<size_t>(t)], {});
    const EvalMetrics m = a.Compute(compute, false);
    out->tasks.push_back({tasks.names[static_cast<size_t>(t)], m.positives, m.auc, m.logloss});
  }
  return OkStatus();
}

}  // namespace rectrain::train::internal
