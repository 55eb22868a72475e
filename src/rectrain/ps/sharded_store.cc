// The sharded store (embedding_store.h). Message layout of one Lookup, per destination rank d:
//   ids to d       uint64: T counts (ids per table), then the ids of table 0, table 1, ...
//   rows from d    float:  the rows of those ids, in the same order (dim_t floats each)
// and of one Push, per owner: the gradients in the rows' layout. Owners dedupe the ids they are
// asked for across all ranks (so an id pulled by several ranks counts as one sighting, as in a
// single process) and sum the gradients per id in rank order before one optimizer update.
#include <algorithm>
#include <memory>
#include <string>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/ps/embedding_store.h"
#include "rectrain/ps/internal/batch_ids.h"

namespace rectrain::ps {

int OwnerRank(uint64_t id, int world) {
  if (world <= 1) return 0;
  // "owner" salt: another hash than the table's shard choice (Mix64(id)'s top bits).
  const uint64_t h = Mix64(id ^ 0x6f776e6572ULL) >> 32;
  return static_cast<int>((h * static_cast<uint64_t>(world)) >> 32);
}

namespace {

class ShardedStore final : public EmbeddingStore {
 public:
  ShardedStore(const nn::ModelSpec& spec, std::vector<embedding::EmbeddingTable*> tables, dist::Communicator* comm,
               Owners owners)
      : ids_(spec, TableDims(tables)),
        tables_(std::move(tables)),
        comm_(comm),
        world_(comm->world()),
        rank_(comm->rank()),
        owners_(owners) {
    const int nt = ids_.num_tables();
    owner_.resize(static_cast<size_t>(nt));
    slot_.resize(static_cast<size_t>(nt));
    served_.resize(static_cast<size_t>(nt));
    req_index_.resize(static_cast<size_t>(nt));
    served_rows_.resize(static_cast<size_t>(nt));
    summed_.resize(static_cast<size_t>(nt));
    for (int t = 0; t < nt; ++t) oov_floats_ += ids_.dim(t);
  }

