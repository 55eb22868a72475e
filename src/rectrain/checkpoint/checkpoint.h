// rectrain/checkpoint/checkpoint.h: saving and restoring the complete training state (format:
// docs/formats/checkpoint.md). The dense file is dense_file.h's.
//
// A checkpoint is a directory:
//   meta.json          step, epoch, rows consumed in the epoch, early-stopping state, config hash
//   dense.bin          every dense parameter (by name) + the dense optimizer's state, checksummed
//   tables/<name>.bin  one per embedding table, written by EmbeddingTable::Save; a job of W > 1
//                      ranks writes tables/<name>.part-<r>-of-<W>.bin instead, each rank the
//                      rows it owns, all in parallel
// Rows are stored by id, so a checkpoint reloads into any number of ranks: every rank reads
// every part and keeps the ids it holds (`keep`: ps::OwnerRank in a job). In a job the run
// directory must be on a filesystem every rank sees (NFS, Lustre, ...); rank 0 writes meta.json
// and dense.bin (the dense parameters are identical everywhere).
// It is written into "<dir>.tmp" and renamed onto <dir> only when complete, so a crash never
// leaves a half-written checkpoint under its final name. The final model (RUN_DIR/model/) has
// the same layout.
//
// Incremental checkpoints: a delta checkpoint (meta.base set) is a directory beside the full
// one it rests on, with the same meta.json and dense.bin but, per table, only what changed since
// the checkpoint before it (EmbeddingTable::SaveChanges: tables/<name>.delta.bin, or
// tables/<name>.part-<r>-of-<W>.delta.bin). Its meta.json names that full checkpoint and the
// previous checkpoint of the chain (the full one or the previous delta) with a hash of their
// meta.json; reading a delta reads the full checkpoint and every delta of the chain in order.
//
// Thread safety: functions are reentrant; the model, optimizer and tables passed in must not be
// used concurrently (the trainer calls these between steps).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/optim/optimizer.h"

namespace rectrain::checkpoint {

inline constexpr int kCheckpointVersion = 1;       // what a full checkpoint's meta.json says
inline constexpr int kDeltaCheckpointVersion = 2;  // a delta's (version-1 readers refuse it)

struct CheckpointMeta {
  int64_t step = 0;                 // steps completed (the next step is `step`, 0-based)
  int64_t epoch = 0;                // epoch in progress, 0-based
  int64_t rows_in_epoch = 0;        // rows of that epoch already consumed (reader skip_rows)
  int64_t rows_read_total = 0;      // training rows consumed over all epochs
  int64_t rows_rejected_total = 0;
  double train_seconds = 0;         // training wall time over all sessions
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // early-stopping metric
  int64_t best_step = -1;
  int64_t evals_without_improvement = 0;
  int64_t last_eval_step = -1;
  uint64_t config_hash = 0;
  std::string model_type;
  std::vector<std::string> tables;  // table names, in model order
  // Written by a job of `world` ranks (1: one process). The files of each table, relative to the
  // checkpoint directory (one, or one per rank).
  int world = 1;
  std::vector<std::vector<std::string>> table_files;
  // dist.data_split of the job ("shards" or "batches"; "" for one process) and, for shards, each
  // rank's rows of the epoch already consumed (rows_in_epoch is their sum).
  std::string data_split;
  std::vector<int64_t> rank_rows_in_epoch;
  // Set while the epoch in progress is read under the pass plan of an earlier job (a resume on
  // another number of ranks; train/internal/epoch_resume.h): that plan's streams (1: the whole
  // pass; W: the shards of W ranks) and the rows each had consumed when the replay began. The
  // replay has consumed rows_in_epoch minus their sum. 0 / empty otherwise.
  int plan_world = 0;
  std::vector<int64_t> plan_rows;
  // An online run (data.stream): the stream position after the last trained row, every rank's
  // partitions (stream::StreamPosition JSON; "" = not a stream run). meta.json holds it as the
  // object "stream".
  std::string stream_position;
  // A delta checkpoint: the directory names (siblings of this one) of the full checkpoint it
  // rests on and of the checkpoint it follows (the full one for the first delta), and the
  // deltas in its chain up to this one (1 for the first). base empty: a full checkpoint. The
  // hashes (of those directories' meta.json bytes) are set by WriteCheckpoint and checked on
  // reading.
  std::string base;
  std::string previous;
  int64_t chain_length = 0;
  uint64_t base_hash = 0;
  uint64_t previous_hash = 0;
  bool delta() const { return !base.empty(); }
};

// Writes a checkpoint directory atomically (see top comment), replacing an existing `dir`.
// `optimizer` may be null, which writes an empty optimizer state. `comm` (null: one process)
// makes every rank of the job call it together: each writes its table parts, and the directory
// appears only once every rank has succeeded (the first failure is returned on every rank).
// With meta.delta() it writes a delta checkpoint (the tables must TrackChanges since the
// checkpoint meta.previous; both named directories must exist beside `dir`). Once the
// directory is in place every table's change record restarts (EmbeddingTable::MarkSaved).
[[nodiscard]] Status WriteCheckpoint(const std::string& dir, const CheckpointMeta& meta,
                                     std::span<const optim::ParamRef> params,
                                     optim::Optimizer* optimizer,
                                     std::span<embedding::EmbeddingTable* const> tables,
                                     dist::Communicator* comm = nullptr);

// Reads meta.json only. NotFound / DataLoss (unparsable) / InvalidArgument (newer version).
Result<CheckpointMeta> ReadCheckpointMeta(const std::string& dir);

// Restores params, the optimizer state (skipped when `optimizer` is null) and every table. A
// delta checkpoint is read with its chain: the full checkpoint, then every delta in order
// (a missing or rewritten link is FailedPrecondition naming it; see ResolveChain).
// The table names must match meta.tables (InvalidArgument otherwise). With `comm` of world > 1
// each rank loads, from every part (whatever number of ranks wrote them), the rows of the ids
// for which `keep(id)` is true: the ids it owns (ps::Owners::Of(id) == rank); `keep` is required
// then (InvalidArgument without it).
Result<CheckpointMeta> ReadCheckpoint(const std::string& dir,
                                      std::span<const optim::ParamRef> params,
                                      optim::Optimizer* optimizer,
                                      std::span<embedding::EmbeddingTable* const> tables,
                                      dist::Communicator* comm = nullptr,
                                      const std::function<bool(uint64_t id)>& keep = {});

// The checkpoints reading `dir` takes, oldest first: the full checkpoint, then each delta up to
// `dir` (just `dir` for a full one). Every link is checked: the directory exists, its meta.json
// hashes to what the next one recorded, it is of the same chain and an earlier step.
// FailedPrecondition names the broken link, what it should be and the newest checkpoint of the
// chain that is whole (resuming from it is removing the newer ones); DataLoss an unreadable
// meta.json. `dir` may be in an object store.
Result<std::vector<std::string>> ResolveChain(const std::string& dir);

// Complete checkpoints ("step-<N>" directories with a meta.json) under `checkpoints_dir`,
// sorted by N ascending. A missing directory is an empty list.
std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir);

// Removes all but the newest `keep` checkpoints and what they rest on (the full checkpoint and
// earlier deltas of a kept delta's chain), and leftover "*.tmp" directories.
[[nodiscard]] Status PruneCheckpoints(const std::string& checkpoints_dir, int64_t keep);

}  // namespace rectrain::checkpoint
