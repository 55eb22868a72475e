// rectrain/embedding/embedding_table.h: the parameter-server interface for sparse features.
//
// An EmbeddingTable maps 64-bit feature ids to rows of `dim` floats. It grows as new ids arrive
// (no fixed vocabulary), admits an id to its own row only after `min_count` sightings (before
// that the id reads and trains the table's shared OOV row), keeps each row's sparse-optimizer
// state beside its weights, accounts its memory, and within a configured budget either evicts
// least-recently-used rows or fails with ResourceExhausted — it never lets the machine swap.
//
// Rows are sharded by hash(id) % num_shards. Pull/Push partition their ids by shard and process
// shards in parallel with no locks held across shards. Checkpoints store rows by id, so they
// reload into any shard count (and, later, any number of MPI ranks: rank = hash(id) % world).
//
// Step protocol (what the Trainer does every step):
//   1. dedupe the batch's ids per table            -> unique ids U
//   2. Pull(U, kTrain, rows[|U| × dim])            -> copies; creates/admits ids as needed
//   3. model forward/backward on the copies        -> grads[|U| × dim] (summed over occurrences)
//   4. Push(U, grads, step)                        -> sparse optimizer update in place
// Evaluation uses Pull(..., kEval): unknown ids read the OOV row and nothing is created.
//
// Two interfaces: TableReader is what scoring needs (Read: rows by id, read-only), which a
// serving model's memory-mapped table also implements; EmbeddingTable adds what training needs
// (Pull in kTrain, Push, checkpoints).
//
// Thread safety: Pull and Push may not run concurrently with each other or with Save/Load on
// the same table (the Trainer serialises steps); each call parallelises internally over shards.
// Stats() may be called from any thread at any time (counters are atomics).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/parallel.h"
#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/optim/sparse_optimizer.h"

namespace rectrain::embedding {

enum class InitializerType : uint8_t { kNormal, kUniform, kZeros, kTruncatedNormal };
inline constexpr NamedEnum<InitializerType>::Entry kInitializerTypeEntries[] = {
    {InitializerType::kNormal, "normal"},
    {InitializerType::kUniform, "uniform"},
    {InitializerType::kZeros, "zeros"},
    {InitializerType::kTruncatedNormal, "truncated_normal"}};
inline constexpr NamedEnum<InitializerType> kInitializerTypes(kInitializerTypeEntries);  // embedding.initializer.type

// What a table does when a new row would pass embedding.memory_budget.
enum class OnBudget : uint8_t { kEvict, kError };  // evict the least recently used rows | fail
inline constexpr NamedEnum<OnBudget>::Entry kOnBudgetEntries[] = {{OnBudget::kEvict, "evict"}, {OnBudget::kError, "error"}};
inline constexpr NamedEnum<OnBudget> kOnBudgets(kOnBudgetEntries);  // embedding.on_budget

struct InitializerConfig {
  InitializerType type = InitializerType::kNormal;
  float stddev = 0.01f;         // normal, truncated_normal
  float scale = 0.01f;          // uniform: U(-scale, scale)
};

struct EmbeddingTableConfig {
  std::string name = "emb";
  int dim = 16;                       // >= 1
  optim::SparseOptimizerConfig optimizer;
  InitializerConfig initializer;
  int64_t min_count = 1;              // admission: sightings before an id gets its own row
  int64_t memory_budget_bytes = 0;    // 0 = unlimited
  OnBudget on_budget = OnBudget::kEvict;
  int num_shards = 64;                // power of two
  uint64_t seed = 42;                 // row i's init depends only on (seed, id): reproducible
  int64_t expected_rows = 0;          // capacity hint (avoids rehash cost)
  // Time-to-live, in kTrain Pulls (training steps): a row or pending id not pulled in kTrain for
  // more than ttl_steps Pulls is removed (it reads the OOV row again, and starts over when seen
  // again). 0 = never. The clock is the data's step count, never wall time, so a run and its
  // resume expire the same ids at the same step; see docs/embedding.md "Expiry".
  int64_t ttl_steps = 0;
};

enum class PullMode : uint8_t {
  kTrain,  // count sightings, admit/create rows, touch LRU
  kEval,   // read-only: unknown or non-admitted ids read the OOV row
};

// The consumers of a table's change record (EmbeddingTable::TrackChanges), each with its own mark.
enum class ChangeLog : uint8_t { kCheckpoint, kPublish };
inline constexpr int kChangeLogs = 2;

struct TableStats {
  int64_t rows = 0;             // admitted rows resident (OOV row excluded)
  int64_t bytes = 0;            // memory accounted to this table (rows + index + counters)
  int64_t admissions = 0;       // ids that got their own row
  int64_t evictions = 0;        // rows evicted for the budget
  int64_t lookups = 0;          // ids pulled
  int64_t oov_lookups = 0;      // ids that read the OOV row
  int64_t pending_ids = 0;      // ids seen but not yet admitted (counting toward min_count)
  int64_t pending_resets = 0;   // times a shard dropped its pending counts to stay in budget
  int64_t expirations = 0;      // rows removed by ttl_steps
  int64_t pending_expirations = 0;  // pending ids removed by ttl_steps (their counts forgotten)
};

// How Load() reads a checkpoint file (a whole table, or one part of a table sharded over ranks).
struct LoadOptions {
  // Rows and pending ids to load; empty loads every id (a rank keeps the ids it owns).
  std::function<bool(uint64_t id)> keep;
  // false: the file replaces the table's contents (rows, pending ids, OOV row, LRU clock).
  // true: its rows are added to the table's (loading the parts of a table one after another);
  // the OOV row stays as loaded by the first, non-merging call and the clock takes the maximum.
  bool merge = false;
  // Take the file's cumulative counters (admissions, evictions, lookups); merging adds them.
  bool counters = true;
};

// What scoring needs of a table: rows by id, read-only. A serving model's memory-mapped table
// (serve/mapped_table.h) is one; every EmbeddingTable is one (Read = Pull(kEval)).
// Thread safety: as the implementation says (EmbeddingTable: not concurrently with its writers).
class TableReader {
 public:
  virtual ~TableReader() = default;
  virtual const EmbeddingTableConfig& config() const = 0;
  int dim() const { return config().dim; }