  Status Lookup(const data::Batch& batch, embedding::PullMode mode, const ComputeContext& compute) override {
    const int nt = ids_.num_tables();
    const size_t cells = static_cast<size_t>(world_ * nt);
    Stopwatch sw;
    RECTRAIN_RETURN_IF_ERROR(ids_.Dedupe(batch, compute, [](int) { return OkStatus(); }));
    // Route every unique id to its owner: counts, block offsets, then the send buffer.
    count_.assign(cells, 0);
    for (int t = 0; t < nt; ++t) {
      const std::vector<uint64_t>& u = ids_.unique(t);
      std::vector<int32_t>& own = owner_[static_cast<size_t>(t)];
      own.resize(u.size());
      for (size_t k = 0; k < u.size(); ++k) {
        own[k] = owners_.Of(u[k]);
        ++count_[static_cast<size_t>(own[k] * nt + t)];
      }
    }
    send_counts_.assign(static_cast<size_t>(world_), 0);
    reply_counts_.assign(static_cast<size_t>(world_), 0);
    block_.resize(cells);
    row_off_.resize(cells);
    int64_t id_base = 0, row_base = 0;
    for (int d = 0; d < world_; ++d) {
      int64_t at = id_base + nt, row_at = row_base;
      for (int t = 0; t < nt; ++t) {
        const size_t c = static_cast<size_t>(d * nt + t);
        block_[c] = at;
        row_off_[c] = row_at;
        at += count_[c];
        row_at += count_[c] * ids_.dim(t);
      }
      send_counts_[static_cast<size_t>(d)] = at - id_base;
      reply_counts_[static_cast<size_t>(d)] = row_at - row_base;
      id_base = at;
      row_base = row_at;
    }
    send_.resize(static_cast<size_t>(id_base));
    cursor_.assign(block_.begin(), block_.end());
    for (int d = 0; d < world_; ++d) {
      for (int t = 0; t < nt; ++t) {
        send_[static_cast<size_t>(block_[static_cast<size_t>(d * nt)] - nt + t)] = static_cast<uint64_t>(count_[static_cast<size_t>(d * nt + t)]);
      }
    }
    for (int t = 0; t < nt; ++t) {
      const std::vector<uint64_t>& u = ids_.unique(t);
      const std::vector<int32_t>& own = owner_[static_cast<size_t>(t)];
      std::vector<int32_t>& slot = slot_[static_cast<size_t>(t)];
      slot.resize(u.size());
      for (size_t k = 0; k < u.size(); ++k) {
        const size_t c = static_cast<size_t>(own[k] * nt + t);
        const int64_t pos = cursor_[c]++;
        send_[static_cast<size_t>(pos)] = u[k];
        slot[k] = static_cast<int32_t>(pos - block_[c]);
      }
    }
    stats_.dedupe_seconds += sw.Seconds();

    RECTRAIN_RETURN_IF_ERROR(Exchange([&] {
      return comm_->AllToAllV(std::span<const uint64_t>(send_), send_counts_, &recv_, &recv_counts_);
    }));

    // Owner side: parse the requests, dedupe them per table across ranks, pull once.
    sw.Reset();
    req_count_.assign(cells, 0);
    req_begin_.assign(cells, 0);
    serve_counts_.assign(static_cast<size_t>(world_), 0);
    int64_t base = 0;
    for (int src = 0; src < world_; ++src) {
      const int64_t n = recv_counts_[static_cast<size_t>(src)];
      if (n < nt) return InternalError("rank " + std::to_string(src) + " sent a malformed id request");
      int64_t at = base + nt;
      for (int t = 0; t < nt; ++t) {
        const size_t c = static_cast<size_t>(src * nt + t);
        req_count_[c] = static_cast<int64_t>(recv_[static_cast<size_t>(base + t)]);
        req_begin_[c] = at;
        at += req_count_[c];
        serve_counts_[static_cast<size_t>(src)] += req_count_[c] * ids_.dim(t);
      }
      if (at != base + n) return InternalError("rank " + std::to_string(src) + " sent an id request of the wrong size");
      base += n;
    }
    const bool across = ids_.AcrossTables(compute);
    const ComputeContext inner = across ? ComputeContext{.num_threads = 1} : compute;
    auto serve_table = [&](int64_t t64) -> Status {
      const int t = static_cast<int>(t64);
      int64_t total = 0;
      for (int src = 0; src < world_; ++src) total += req_count_[static_cast<size_t>(src * nt + t)];
      internal::IdDeduper& dd = served_[static_cast<size_t>(t)];
      dd.Reset(total);
      std::vector<int32_t>& index = req_index_[static_cast<size_t>(t)];
      index.resize(static_cast<size_t>(total));
      int64_t k = 0;
      for (int src = 0; src < world_; ++src) {
        const size_t c = static_cast<size_t>(src * nt + t);
        for (int64_t i = 0; i < req_count_[c]; ++i) index[static_cast<size_t>(k++)] = dd.Insert(recv_[static_cast<size_t>(req_begin_[c] + i)]);
      }
      std::vector<float>& rows = served_rows_[static_cast<size_t>(t)];
      rows.resize(dd.unique().size() * static_cast<size_t>(ids_.dim(t)));
      // Called even without ids, so every rank's table clock advances once per step.
      return tables_[static_cast<size_t>(t)]->Pull(dd.unique(), mode, rows, inner);
    };
    RECTRAIN_RETURN_IF_ERROR(ForTables(compute, across, serve_table));
    int64_t served = 0;
    for (int t = 0; t < nt; ++t) served += static_cast<int64_t>(served_[static_cast<size_t>(t)].unique().size());
    // The rows each rank asked for, in its request order.
    int64_t serve_total = 0;
    for (int64_t c : serve_counts_) serve_total += c;
    serve_.resize(static_cast<size_t>(serve_total));
    float* out = serve_.data();
    for (int src = 0; src < world_; ++src) {
      for (int t = 0; t < nt; ++t) {
        const size_t c = static_cast<size_t>(src * nt + t);
        const int dim = ids_.dim(t);
        const int32_t* index = req_index_[static_cast<size_t>(t)].data() + Before(src, t);
        const float* rows = served_rows_[static_cast<size_t>(t)].data();
        for (int64_t i = 0; i < req_count_[c]; ++i) {
          std::copy_n(rows + static_cast<int64_t>(index[i]) * dim, dim, out);
          out += dim;
        }
      }
    }
    stats_.pull_seconds += sw.Seconds();

    RECTRAIN_RETURN_IF_ERROR(Exchange([&] {
      return comm_->AllToAllVKnown(std::span<const float>(serve_), serve_counts_, reply_counts_, &reply_);
    }));

    // Scatter the replies into the model's per-table rows.
    sw.Reset();
    for (int t = 0; t < nt; ++t) {
      const int dim = ids_.dim(t);
      std::span<float> rows = ids_.rows(t);
      const std::vector<int32_t>& own = owner_[static_cast<size_t>(t)];
      const std::vector<int32_t>& slot = slot_[static_cast<size_t>(t)];
      for (size_t k = 0; k < own.size(); ++k) {
        const float* src = reply_.data() + row_off_[static_cast<size_t>(own[k] * nt + t)] + static_cast<int64_t>(slot[k]) * dim;
        std::copy_n(src, dim, rows.data() + static_cast<int64_t>(k) * dim);
      }
    }
    ++stats_.lookups;
    stats_.ids_requested += ids_.num_unique();
    stats_.ids_served += served;
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      stats_.min_bytes_sent += 8 * (send_counts_[static_cast<size_t>(p)] - nt) + 4 * serve_counts_[static_cast<size_t>(p)];
    }
    stats_.dedupe_seconds += sw.Seconds();
    return OkStatus();
  }

