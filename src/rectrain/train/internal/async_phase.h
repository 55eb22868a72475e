// rectrain/train/internal/async_phase.h (internal to train/): the two ends of training in
// dist.mode async (ps/async_ps.h, docs/scaling.md). A server rank serves the workers' pulls and
// pushes until every worker is done. Then every rank concludes together: it gathers the servers'
// dense parameters, switches to a store sharded over the servers (the final evaluation and the
// checkpoint step every rank together, as in sync mode), and learns the job's totals.
// Thread safety: the training thread only; ConcludeAsync is a collective of every rank.
#pragma once

#include <cstdint>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/config/train_config.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"

namespace rectrain::train::internal {

// A server's part (job.is_server()): serves its rows of `bundle`'s tables and its chunk of the
// dense parameters, with a dense optimizer of its own for that chunk (its moments start afresh:
// a resumed async run restarts them), until every worker is done. `*seconds` gets the time served.
Status ServeAsServer(const config::TrainConfig& c, const Job& job, ModelBundle& bundle, const ComputeContext& compute,
                     double* seconds);

// What each rank knows of the job's progress: its own on the way in (a server's counts are
// ignored), the job's on the way out — rows summed over the workers, the slowest worker's
// seconds, the most steps and epochs any worker reached.
struct AsyncTotals {
  int64_t session_rows = 0;
  int64_t rows_read_total = 0;
  int64_t rows_in_epoch = 0;
  double session_seconds = 0;
  int64_t step = 0;
  int64_t epoch = 0;
};

// Every rank, after the workers are done. Errors: the communicator's.
Status ConcludeAsync(const Job& job, ModelBundle& bundle, AsyncTotals* totals);

}  // namespace rectrain::train::internal
