#include "rectrain/train/internal/evaluator.h"

#include <cmath>

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
  MetricAccumulator* acc = &acc_;
  acc->Clear();
  const int classes = bundle.model->num_outputs();
  // A classifier's sums: rows, correct at 1, correct in the top 5, cross-entropy.
  double multi[4] = {0, 0, 0, 0};
  my_probs_.clear();
  my_labels_.clear();
  my_groups_.clear();
  batch_rows_.clear();
  bool groups = true;
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
    logits_.resize(static_cast<size_t>(batch.size * classes));
    probs_.resize(static_cast<size_t>(batch.size * classes));
    nn::ForwardInput in{.batch_size = batch.size,
                        .dense = batch.dense,
                        .tables = bundle.store->pulled(),
                        .fields = bundle.store->fields(),
                        .seed = 0};
    RECTRAIN_RETURN_IF_ERROR(bundle.model->Forward(in, /*training=*/false, logits_, compute));
    if (classes > 1) {
      const double ce = nn::SoftmaxCrossEntropy(logits_, classes, batch.labels, {}, probs_, compute);
      if (!std::isfinite(ce)) {
        return InvalidArgumentError("a label of data.valid is not a class of model.num_classes = " +
                                    std::to_string(classes) + " (labels must be 0 .. " + std::to_string(classes - 1) + ")");
      }
      multi[0] += static_cast<double>(batch.size);
      multi[3] += ce * static_cast<double>(batch.size);
      for (int64_t r = 0; r < batch.size; ++r) {
        const float* p = probs_.data() + r * classes;
        const int y = static_cast<int>(batch.labels[static_cast<size_t>(r)]);
        int above = 0;  // classes scored above the label's (ties count for the label)
        for (int k = 0; k < classes; ++k) above += p[k] > p[y] ? 1 : 0;
        multi[1] += above == 0 ? 1 : 0;
        multi[2] += above < 5 ? 1 : 0;
      }
      continue;
    }
    if (downsampling < 1.0) {
      for (float& l : logits_) l = static_cast<float>(data::CalibrateLogit(l, downsampling));
    }
    nn::SigmoidCrossEntropy(logits_, batch.labels, {}, probs_, compute);
    if (!job_.distributed()) {
      acc->Add(probs_, batch.labels, batch.group_keys);
      continue;
    }
    my_probs_.insert(my_probs_.end(), probs_.begin(), probs_.end());
    my_labels_.insert(my_labels_.end(), batch.labels.begin(), batch.labels.end());
    groups &= !batch.group_keys.empty();
    if (groups) my_groups_.insert(my_groups_.end(), batch.group_keys.begin(), batch.group_keys.end());
  }
  if (classes > 1) {
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<double>(multi, 4), dist::ReduceOp::kSum));
    *out = EvalMetrics();
    out->rows = static_cast<int64_t>(multi[0]);
    if (multi[0] > 0) {
      out->accuracy = multi[1] / multi[0];
      out->top5_accuracy = multi[2] / multi[0];
      out->logloss = multi[3] / multi[0];
    }
    return OkStatus();
  }
  if (!job_.distributed()) {
    *out = acc->Compute(compute, gauc);
    return OkStatus();
  }
  // Every rank's predictions, in file order, on every rank.
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
  acc->Add(p, l, group_keys);
  *out = acc->Compute(compute, gauc);
  return OkStatus();
}

}  // namespace rectrain::train::internal
