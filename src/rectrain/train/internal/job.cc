#include "rectrain/train/internal/job.h"

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/dist/launch.h"

namespace rectrain::train::internal {

Status AgreeOnConfigAndBuild(const Job& job, uint64_t config_hash) {
  if (!job.distributed()) return OkStatus();
  std::vector<uint64_t> mine = {config_hash, HashBytes(dist::BuildId(), 0)}, all;
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllGatherV(std::span<const uint64_t>(mine), &all, nullptr));
  Status same;
  for (int r = 1; r < job.world() && same.ok(); ++r) {
    if (all[static_cast<size_t>(2 * r)] != all[0]) {
      same = FailedPreconditionError("rank " + std::to_string(r) + " was started with another configuration than rank 0 "
                                     "(config hash differs): every rank must get the same config file and --set flags");
    } else if (all[static_cast<size_t>(2 * r + 1)] != all[1]) {
      same = FailedPreconditionError("rank " + std::to_string(r) + " runs another rectrain build than rank 0: install one "
                                     "binary on every host (rectrain doctor compares them)");
    }
  }
  return dist::AgreeOk(*job.comm, same);
}

LockstepPass::LockstepPass(std::unique_ptr<data::BatchReader> reader, const Job& job)
    : reader_(std::move(reader)), job_(job) {}

void LockstepPass::Recycle() {
  if (have_batch_) reader_->Recycle(std::move(batch_));
  have_batch_ = false;
}

Result<std::optional<LockstepPass::Step>> LockstepPass::Next(bool stop_requested, double* waited) {
  Recycle();
  Status local;
  Stopwatch sw;
  if (!ended_) {
    Result<std::optional<data::Batch>> next = reader_->Next();
    if (!next.ok()) {
      local = next.status();
    } else if (!next->has_value()) {
      ended_ = true;
    } else {
      batch_ = std::move(**next);
      have_batch_ = true;
    }
  }
  *waited = sw.Seconds();
  const int64_t rows = have_batch_ ? batch_.size : 0;
  if (!job_.lockstep()) {  // one process, or an asynchronous worker: its own pass
    if (!local.ok()) return local;
    if (ended_) return std::optional<Step>();
    return std::optional<Step>(Step{&batch_, rows, 0, stop_requested});
  }
  // [failed, rows, ended, stop] of every rank, each in its own slots of one small AllReduce.
  const int w = job_.world(), r = job_.rank();
  flags_.assign(static_cast<size_t>(4 * w), 0);
  flags_[static_cast<size_t>(4 * r)] = local.ok() ? 0 : 1;
  flags_[static_cast<size_t>(4 * r + 1)] = rows;
  flags_[static_cast<size_t>(4 * r + 2)] = ended_ ? 1 : 0;
  flags_[static_cast<size_t>(4 * r + 3)] = stop_requested ? 1 : 0;
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(flags_), dist::ReduceOp::kSum));
  bool failed = false, all_ended = true, stop = false;
  Step step;
  for (int k = 0; k < w; ++k) {
    failed |= flags_[static_cast<size_t>(4 * k)] != 0;
    if (k < r) step.row_offset += flags_[static_cast<size_t>(4 * k + 1)];
    step.global_rows += flags_[static_cast<size_t>(4 * k + 1)];
    all_ended &= flags_[static_cast<size_t>(4 * k + 2)] != 0;
    stop |= flags_[static_cast<size_t>(4 * k + 3)] != 0;
  }
  if (failed) {
    Status agreed = dist::AgreeOk(*job_.comm, local);
    return agreed.ok() ? InternalError("a rank reported a reader error that AgreeOk did not see") : agreed;
  }
  if (all_ended) return std::optional<Step>();
  if (!have_batch_) batch_ = data::Batch();  // this rank's share is over: an empty batch
  step.batch = &batch_;
  step.stop = stop;
  return std::optional<Step>(step);
}

}  // namespace rectrain::train::internal
