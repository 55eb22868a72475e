// rectrain/train/internal/epoch_resume.h (internal to train/): where a resumed run's first pass
// starts, and how the rest of an epoch is read when the checkpoint's job planned it for another
// number of ranks.
//
// A training pass is read under a plan of streams: one stream of the whole pass (one process, or
// dist.data_split batches, where every rank reads it and keeps its slice of each global batch:
// plan world 1), or one stream per rank (shards: rank r of W reads its units of the pass,
// data/pass_plan.h: plan world W). A stream's order depends only on (seed, epoch, r, W), and a
// checkpoint records how many rows of each stream were trained (CheckpointMeta::rows_in_epoch,
// rank_rows_in_epoch). Resumed under the same plan, every stream continues after its rows.
// Under another plan (shards on another number of ranks, or shards to one stream and back) the
// rows an old stream trained are no prefix of any new stream, so the rest of that epoch is
// replayed under the old plan: the old streams one after the other, each after the rows it had
// trained, cut into global batches that every rank reads and slices (as batches does). Every row
// of the epoch is trained exactly once (in other global batches than the old job would have
// formed); the cost is that each rank reads the whole rest of that epoch; the next epoch is
// planned for the new job. A checkpoint written during the replay records the old plan
// (CheckpointMeta::plan_world, plan_rows), so a resume from it continues the same replay on any
// number of ranks.
//
// Thread safety: used by the training thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/reader.h"
#include "rectrain/checkpoint/checkpoint.h"

namespace rectrain::train::internal {

struct EpochStart {
  // Not a replay: this rank's stream of the pass starts after `skip` rows.
  bool replay = false;
  int64_t skip = 0;
  // A replay: the old plan's streams and their rows trained before it, and the rows of the replay
  // trained since.
  int plan_world = 0;
  std::vector<int64_t> plan_rows;
  int64_t replay_rows = 0;
  std::string note;  // a train.log line on what this resume does ("" when it continues as planned)
};

// The start of the first pass of a run resumed from `meta` (a fresh run: meta's zeros) by a job
// whose plan has `world` streams (1: one stream of the whole pass; W: shards) and in which this
// process reads stream `rank`. DataLoss when meta's per-rank rows do not match its world.
Result<EpochStart> PlanEpochStart(const checkpoint::CheckpointMeta& meta, int world, int rank);

// Opens stream `rank` of a plan of `world` streams of the training split (read in global
// batches), starting after `skip` rows of pass `epoch`.
struct OpenedStream {
  std::unique_ptr<data::EpochSource> source;  // must outlive `reader`
  std::unique_ptr<data::BatchReader> reader;
};
using StreamOpener = std::function<Result<OpenedStream>(int rank, int world, int64_t epoch, int64_t skip)>;

// The rest of epoch `epoch` under the old plan of `start` (a replay): the old streams one after
// another, each after its plan_rows, skipping the first start.replay_rows rows of the whole.
// Batches end where a stream ends (the last batch of each may be short). Stats() add up every
// stream read so far.
Result<std::unique_ptr<data::BatchReader>> OpenReplay(const EpochStart& start, int64_t epoch, StreamOpener open);

}  // namespace rectrain::train::internal