  // Copies the rows of `ids` into `out` (ids.size() × dim, row-major); an id without a row (or
  // not yet admitted) reads the OOV row. Creates, counts and touches nothing but lookup stats.
  // Errors: InvalidArgument on a size mismatch.
  [[nodiscard]] virtual Status Read(std::span<const uint64_t> ids, std::span<float> out,
                                    const ComputeContext& compute) = 0;

  virtual TableStats Stats() const = 0;
};

// What training needs: the table that grows, trains, checkpoints and restores (see the top
// comment for the step protocol).
class EmbeddingTable : public TableReader {
 public:
  Status Read(std::span<const uint64_t> ids, std::span<float> out, const ComputeContext& compute) final {
    return Pull(ids, PullMode::kEval, out, compute);
  }

  // Copies the rows of `ids` into `out` (ids.size() × dim, row-major). `ids` should be unique
  // for kTrain (duplicates are allowed but count as separate sightings).
  // Errors: InvalidArgument on a size mismatch; ResourceExhausted when the budget is full and
  // on_budget == "error" (message names the table, the budget and the config key to raise).
  [[nodiscard]] virtual Status Pull(std::span<const uint64_t> ids, PullMode mode,
                                    std::span<float> out, const ComputeContext& compute) = 0;

  // Applies grads (ids.size() × dim) with the table's sparse optimizer. `ids` must be unique and
  // must have been pulled with kTrain since the last Push (ids not admitted update the OOV row).
  // PushRows() followed, when it returns true, by ApplyOovGradient() of the summed OOV gradient.
  [[nodiscard]] Status Push(std::span<const uint64_t> ids, std::span<const float> grads,
                            const optim::StepContext& step, const ComputeContext& compute);

  // Push in two halves, for a table sharded over ranks whose OOV row is replicated on every
  // rank: PushRows updates the rows of admitted ids and adds the gradients of the ids that read
  // the OOV row to `oov_grad` (dim floats, not cleared); it returns whether there was one. The
  // caller sums those over the ranks and calls ApplyOovGradient (one optimizer update of the OOV
  // row) on every rank. Errors: InvalidArgument on a size mismatch.
  [[nodiscard]] virtual Result<bool> PushRows(std::span<const uint64_t> ids, std::span<const float> grads,
                                              const optim::StepContext& step, const ComputeContext& compute,
                                              std::span<float> oov_grad) = 0;
  [[nodiscard]] virtual Status ApplyOovGradient(std::span<const float> grad, const optim::StepContext& step) = 0;

