// rectrain/ps/embedding_store.h: the embedding rows one training step works on, over all the
// model's tables at once: the seam between the trainer and the parameter server. A step is
//   Lookup(batch)  per table: dedupe the ids of every field that reads it, fetch the unique rows,
//                  describe each field's occurrences as indices into them (nn::FieldIndices)
//   (model forward/backward on pulled() / fields(), writing grads())
//   Push(step)     apply the gradients (summed over occurrences) with each table's sparse optimizer
//
// Two stores:
//   Local    the tables live in this process (EmbeddingTable, sharded over threads); tables are
//            processed in parallel on the compute pool. The single-process trainer's store, and
//            (read-only, over TableReaders) a serving model's.
//   Sharded  the rows of id x live on rank OwnerRank(x, world) of a job. One step makes one bulk
//            exchange for all tables each way: unique ids to their owners (AllToAllV), rows back,
//            and on Push the gradients to the owners, who sum the contributions of every rank for
//            an id (in rank order) and apply the optimizer once, exactly as a single process
//            would for the id's occurrences in the global batch. The OOV row is replicated on
//            every rank: its gradient is the AllReduce of the owners' parts and every rank
//            applies the same update. Every rank calls Lookup/Push the same number of times
//            (a rank without rows passes an empty batch).
//
// Example (one step):
//   RECTRAIN_RETURN_IF_ERROR(store.Lookup(batch, PullMode::kTrain, compute));
//   model.Forward({..., .tables = store.pulled(), .fields = store.fields()}, ...);
//   model.Backward(dlogits, store.grads(), compute);
//   RECTRAIN_RETURN_IF_ERROR(store.Push({.step = s, .learning_rate = lr}, compute));
//
// Thread safety: one store per trainer/evaluator, used by one thread; it uses the compute pool
// inside. The tables passed in must outlive it and not be used by anyone else meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/data/batch.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model.h"

namespace rectrain::ps {

// The rank that holds id's rows among `world` ranks: uniform over ranks, and independent of the
// table's own shard choice (another hash), so every rank's table still uses all its shards.
int OwnerRank(uint64_t id, int world);

// The ranks that hold rows: [first, first + count). Every rank of a sync job by default; the
// server ranks of an asynchronous one (ps/async_ps.h).
struct Owners {
  int first = 0;
  int count = 1;
  int Of(uint64_t id) const { return first + OwnerRank(id, count); }
  bool Holds(int rank) const { return rank >= first && rank < first + count; }
};

// Row width of each table (the stores' layout).
std::vector<int> TableDims(const std::vector<embedding::EmbeddingTable*>& tables);

// Cumulative figures of a store (this rank's side).
struct StoreStats {
  int64_t lookups = 0;          // Lookup calls
  int64_t ids_requested = 0;    // unique ids this rank asked for (summed over steps and tables)
  int64_t ids_served = 0;       // unique ids this rank served as an owner
  int64_t bytes_sent = 0;       // exchange bytes this rank sent to other ranks
  int64_t bytes_received = 0;
  // The least any exchange could send for the same steps: 8 bytes per unique id asked of another
  // rank, and the rows (4 × dim bytes) served to other ranks and the gradients sent to them.
  int64_t min_bytes_sent = 0;
  double dedupe_seconds = 0;    // local dedupe and index building
  double exchange_seconds = 0;  // waiting in the id/row/gradient/OOV exchanges
  double pull_seconds = 0;      // table Pulls (as owner)
  double push_seconds = 0;      // table updates (as owner)
};

class EmbeddingStore {
 public:
  virtual ~EmbeddingStore() = default;

  // Dedupes and fetches for `batch`, which must outlive the next Forward/Backward (multi-valued
  // fields reference its offsets). A batch of 0 rows may have no sparse columns.
  // Errors: InvalidArgument when the batch's sparse columns do not match the model; the tables'
  // Pull errors (ResourceExhausted under a budget); the communicator's (a silent peer).
  [[nodiscard]] virtual Status Lookup(const data::Batch& batch, embedding::PullMode mode,
                                      const ComputeContext& compute) = 0;

  // Valid after Lookup(): inputs for Model::Forward, and the gradient buffers for Backward
  // (num_unique × dim per table).
  virtual std::span<const nn::PulledTable> pulled() const = 0;
  virtual std::span<const nn::FieldIndices> fields() const = 0;
  virtual std::span<const std::span<float>> grads() const = 0;

  // Applies grads() (after Backward) to the rows of the last kTrain Lookup.
  [[nodiscard]] virtual Status Push(const optim::StepContext& step, const ComputeContext& compute) = 0;

  // Unique ids of the last Lookup over all tables (this rank's batch).
  virtual int64_t num_unique() const = 0;
  virtual const StoreStats& stats() const = 0;
};

// `spec` gives the field -> table mapping; `tables` are the model's tables (same order).
std::unique_ptr<EmbeddingStore> MakeLocalStore(const nn::ModelSpec& spec,
                                               std::vector<embedding::EmbeddingTable*> tables);
// The local store over read-only tables (a serving model's): Lookup in kEval only; kTrain and
// Push are FailedPrecondition.
std::unique_ptr<EmbeddingStore> MakeReadOnlyStore(const nn::ModelSpec& spec,
                                                  std::vector<embedding::TableReader*> tables);
// `tables` hold this rank's rows (owners.Of(id) == comm->rank(); by default every rank of the
// job owns rows); `comm` must outlive the store. A world of 1 behaves like the local store.
std::unique_ptr<EmbeddingStore> MakeShardedStore(const nn::ModelSpec& spec,
                                                 std::vector<embedding::EmbeddingTable*> tables,
                                                 dist::Communicator* comm, Owners owners = {0, 0});

}  // namespace rectrain::ps
