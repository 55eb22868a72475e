// rectrain/ps/async_ps.h: the asynchronous parameter server (dist.mode: async; docs/scaling.md).
//
// Roles. The last K ranks of the job are servers, the others workers. Server s holds the
// embedding rows of the ids with Owners{first_server, K}.Of(id) == its rank, and the s-th of K
// contiguous chunks of the dense parameters (Params() flattened) with the dense optimizer's state
// for it. Workers hold no rows and run no optimizer: they only compute.
//
// A worker's step (AsyncWorkerStore, an EmbeddingStore):
//   Lookup   PULL to every server: the batch's unique ids it owns, per table, and the worker's
//            clock (steps it has pushed). Each server answers with the rows and its dense chunk;
//            the worker copies the chunks into its dense parameters, so every step computes with
//            the servers' latest values.
//   forward/backward on the worker.
//   Push     PUSH to every server: the row gradients and the worker's dense gradient chunk. The
//            worker does not wait: the servers apply it while the worker reads and pulls its next
//            batch (communication overlaps compute).
// A server (RunServer) applies every PUSH as it arrives (PushRows + its own OOV row; the dense
// optimizer on its chunk, scheduled by the pushing worker's clock), answers PULLs, and ends when
// every worker has sent DONE.
//
// Bounded staleness (stale synchronous parallel): a PULL from a worker at clock c is answered
// only when c − min(every worker's clock) ≤ staleness; otherwise the server holds it until the
// slowest worker pushes. staleness 0 makes every worker's step t see every worker's step t − 1.
//
// Messages (the communicator's asynchronous channel) are little-endian: u32 type, then per type
//   PULL  u32 mode (0 train, 1 eval), i64 clock, per table: u32 n, u64 ids[n]
//   ROWS  per table: u32 n, f32 rows[n × dim]; u64 m, f32 dense[m]
//   PUSH  i64 clock, f32 lr_dense, f32 lr_sparse, per table: u32 n, u64 ids[n], f32 grads[n × dim];
//         u64 m, f32 dense_grads[m]
//   DONE  (a worker has finished)
// A malformed message is an Internal error naming the sender (the ranks disagree about the
// protocol: one binary and one config everywhere).
//
// Thread safety: one thread per store or server loop.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/ps/embedding_store.h"

namespace rectrain::ps {

// Element range [begin, end) of the flattened dense parameters that server s of k holds.
struct DenseRange {
  int64_t begin = 0;
  int64_t end = 0;
};
DenseRange DenseChunk(int64_t total, int server, int servers);

// The parameters of `params` that fall in `range`, as slices (names, decay flags kept).
std::vector<optim::ParamRef> SliceParams(std::span<const optim::ParamRef> params, DenseRange range);

// The worker's store. `servers`: the owner ranks; `params`: the worker's dense parameters (their
// values are overwritten by every Lookup). Push sends the gradients and returns at once, with the
// step's sparse learning rate and the dense one of set_dense_lr() for the servers to apply.
class AsyncWorkerStore : public EmbeddingStore {
 public:
  virtual void set_dense_lr(float lr) = 0;
  // Tells every server this worker is done (after its last Push) and flushes its messages.
  [[nodiscard]] virtual Status Finish() = 0;
};
std::unique_ptr<AsyncWorkerStore> MakeAsyncWorkerStore(const nn::ModelSpec& spec, std::vector<int> table_dims,
                                                       std::vector<optim::ParamRef> params, Owners servers,
                                                       dist::Communicator* comm);

struct ServerOptions {
  std::vector<embedding::EmbeddingTable*> tables;  // this server's rows
  std::vector<optim::ParamRef> dense;              // this server's chunk (SliceParams)
  optim::Optimizer* optimizer = nullptr;           // Init()ed on `dense`
  int workers = 1;                                 // ranks 0 .. workers-1
  int64_t staleness = 4;                           // dist.staleness
  ComputeContext compute;
};

struct ServerStats {
  int64_t pulls = 0;
  int64_t pushes = 0;
  int64_t held_pulls = 0;      // PULLs held back by the staleness bound
  double busy_seconds = 0;     // serving and applying (not waiting for messages)
  double wait_seconds = 0;
};

// Serves until every worker sent DONE. Errors: the communicator's (a silent worker is named by
// the timeout), the tables' (ResourceExhausted), a malformed message.
Status RunServer(const ServerOptions& options, dist::Communicator& comm, ServerStats* stats);

}  // namespace rectrain::ps