  std::span<const nn::PulledTable> pulled() const override { return ids_.pulled(); }
  std::span<const nn::FieldIndices> fields() const override { return ids_.fields(); }
  std::span<const std::span<float>> grads() const override { return ids_.grads(); }

  Status Push(const optim::StepContext& step, const ComputeContext& compute) override {
    const int nt = ids_.num_tables();
    Stopwatch sw;
    // Gradients to the owners, in the layout of the rows they sent.
    int64_t total = 0;
    for (int64_t c : reply_counts_) total += c;
    grad_send_.resize(static_cast<size_t>(total));
    for (int t = 0; t < nt; ++t) {
      const int dim = ids_.dim(t);
      std::span<const float> g = ids_.grads_of(t);
      const std::vector<int32_t>& own = owner_[static_cast<size_t>(t)];
      const std::vector<int32_t>& slot = slot_[static_cast<size_t>(t)];
      for (size_t k = 0; k < own.size(); ++k) {
        float* dst = grad_send_.data() + row_off_[static_cast<size_t>(own[k] * nt + t)] + static_cast<int64_t>(slot[k]) * dim;
        std::copy_n(g.data() + static_cast<int64_t>(k) * dim, dim, dst);
      }
    }
    stats_.dedupe_seconds += sw.Seconds();
    for (int p = 0; p < world_; ++p) {
      if (p != rank_) stats_.min_bytes_sent += 4 * reply_counts_[static_cast<size_t>(p)];
    }
    RECTRAIN_RETURN_IF_ERROR(Exchange([&] {
      return comm_->AllToAllVKnown(std::span<const float>(grad_send_), reply_counts_, serve_counts_, &grad_recv_);
    }));

    // Owner side: sum per id over the ranks (in rank order), then one update per id.
    sw.Reset();
    oov_.assign(static_cast<size_t>(nt + oov_floats_), 0.0f);
    std::vector<int64_t> oov_at(static_cast<size_t>(nt));
    for (int t = 0, at = nt; t < nt; at += ids_.dim(t), ++t) oov_at[static_cast<size_t>(t)] = at;
    const bool across = ids_.AcrossTables(compute);
    const ComputeContext inner = across ? ComputeContext{.num_threads = 1} : compute;
    auto push_table = [&](int64_t t64) -> Status {
      const int t = static_cast<int>(t64);
      const int dim = ids_.dim(t);
      const std::vector<uint64_t>& unique = served_[static_cast<size_t>(t)].unique();
      std::vector<float>& sum = summed_[static_cast<size_t>(t)];
      sum.assign(unique.size() * static_cast<size_t>(dim), 0.0f);
      const int32_t* index = req_index_[static_cast<size_t>(t)].data();
      int64_t k = 0;
      int64_t src_base = 0;
      for (int src = 0; src < world_; ++src) {
        int64_t at = src_base;
        for (int tt = 0; tt < t; ++tt) at += req_count_[static_cast<size_t>(src * nt + tt)] * ids_.dim(tt);
        const size_t c = static_cast<size_t>(src * nt + t);
        for (int64_t i = 0; i < req_count_[c]; ++i, ++k) {
          const float* g = grad_recv_.data() + at + i * dim;
          float* dst = sum.data() + static_cast<int64_t>(index[k]) * dim;
          for (int d = 0; d < dim; ++d) dst[d] += g[d];
        }
        src_base += serve_counts_[static_cast<size_t>(src)];
      }
      std::span<float> oov(oov_.data() + oov_at[static_cast<size_t>(t)], static_cast<size_t>(dim));
      RECTRAIN_ASSIGN_OR_RETURN(const bool touched, tables_[static_cast<size_t>(t)]->PushRows(unique, sum, step, inner, oov));
      oov_[static_cast<size_t>(t)] = touched ? 1.0f : 0.0f;
      return OkStatus();
    };
    RECTRAIN_RETURN_IF_ERROR(ForTables(compute, across, push_table));
    stats_.push_seconds += sw.Seconds();

    // The replicated OOV rows: every rank applies the same summed gradient.
    RECTRAIN_RETURN_IF_ERROR(Exchange([&] { return comm_->AllReduce(std::span<float>(oov_), dist::ReduceOp::kSum); }));
    sw.Reset();
    for (int t = 0; t < nt; ++t) {
      if (oov_[static_cast<size_t>(t)] == 0.0f) continue;
      std::span<const float> g(oov_.data() + oov_at[static_cast<size_t>(t)], static_cast<size_t>(ids_.dim(t)));
      RECTRAIN_RETURN_IF_ERROR(tables_[static_cast<size_t>(t)]->ApplyOovGradient(g, step));
    }
    stats_.push_seconds += sw.Seconds();
    return OkStatus();
  }

