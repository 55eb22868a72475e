#include "rectrain/train/internal/step_runner.h"

#include <algorithm>
#include <cmath>

#include "rectrain/base/stopwatch.h"
#include "rectrain/nn/loss.h"

namespace rectrain::train::internal {

Status StepRunner::RunSlice(const LockstepPass::Step& step, int64_t r0, int64_t r1, uint64_t seed,
                            const ComputeContext& compute, std::span<const std::span<float>> table_grads,
                            double* loss_sum, PhaseSeconds* t) {
  const data::Batch& batch = *step.batch;
  const int64_t m = r1 - r0;
  const int k = b_->model->num_outputs();
  Stopwatch sw;
  // The slice's view of the batch: dense rows, each field's occurrences (CSR offsets rebased).
  std::span<const nn::FieldIndices> fields = b_->store->fields();
  if (m != batch.size) {
    slice_fields_.resize(fields.size());
    slice_offsets_.resize(fields.size());
    for (size_t f = 0; f < fields.size(); ++f) {
      const nn::FieldIndices& fi = fields[f];
      if (fi.offsets.empty()) {
        slice_fields_[f] = nn::FieldIndices{{}, fi.rows.subspan(static_cast<size_t>(r0), static_cast<size_t>(m))};
      } else {
        const int32_t base = fi.offsets[static_cast<size_t>(r0)];
        std::vector<int32_t>& o = slice_offsets_[f];
        o.resize(static_cast<size_t>(m + 1));
        for (int64_t i = 0; i <= m; ++i) o[static_cast<size_t>(i)] = fi.offsets[static_cast<size_t>(r0 + i)] - base;
        slice_fields_[f] = nn::FieldIndices{std::span<const int32_t>(o),
                                            fi.rows.subspan(static_cast<size_t>(base), static_cast<size_t>(o.back()))};
      }
    }
    fields = slice_fields_;
  }
  const int64_t nd = batch.num_dense;
  const TaskLayout& tasks = b_->tasks;
  std::span<const float> dense = std::span<const float>(batch.dense).subspan(static_cast<size_t>(r0 * nd), static_cast<size_t>(m * nd));
  std::span<const float> labels = std::span<const float>(batch.labels).subspan(static_cast<size_t>(r0), static_cast<size_t>(m));
  if (tasks.multi()) {  // the task label columns leave the features
    RECTRAIN_RETURN_IF_ERROR(tasks.Split(batch, r0, r1, &task_dense_, &task_labels_));
    dense = task_dense_;
    labels = task_labels_;
  }
  nn::ForwardInput in{.batch_size = m,
                      .dense = dense,
                      .tables = b_->store->pulled(),
                      .fields = fields,
                      .seed = seed,
                      .row_offset = step.row_offset + r0};
  std::span<float> logits = std::span<float>(logits_).subspan(static_cast<size_t>(r0 * k), static_cast<size_t>(m * k));
  std::span<float> dlogits = std::span<float>(dlogits_).subspan(static_cast<size_t>(r0 * k), static_cast<size_t>(m * k));
  std::span<float> probs = std::span<float>(probs_).subspan(static_cast<size_t>(r0 * k), static_cast<size_t>(m * k));
  RECTRAIN_RETURN_IF_ERROR(b_->model->Forward(in, /*training=*/true, logits, compute));
  double mean = 0;
  if (tasks.multi()) {
    mean = nn::MultiTaskSigmoidCrossEntropy(logits, k, labels, tasks.weights, dlogits, probs, {}, compute);
  } else if (k > 1) {
    mean = nn::SoftmaxCrossEntropy(logits, k, labels, dlogits, probs, compute);
    if (!std::isfinite(mean)) {
      for (int64_t i = 0; i < m; ++i) {
        const float y = labels[static_cast<size_t>(i)];
        if (!(y >= 0 && y < static_cast<float>(k) && static_cast<float>(static_cast<int>(y)) == y)) {
          return InvalidArgumentError("label " + std::to_string(y) + " of row " + std::to_string(r0 + i) +
                                      " is not a class of model.num_classes = " + std::to_string(k) +
                                      " (labels are class indices 0 .. " + std::to_string(k - 1) + ")");
        }
      }
    }
  } else {
    mean = nn::SigmoidCrossEntropy(logits, labels, dlogits, probs, compute);
  }
  *loss_sum += mean * static_cast<double>(m);
  // dL/dlogit is (p - y) / m for the slice; the loss is a mean over the global batch.
  if (m != step.global_rows) {
    const float scale = static_cast<float>(static_cast<double>(m) / static_cast<double>(step.global_rows));
    for (float& d : dlogits) d *= scale;
  }
  t->forward += sw.Seconds();
  sw.Reset();
  RECTRAIN_RETURN_IF_ERROR(b_->model->Backward(dlogits, table_grads, compute));
  t->backward += sw.Seconds();
  return OkStatus();
}

Result<double> StepRunner::Run(const LockstepPass::Step& step, int64_t global_step, const Rates& rates,
                               const ComputeContext& compute, PhaseSeconds* t) {
  const data::Batch& batch = *step.batch;
  // Named as train.log counts steps: this is step `number` once it completes.
  const int64_t number = global_step + 1;
  if (job_.distributed()) job_.comm->set_context("step " + std::to_string(number));
  const double exchange0 = b_->store->stats().exchange_seconds;
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(b_->store->Lookup(batch, embedding::PullMode::kTrain, compute)) << "at step " << number;
  const double exchange1 = b_->store->stats().exchange_seconds;
  t->lookup += sw.Seconds() - (exchange1 - exchange0);

  double loss_sum = 0;
  RECTRAIN_RETURN_IF_ERROR(ForwardBackward(step, number, rates.seed, compute, &loss_sum, t));
  double loss = batch.size > 0 ? loss_sum / static_cast<double>(batch.size) : 0;
  if (job_.lockstep()) {
    sw.Reset();
    RECTRAIN_ASSIGN_OR_RETURN(loss, AllReduceDense(step, loss_sum));
    t->allreduce += sw.Seconds();
  }

  sw.Reset();
  if (b_->async_store != nullptr) b_->async_store->set_dense_lr(rates.dense_lr);
  const double exchange2 = b_->store->stats().exchange_seconds;
  RECTRAIN_RETURN_IF_ERROR(b_->store->Push({.step = global_step, .learning_rate = rates.sparse_lr}, compute)) << "at step " << number;
  const double exchange3 = b_->store->stats().exchange_seconds;
  t->sparse_update += sw.Seconds() - (exchange3 - exchange2);
  t->exchange += (exchange1 - exchange0) + (exchange3 - exchange2);

  // An asynchronous worker's dense update is the servers' (they got the gradients with the push).
  if (b_->async_store == nullptr) {
    sw.Reset();
    RECTRAIN_RETURN_IF_ERROR(opt_->Update({.step = global_step, .learning_rate = rates.dense_lr}, b_->params, compute))
        << "at step " << number;
    t->dense_update += sw.Seconds();
  }
  return loss;
}

Status StepRunner::ForwardBackward(const LockstepPass::Step& step, int64_t number, uint64_t seed,
                                   const ComputeContext& compute, double* loss_sum, PhaseSeconds* t) {
  const size_t n = static_cast<size_t>(step.batch->size);
  const int64_t slices = std::min<int64_t>(accumulate_steps_, std::max<int64_t>(1, static_cast<int64_t>(n)));
  const int k = b_->model->num_outputs();
  logits_.resize(n * static_cast<size_t>(k));
  dlogits_.resize(n * static_cast<size_t>(k));
  probs_.resize(n * static_cast<size_t>(k));
  if (n == 0) {
    for (const auto& p : b_->params) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
  } else if (slices == 1) {
    RECTRAIN_RETURN_IF_ERROR(RunSlice(step, 0, static_cast<int64_t>(n), seed, compute, b_->store->grads(), loss_sum, t))
        << "at step " << number;
  } else {
    RECTRAIN_RETURN_IF_ERROR(RunSlices(step, number, slices, seed, compute, loss_sum, t));
  }
  if (b_->tasks.multi()) {  // probs(): the label's task, one per row
    main_probs_.resize(n);
    for (size_t i = 0; i < n; ++i) main_probs_[i] = probs_[i * static_cast<size_t>(k)];
  }
  return OkStatus();
}

Status StepRunner::RunSlices(const LockstepPass::Step& step, int64_t number, int64_t slices, uint64_t seed,
                             const ComputeContext& compute, double* loss_sum, PhaseSeconds* t) {
  const int64_t n = step.batch->size;
  // Slice 0 writes the store's gradient buffers and the dense sums; later slices add to them.
  std::span<const std::span<float>> grads = b_->store->grads();
  table_scratch_.resize(grads.size());
  table_scratch_spans_.resize(grads.size());
  for (size_t tb = 0; tb < grads.size(); ++tb) {
    table_scratch_[tb].resize(grads[tb].size());
    table_scratch_spans_[tb] = std::span<float>(table_scratch_[tb]);
  }
  size_t dense_size = 0;
  for (const auto& p : b_->params) dense_size += p.grad.size();
  dense_sum_.assign(dense_size, 0.0f);
  for (int64_t sl = 0; sl < slices; ++sl) {
    const int64_t r0 = n * sl / slices, r1 = n * (sl + 1) / slices;
    std::span<const std::span<float>> into = sl == 0 ? grads : std::span<const std::span<float>>(table_scratch_spans_);
    RECTRAIN_RETURN_IF_ERROR(RunSlice(step, r0, r1, seed, compute, into, loss_sum, t))
        << "at step " << number << " (slice " << sl << " of train.accumulate_steps " << slices << ")";
    Stopwatch add;
    if (sl > 0) {
      for (size_t tb = 0; tb < grads.size(); ++tb) {
        float* dst = grads[tb].data();
        const float* src = table_scratch_[tb].data();
        for (size_t i = 0; i < grads[tb].size(); ++i) dst[i] += src[i];
      }
    }
    size_t off = 0;
    for (const auto& p : b_->params) {
      for (size_t i = 0; i < p.grad.size(); ++i) dense_sum_[off + i] += p.grad[i];
      off += p.grad.size();
    }
    t->backward += add.Seconds();
  }
  size_t off = 0;
  for (const auto& p : b_->params) {
    std::copy_n(dense_sum_.data() + off, p.grad.size(), p.grad.data());
    off += p.grad.size();
  }
  return OkStatus();
}

Result<double> StepRunner::AllReduceDense(const LockstepPass::Step& step, double loss_sum) {
  // The dense gradients of every rank and the loss, summed in one AllReduce.
  reduce_.clear();
  for (const auto& p : b_->params) reduce_.insert(reduce_.end(), p.grad.begin(), p.grad.end());
  reduce_.push_back(static_cast<float>(loss_sum));
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<float>(reduce_), dist::ReduceOp::kSum));
  const int64_t w = job_.world();
  allreduce_min_bytes_ += 2 * (w - 1) * static_cast<int64_t>(reduce_.size() * sizeof(float)) / w;
  size_t off = 0;
  for (const auto& p : b_->params) {
    std::copy_n(reduce_.data() + off, p.grad.size(), p.grad.data());
    off += p.grad.size();
  }
  return static_cast<double>(reduce_.back()) / static_cast<double>(step.global_rows);
}

}  // namespace rectrain::train::internal
