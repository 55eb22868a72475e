#include "rectrain/train/internal/step_runner.h"

#include <algorithm>

#include "rectrain/base/stopwatch.h"
#include "rectrain/nn/loss.h"

namespace rectrain::train::internal {

Result<double> StepRunner::Run(const LockstepPass::Step& step, int64_t global_step, const Rates& rates,
                               const ComputeContext& compute, PhaseSeconds* t) {
  const data::Batch& batch = *step.batch;
  const size_t n = static_cast<size_t>(batch.size);
  const double exchange0 = b_->store->stats().exchange_seconds;
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(b_->store->Lookup(batch, embedding::PullMode::kTrain, compute)) << "at step " << global_step;
  const double exchange1 = b_->store->stats().exchange_seconds;
  t->lookup += sw.Seconds() - (exchange1 - exchange0);

  sw.Reset();
  double loss_sum = 0;
  logits_.resize(n);
  dlogits_.resize(n);
  probs_.resize(n);
  if (n > 0) {
    nn::ForwardInput in{.batch_size = batch.size,
                        .dense = batch.dense,
                        .tables = b_->store->pulled(),
                        .fields = b_->store->fields(),
                        .seed = rates.seed,
                        .row_offset = step.row_offset};
    RECTRAIN_RETURN_IF_ERROR(b_->model->Forward(in, /*training=*/true, logits_, compute)) << "at step " << global_step;
    const double local_mean = nn::SigmoidCrossEntropy(logits_, batch.labels, dlogits_, probs_, compute);
    loss_sum = local_mean * static_cast<double>(n);
    // dL/dlogit is (p - y) / n_local; the loss is a mean over the global batch.
    if (static_cast<int64_t>(n) != step.global_rows) {
      const float scale = static_cast<float>(static_cast<double>(n) / static_cast<double>(step.global_rows));
      for (float& d : dlogits_) d *= scale;
    }
  }
  t->forward += sw.Seconds();

  sw.Reset();
  if (n > 0) {
    RECTRAIN_RETURN_IF_ERROR(b_->model->Backward(dlogits_, b_->store->grads(), compute)) << "at step " << global_step;
  } else {
    for (const auto& p : b_->params) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
  }
  t->backward += sw.Seconds();

  double loss = n > 0 ? loss_sum / static_cast<double>(n) : 0;
  if (job_.distributed()) {
    // The dense gradients of every rank and the loss, summed in one AllReduce.
    sw.Reset();
    reduce_.clear();
    for (const auto& p : b_->params) reduce_.insert(reduce_.end(), p.grad.begin(), p.grad.end());
    reduce_.push_back(static_cast<float>(loss_sum));
    job_.comm->set_context("step " + std::to_string(global_step));
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<float>(reduce_), dist::ReduceOp::kSum));
    const int64_t w = job_.world();
    allreduce_min_bytes_ += 2 * (w - 1) * static_cast<int64_t>(reduce_.size() * sizeof(float)) / w;
    size_t off = 0;
    for (const auto& p : b_->params) {
      std::copy_n(reduce_.data() + off, p.grad.size(), p.grad.data());
      off += p.grad.size();
    }
    loss = static_cast<double>(reduce_.back()) / static_cast<double>(step.global_rows);
    t->allreduce += sw.Seconds();
  }

  sw.Reset();
  const double exchange2 = b_->store->stats().exchange_seconds;
  RECTRAIN_RETURN_IF_ERROR(b_->store->Push({.step = global_step, .learning_rate = rates.sparse_lr}, compute)) << "at step " << global_step;
  const double exchange3 = b_->store->stats().exchange_seconds;
  t->sparse_update += sw.Seconds() - (exchange3 - exchange2);
  t->exchange += (exchange1 - exchange0) + (exchange3 - exchange2);

  sw.Reset();
  RECTRAIN_RETURN_IF_ERROR(opt_->Update({.step = global_step, .learning_rate = rates.dense_lr}, b_->params, compute)) << "at step " << global_step;
  t->dense_update += sw.Seconds();
  return loss;
}

}  // namespace rectrain::train::internal
