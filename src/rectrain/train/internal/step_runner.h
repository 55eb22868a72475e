// rectrain/train/internal/step_runner.h (internal to train/): one training step on this rank's
// rows of the global batch.
//
//   store.Lookup            dedupe, fetch rows (in a job: the id/row exchange)       "lookup"
//   Forward + loss          sigmoid cross-entropy; dL/dlogit scaled by 1/global rows   "forward"
//   Backward                dense grads, row grads                                     "backward"
//   AllReduce (a job only)  the dense gradients and the loss, summed over ranks        "allreduce"
//   store.Push              sparse optimizer on the owners (in a job: the exchange)    "sparse_update"
//   Optimizer::Update       the dense optimizer, identical on every rank               "dense_update"
// The store's time in collectives is reported as "exchange" and taken out of lookup and
// sparse_update, so the phases add up to the step. A rank without rows this step still takes
// part in every collective, with zero gradients.
//
// A classifier (Model::num_outputs() > 1) uses the softmax cross-entropy; a label that is not a
// class index fails the step naming it. A multi-task model (Model::num_tasks() > 1) gets its
// features without the task label columns and the weighted sum of its tasks' sigmoid
// cross-entropies (bundle.tasks). With `accumulate_steps` k > 1 the rank's rows go through
// forward and backward in k slices (the activations of one slice at a time) whose gradients are
// summed: the same update as one pass over the batch, up to float summation order (dropout masks
// are keyed by the global row, so they are the same too).
//
// Thread safety: used by the training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/trainer.h"

namespace rectrain::train::internal {

class StepRunner {
 public:
  StepRunner(ModelBundle* bundle, optim::Optimizer* optimizer, const Job& job, int64_t accumulate_steps = 1)
      : b_(bundle), opt_(optimizer), job_(job), accumulate_steps_(accumulate_steps) {}

  struct Rates {
    uint64_t seed = 0;     // DeriveSeed(run seed, step): dropout
    float dense_lr = 0;
    float sparse_lr = 0;
  };
  // Runs the step; returns the mean loss over the global batch. probs() then holds this rank's
  // predictions. Errors name the step.
  Result<double> Run(const LockstepPass::Step& step, int64_t global_step, const Rates& rates,
                     const ComputeContext& compute, PhaseSeconds* t);
  // This rank's predictions of the last step: probabilities (one per row), or for a classifier
  // the softmax of each row (num_outputs per row); for a multi-task model the label's task.
  std::span<const float> probs() const { return b_->tasks.multi() ? std::span<const float>(main_probs_) : std::span<const float>(probs_); }
  // The least an AllReduce of the dense gradients could have sent from this rank so far:
  // 2·(world-1)/world of their bytes per step (the bandwidth lower bound the ring attains).
  int64_t allreduce_min_bytes() const { return allreduce_min_bytes_; }

 private:
  // Forward, loss and backward over rows [r0, r1) of the batch; adds the slice's loss sum.
  Status RunSlice(const LockstepPass::Step& step, int64_t r0, int64_t r1, uint64_t seed, const ComputeContext& compute,
                  std::span<const std::span<float>> table_grads, double* loss_sum, PhaseSeconds* t);
  // The step's forward and backward (over `slices` slices under train.accumulate_steps; zero
  // dense gradients for a rank without rows); adds the rows' loss sum. Errors name step `number`.
  Status ForwardBackward(const LockstepPass::Step& step, int64_t number, uint64_t seed, const ComputeContext& compute,
                         double* loss_sum, PhaseSeconds* t);
  Status RunSlices(const LockstepPass::Step& step, int64_t number, int64_t slices, uint64_t seed,
                   const ComputeContext& compute, double* loss_sum, PhaseSeconds* t);
  // Sums the dense gradients and `loss_sum` over the ranks (the gradients in place); returns the
  // mean loss over the global batch.
  Result<double> AllReduceDense(const LockstepPass::Step& step, double loss_sum);

  ModelBundle* b_;
  optim::Optimizer* opt_;
  Job job_;
  int64_t accumulate_steps_;
  // Slice views (gradient accumulation) and the gradient sums across slices.
  std::vector<nn::FieldIndices> slice_fields_;
  std::vector<std::vector<int32_t>> slice_offsets_;
  std::vector<float> dense_sum_;
  std::vector<std::vector<float>> table_scratch_;
  std::vector<std::span<float>> table_scratch_spans_;
  std::vector<float> logits_, dlogits_, probs_;
  std::vector<float> task_dense_, task_labels_, main_probs_;  // multi-task models (TaskLayout)
  std::vector<float> reduce_;  // every dense gradient, then the loss sum
  int64_t allreduce_min_bytes_ = 0;
};

}  // namespace rectrain::train::internal
