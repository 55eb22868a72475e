// rectrain/train/internal/job.h (internal to train/): the ranks of a training job as the trainer
// sees them, and a pass over a split read by every rank in step.
//
// Every rank runs the same steps, because each step is a set of collectives (the embedding
// exchange, the gradient AllReduce). LockstepPass makes that hold whatever each rank's share of
// the data: per step one small AllReduce tells every rank how many rows each rank has (so the
// loss is scaled by the global batch and dropout is keyed by global rows), whether any rank hit
// an error (then every rank stops with it), wants to stop (a signal), or has reached the end of
// its share; a rank whose share has ended passes empty batches until every share has ended.
// With one process (or an asynchronous worker, which trains on its own) it is the reader itself,
// at no cost.
//
// Thread safety: used by the training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/reader.h"
#include "rectrain/dist/communicator.h"

namespace rectrain::train::internal {

struct Job {
  dist::Communicator* comm = nullptr;  // never null (Communicator::Single() for one process)
  config::DataSplit split = config::DataSplit::kShards;  // resolved: shards or batches
  // dist.mode async: the last `servers` ranks are parameter servers (ps/async_ps.h), the others
  // workers that train on their own; 0 in sync mode.
  int servers = 0;
  int rank() const { return comm->rank(); }
  int world() const { return comm->world(); }
  bool distributed() const { return comm->world() > 1; }
  bool lead() const { return comm->rank() == 0; }  // logs, writes summaries, reports
  bool async() const { return servers > 0; }
  // Every rank steps together (sync): passes, collectives and decisions are agreed per step.
  bool lockstep() const { return distributed() && !async(); }
  bool is_server() const { return async() && rank() >= world() - servers; }
  int workers() const { return world() - servers; }
};

// Every rank of a job must run one config and one binary: the ranks compare `config_hash` and
// their dist::BuildId(), and every rank returns the same verdict (FailedPrecondition naming the
// first rank that differs from rank 0). A no-op for one process.
Status AgreeOnConfigAndBuild(const Job& job, uint64_t config_hash);

class LockstepPass {
 public:
  struct Step {
    const data::Batch* batch = nullptr;  // this rank's rows (size 0 once its share has ended)
    int64_t global_rows = 0;             // rows of the step over every rank
    int64_t row_offset = 0;              // global index of this rank's first row (rank order)
    bool stop = false;                   // some rank asked to stop after this step
  };

  LockstepPass(std::unique_ptr<data::BatchReader> reader, const Job& job);

  // This rank's next step; nullopt once every rank's share of the pass has ended. A reader error
  // on any rank ends the pass with that error on every rank. `*waited` gets the seconds spent
  // waiting for this rank's reader.
  Result<std::optional<Step>> Next(bool stop_requested, double* waited);
  // Hands the last step's batch back to the reader for reuse.
  void Recycle();
  data::BatchReader& reader() { return *reader_; }

 private:
  std::unique_ptr<data::BatchReader> reader_;
  Job job_;
  data::Batch batch_;
  bool have_batch_ = false;
  bool ended_ = false;
  std::vector<int64_t> flags_;
};

}  // namespace rectrain::train::internal