  // The weights (no optimizer state) of every admitted row, in no particular order: fn(id,
  // update count, weights[dim]); then OovWeights(), the row unknown ids read. For exporting a
  // serving model; must not run concurrently with Pull/Push/Load.
  using RowVisitor = std::function<void(uint64_t id, uint32_t updates, std::span<const float> weights)>;
  [[nodiscard]] virtual Status ForEachRow(const RowVisitor& fn) const = 0;
  virtual std::span<const float> OovWeights() const = 0;

  // The ids whose rows were removed (evicted for the budget or expired by ttl_steps) since the
  // previous call, ascending; what an incremental checkpoint or a serving delta carries as
  // removed ids. Only recorded while TrackRemovedIds(true); the list is not saved in checkpoints
  // (take it at every checkpoint). An id removed, seen again and removed again appears once.
  // Memory: 8 bytes per removal between two calls, not counted in Stats().bytes or the budget.
  virtual void TrackRemovedIds(bool on) = 0;
  virtual std::vector<uint64_t> TakeRemovedIds() = 0;

  // Change logs: which rows changed since a consumer's mark. Incremental checkpoints
  // (kCheckpoint; format: docs/formats/checkpoint-embedding-delta.md) and serving deltas
  // (kPublish; docs/online.md "Publishing to serving") each keep their own, with their own mark,
  // so a checkpoint never clears what the next publish needs, nor the reverse. While
  // TrackChanges(log, true) the table records which rows changed (pulled in kTrain, pushed or
  // admitted: their value, optimizer state or last-access tick moved) and which ids lost their
  // row since MarkSaved(log) (or Load/LoadChanges, which restart every log): the row's
  // last-access tick is the change sequence all logs share, so a log costs one compare per pulled
  // row and 8 bytes per changed or removed id, and nothing when no log is tracked.
  //
  // SaveChanges (kCheckpoint) writes those rows, the removed ids, the pending ids, the OOV row,
  // the clock and the counters: loading a full checkpoint and then, in order, the deltas saved
  // after it gives the table the same contents as loading a full checkpoint of the later state
  // (every row, tick and counter). ForEachChangedRow (any log) visits the changed rows that exist
  // now, by ascending id (fn as ForEachRow's), and appends to *removed the ids removed since the
  // mark that have no row now, ascending. Neither resets the record: the caller calls
  // MarkSaved(log) once what it wrote is safe (a checkpoint that landed; a publish snapshot
  // taken), so a failed write can be repeated with the same changes. Save() + MarkSaved(kCheckpoint)
  // starts a new checkpoint chain.
  // SaveChanges/ForEachChangedRow errors: FailedPrecondition when the log is not tracked;
  // SaveChanges: I/O errors as Save. Not concurrently with Pull/Push/Load.
  // LoadChanges applies one delta file (or one rank's part of it: `options` as for Load; the
  // first part of a delta with merge false, the others with merge true) onto the contents of
  // the checkpoint it was saved after; the whole file is validated first (errors as Load).
  virtual void TrackChanges(ChangeLog log, bool on) = 0;
  virtual void MarkSaved(ChangeLog log) = 0;
  [[nodiscard]] virtual Status SaveChanges(const std::string& path) const = 0;
  [[nodiscard]] virtual Status ForEachChangedRow(ChangeLog log, const RowVisitor& fn,
                                                 std::vector<uint64_t>* removed) const = 0;
  [[nodiscard]] virtual Status LoadChanges(const std::string& path, const LoadOptions& options) = 0;

  // Writes every row (id, weights, optimizer state, counters) to `path` (format:
  // docs/formats/checkpoint-embedding.md), atomically (temp file + rename) with a checksum.
  [[nodiscard]] virtual Status Save(const std::string& path) const = 0;
  // Reads the rows in `path` as `options` say, whatever shard count (or rank) wrote them. The whole
  // file is validated first, so a corrupt one leaves the table unchanged.
  // Errors: NotFound, DataLoss (checksum, truncation), InvalidArgument (dim/optimizer mismatch).
  [[nodiscard]] virtual Status Load(const std::string& path, const LoadOptions& options) = 0;
  // Replaces the table's contents with the rows in `path`.
  [[nodiscard]] Status Load(const std::string& path) { return Load(path, LoadOptions{}); }
};

// Creates the in-process sharded hash table. InvalidArgument names the bad config key.
Result<std::unique_ptr<EmbeddingTable>> MakeEmbeddingTable(const EmbeddingTableConfig& config);

}  // namespace rectrain::embedding