  int64_t num_unique() const override { return ids_.num_unique(); }
  const StoreStats& stats() const override { return stats_; }

 private:
  // Requests of table t from ranks before `src` (the offset of src's part in req_index_[t]).
  int64_t Before(int src, int t) const {
    int64_t n = 0;
    for (int s = 0; s < src; ++s) n += req_count_[static_cast<size_t>(s * ids_.num_tables() + t)];
    return n;
  }

  template <typename Fn>
  Status ForTables(const ComputeContext& compute, bool across, Fn&& fn) {
    const int nt = ids_.num_tables();
    if (across) {
      return ParallelFor(compute, nt, 1, [&](int64_t begin, int64_t end) -> Status {
        for (int64_t t = begin; t < end; ++t) RECTRAIN_RETURN_IF_ERROR(fn(t));
        return OkStatus();
      });
    }
    for (int t = 0; t < nt; ++t) RECTRAIN_RETURN_IF_ERROR(fn(t));
    return OkStatus();
  }

  // Times one collective and counts its bytes.
  template <typename Fn>
  Status Exchange(Fn&& fn) {
    const int64_t sent = comm_->stats().bytes_sent(), received = comm_->stats().bytes_received();
    Stopwatch sw;
    Status s = fn();
    stats_.exchange_seconds += sw.Seconds();
    stats_.bytes_sent += comm_->stats().bytes_sent() - sent;
    stats_.bytes_received += comm_->stats().bytes_received() - received;
    return s;
  }

  internal::BatchIds ids_;
  std::vector<embedding::EmbeddingTable*> tables_;
  dist::Communicator* comm_;
  const int world_;
  const int rank_;
  const Owners owners_;
  int oov_floats_ = 0;
  StoreStats stats_;

  // Requester side (this rank's unique ids), per [dest * T + table] cell.
  std::vector<int64_t> count_, block_, row_off_, cursor_;
  std::vector<std::vector<int32_t>> owner_, slot_;  // [t][u]
  std::vector<int64_t> send_counts_, reply_counts_;
  std::vector<uint64_t> send_;
  std::vector<float> reply_;
  // Owner side, per [src * T + table] cell.
  std::vector<uint64_t> recv_;
  std::vector<int64_t> recv_counts_, req_count_, req_begin_, serve_counts_;
  std::vector<internal::IdDeduper> served_;        // [t]
  std::vector<std::vector<int32_t>> req_index_;    // [t]: served index of every request, src order
  std::vector<std::vector<float>> served_rows_;    // [t]
  std::vector<float> serve_;
  // Push.
  std::vector<float> grad_send_, grad_recv_, oov_;
  std::vector<std::vector<float>> summed_;
};

}  // namespace

std::unique_ptr<EmbeddingStore> MakeShardedStore(const nn::ModelSpec& spec,
                                                 std::vector<embedding::EmbeddingTable*> tables,
                                                 dist::Communicator* comm, Owners owners) {
  if (comm->world() == 1) return MakeLocalStore(spec, std::move(tables));
  if (owners.count == 0) owners = Owners{0, comm->world()};
  return std::make_unique<ShardedStore>(spec, std::move(tables), comm, owners);
}

}  // namespace rectrain::ps
