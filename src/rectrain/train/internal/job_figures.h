// rectrain/train/internal/job_figures.h (internal to train/): the job-wide figures of a run —
// every table's counters summed over the ranks, the job's rejected rows, and each rank's rows,
// ids, bytes and step breakdown — gathered in one collective round at a step every rank agrees
// on (a log line, an epoch end, a checkpoint, the end), for train.log, the observer and
// summary.json. For one process: this process's counters, no communication.
// Thread safety: the training thread only; in a job every rank calls it at the same step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

// This rank's own figures.
struct RankInputs {
  int64_t rows = 0;                 // training rows of this session
  int64_t rejected = 0;             // rejected rows it counts (earlier sessions and epochs too)
  PhaseSeconds breakdown;           // of this session
  int64_t allreduce_min_bytes = 0;  // StepRunner::allreduce_min_bytes()
};

struct JobFigures {
  std::vector<TableSummary> tables;  // summed over the ranks
  int64_t rejected = 0;              // summed over the ranks
  std::vector<RankFigures> ranks;    // a job: every rank's, in rank order; empty for one process
};

// Errors: the communicator's.
Result<JobFigures> GatherJobFigures(const ModelBundle& bundle, const Job& job, const RankInputs& mine);

// train.log's line per rank: "rank 1: 500.0k rows, 1.21M ids owned, 1.53GB sent (1.012x the
// minimum) | wait 0.5s lookup ..." (no ratio when no minimum is known: dist.mode async).
std::vector<std::string> RankLines(const std::vector<RankFigures>& ranks);

}  // namespace rectrain::train::internal
