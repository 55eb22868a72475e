// rectrain/train/internal/publish_gather.h (internal to train/): a publish of a job of several
// ranks (docs/scaling.md "Publishing from a job"). In a synchronous job each rank holds only the
// rows it owns (rank = hash(id) % world) while the dense parameters and the OOV rows are the same
// on every rank, so the job's snapshot is rank 0's with every other rank's rows and removed ids
// appended, table by table (serve/snapshot.h: each id lives on one rank, so the parts are
// disjoint).
//
// Thread safety: the training thread of every rank, all ranks together (collectives).
#pragma once

#include "rectrain/base/status.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/serve/snapshot.h"

namespace rectrain::train::internal {

// Every rank passes its own snapshot (the same tables, in the same order, taken at the same step
// with the same `complete`); on return rank 0's holds the job's rows, the others' are emptied of
// rows. A no-op for a single process. Errors: the communicator's (the job ends), or, on rank 0,
// InvalidArgument when the parts disagree in their tables (serve::CheckSnapshot).
[[nodiscard]] Status GatherSnapshot(dist::Communicator& comm, serve::ModelSnapshot* snapshot);

}  // namespace rectrain::train::internal
