#include "rectrain/ps/async_ps.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <string>

#include "rectrain/base/stopwatch.h"
#include "rectrain/ps/internal/batch_ids.h"

namespace rectrain::ps {
namespace {

enum MessageType : uint32_t { kPull = 1, kRows = 2, kPush = 3, kDone = 4 };

size_t PaddedTo(size_t at, size_t alignment) { return (at + alignment - 1) / alignment * alignment; }

class Writer {
 public:
  explicit Writer(std::vector<std::byte>* out) : out_(out) { out_->clear(); }
  template <typename T>
  void Put(T v) {
    const size_t at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &v, sizeof(T));
  }
  // Arrays start at a multiple of their element size (zero padding), so the receiver reads them in
  // place: message buffers are allocated by operator new, aligned for any element type.
  template <typename T>
  void PutSpan(std::span<const T> v) {
    Pad(alignof(T));
    const size_t at = out_->size();
    out_->resize(at + v.size_bytes());
    if (!v.empty()) std::memcpy(out_->data() + at, v.data(), v.size_bytes());
  }
  // Starts an array written element by element (Put in a loop), read back with Reader::Span.
  void Pad(size_t alignment) { out_->resize(PaddedTo(out_->size(), alignment)); }

 private:
  std::vector<std::byte>* out_;
};

// Bounds-checked reads of a message; every failure names the sender.
class Reader {
 public:
  Reader(std::span<const std::byte> in, int peer) : in_(in), peer_(peer) {}
  template <typename T>
  Status Get(T* v) {
    if (sizeof(T) > in_.size() - pos_) return Malformed();
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }
  template <typename T>
  Result<std::span<const T>> Span(uint64_t n) {
    const size_t at = PaddedTo(pos_, alignof(T));
    if (at > in_.size()) return Malformed();
    pos_ = at;
    if (n > (in_.size() - pos_) / sizeof(T)) return Malformed();
    std::span<const T> s(reinterpret_cast<const T*>(in_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n) * sizeof(T);
    return s;
  }
  Status End() const { return pos_ == in_.size() ? OkStatus() : Malformed(); }
  Status Malformed() const {
    return InternalError("a malformed parameter-server message from rank " + std::to_string(peer_) +
                         " (the ranks disagree about the protocol: one binary and one config everywhere)");
  }

 private:
  std::span<const std::byte> in_;
  int peer_;
  size_t pos_ = 0;
};

// Where server s's dense chunk lives in the parameter list: (param, offset, length) pieces.
struct Piece {
  size_t param = 0;
  size_t offset = 0;
  size_t length = 0;
};
std::vector<Piece> Pieces(std::span<const optim::ParamRef> params, DenseRange r) {
  std::vector<Piece> out;
  int64_t at = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    const int64_t n = static_cast<int64_t>(params[p].value.size());
    const int64_t b = std::max(at, r.begin), e = std::min(at + n, r.end);
    if (b < e) out.push_back({p, static_cast<size_t>(b - at), static_cast<size_t>(e - b)});
    at += n;
  }
  return out;
}

class AsyncWorkerStoreImpl final : public AsyncWorkerStore {
 public:
  AsyncWorkerStoreImpl(const nn::ModelSpec& spec, std::vector<int> dims, std::vector<optim::ParamRef> params,
                       Owners servers, dist::Communicator* comm)
      : ids_(spec, dims), dims_(std::move(dims)), params_(std::move(params)), servers_(servers), comm_(comm) {
    int64_t total = 0;
    for (const auto& p : params_) total += static_cast<int64_t>(p.value.size());
    for (int s = 0; s < servers_.count; ++s) {
      const DenseRange r = DenseChunk(total, s, servers_.count);
      ranges_.push_back(r);
      pieces_.push_back(Pieces(params_, r));
    }
    route_.resize(static_cast<size_t>(servers_.count));
  }

  Status Lookup(const data::Batch& batch, embedding::PullMode mode, const ComputeContext& compute) override {
    Stopwatch sw;
    RECTRAIN_RETURN_IF_ERROR(ids_.Dedupe(batch, compute, [](int) { return OkStatus(); }));
    const int nt = ids_.num_tables();
    // Route every unique id to its server, remembering (table, index) for the reply.
    for (auto& r : route_) {
      r.assign(static_cast<size_t>(nt), {});
    }
    for (int t = 0; t < nt; ++t) {
      const std::vector<uint64_t>& u = ids_.unique(t);
      for (size_t k = 0; k < u.size(); ++k) {
        route_[static_cast<size_t>(servers_.Of(u[k]) - servers_.first)][static_cast<size_t>(t)].push_back(static_cast<int32_t>(k));
      }
    }
    stats_.dedupe_seconds += sw.Seconds();
    sw.Reset();
    for (int s = 0; s < servers_.count; ++s) {
      Writer w(&msg_);
      w.Put<uint32_t>(kPull);
      w.Put<uint32_t>(mode == embedding::PullMode::kEval ? 1 : 0);
      w.Put<int64_t>(clock_);
      for (int t = 0; t < nt; ++t) {
        const std::vector<int32_t>& idx = route_[static_cast<size_t>(s)][static_cast<size_t>(t)];
        w.Put<uint32_t>(static_cast<uint32_t>(idx.size()));
        w.Pad(alignof(uint64_t));
        for (int32_t k : idx) w.Put<uint64_t>(ids_.unique(t)[static_cast<size_t>(k)]);
      }
      RECTRAIN_RETURN_IF_ERROR(comm_->Post(servers_.first + s, msg_));
    }
    // One ROWS reply per server, in any order.
    std::vector<bool> got(static_cast<size_t>(servers_.count), false);
    for (int n = 0; n < servers_.count; ++n) {
      dist::Transport::Message m;
      RECTRAIN_RETURN_IF_ERROR(comm_->Receive(&m));
      const int s = m.peer - servers_.first;
      Reader r(m.bytes, m.peer);
      uint32_t type = 0;
      RECTRAIN_RETURN_IF_ERROR(r.Get(&type));
      if (!servers_.Holds(m.peer) || type != kRows || got[static_cast<size_t>(s)]) return r.Malformed();
      got[static_cast<size_t>(s)] = true;
      for (int t = 0; t < nt; ++t) {
        uint32_t count = 0;
        RECTRAIN_RETURN_IF_ERROR(r.Get(&count));
        const std::vector<int32_t>& idx = route_[static_cast<size_t>(s)][static_cast<size_t>(t)];
        if (count != idx.size()) return r.Malformed();
        const int dim = dims_[static_cast<size_t>(t)];
        RECTRAIN_ASSIGN_OR_RETURN(std::span<const float> rows, r.Span<float>(static_cast<uint64_t>(count) * dim));
        std::span<float> out = ids_.rows(t);
        for (size_t k = 0; k < idx.size(); ++k) {
          std::copy_n(rows.data() + k * static_cast<size_t>(dim), dim, out.data() + static_cast<int64_t>(idx[k]) * dim);
        }
      }
      uint64_t m_dense = 0;
      RECTRAIN_RETURN_IF_ERROR(r.Get(&m_dense));
      const DenseRange range = ranges_[static_cast<size_t>(s)];
      if (m_dense != static_cast<uint64_t>(range.end - range.begin)) return r.Malformed();
      RECTRAIN_ASSIGN_OR_RETURN(std::span<const float> dense, r.Span<float>(m_dense));
      RECTRAIN_RETURN_IF_ERROR(r.End());
      size_t at = 0;
      for (const Piece& p : pieces_[static_cast<size_t>(s)]) {
        std::copy_n(dense.data() + at, p.length, params_[p.param].value.data() + p.offset);
        at += p.length;
      }
    }
    stats_.exchange_seconds += sw.Seconds();
    ++stats_.lookups;
    stats_.ids_requested += ids_.num_unique();
    return OkStatus();
  }

  std::span<const nn::PulledTable> pulled() const override { return ids_.pulled(); }
  std::span<const nn::FieldIndices> fields() const override { return ids_.fields(); }
  std::span<const std::span<float>> grads() const override { return ids_.grads(); }

  Status Push(const optim::StepContext& step, const ComputeContext&) override {
    Stopwatch sw;
    const int nt = ids_.num_tables();
    for (int s = 0; s < servers_.count; ++s) {
      Writer w(&msg_);
      w.Put<uint32_t>(kPush);
      w.Put<int64_t>(clock_);
      w.Put<float>(dense_lr_);
      w.Put<float>(step.learning_rate);
      for (int t = 0; t < nt; ++t) {
        const std::vector<int32_t>& idx = route_[static_cast<size_t>(s)][static_cast<size_t>(t)];
        const int dim = dims_[static_cast<size_t>(t)];
        w.Put<uint32_t>(static_cast<uint32_t>(idx.size()));
        w.Pad(alignof(uint64_t));
        for (int32_t k : idx) w.Put<uint64_t>(ids_.unique(t)[static_cast<size_t>(k)]);
        std::span<const float> g = ids_.grads_of(t);
        for (int32_t k : idx) w.PutSpan<float>(g.subspan(static_cast<size_t>(k) * dim, static_cast<size_t>(dim)));
      }
      const DenseRange range = ranges_[static_cast<size_t>(s)];
      w.Put<uint64_t>(static_cast<uint64_t>(range.end - range.begin));
      for (const Piece& p : pieces_[static_cast<size_t>(s)]) {
        w.PutSpan<float>(std::span<const float>(params_[p.param].grad.data() + p.offset, p.length));
      }
      RECTRAIN_RETURN_IF_ERROR(comm_->Post(servers_.first + s, msg_));
    }
    ++clock_;
    stats_.exchange_seconds += sw.Seconds();
    stats_.bytes_sent = comm_->stats().bytes_sent();
    stats_.bytes_received = comm_->stats().bytes_received();
    return OkStatus();
  }

  void set_dense_lr(float lr) override { dense_lr_ = lr; }

  Status Finish() override {
    for (int s = 0; s < servers_.count; ++s) {
      Writer w(&msg_);
      w.Put<uint32_t>(kDone);
      RECTRAIN_RETURN_IF_ERROR(comm_->Post(servers_.first + s, msg_));
    }
    return comm_->Flush();
  }

  int64_t num_unique() const override { return ids_.num_unique(); }
  const StoreStats& stats() const override { return stats_; }

 private:
  internal::BatchIds ids_;
  std::vector<int> dims_;
  std::vector<optim::ParamRef> params_;
  Owners servers_;
  dist::Communicator* comm_;
  std::vector<DenseRange> ranges_;
  std::vector<std::vector<Piece>> pieces_;
  std::vector<std::vector<std::vector<int32_t>>> route_;  // [server][table] -> unique indices
  std::vector<std::byte> msg_;
  int64_t clock_ = 0;
  float dense_lr_ = 0;
  StoreStats stats_;
};

}  // namespace

DenseRange DenseChunk(int64_t total, int server, int servers) {
  return {total * server / servers, total * (server + 1) / servers};
}

std::vector<optim::ParamRef> SliceParams(std::span<const optim::ParamRef> params, DenseRange range) {
  std::vector<optim::ParamRef> out;
  for (const Piece& p : Pieces(params, range)) {
    const optim::ParamRef& src = params[p.param];
    out.push_back({src.name + "[" + std::to_string(p.offset) + ":" + std::to_string(p.offset + p.length) + "]",
                   src.value.subspan(p.offset, p.length), src.grad.subspan(p.offset, p.length), src.decay});
  }
  return out;
}

std::unique_ptr<AsyncWorkerStore> MakeAsyncWorkerStore(const nn::ModelSpec& spec, std::vector<int> table_dims,
                                                       std::vector<optim::ParamRef> params, Owners servers,
                                                       dist::Communicator* comm) {
  return std::make_unique<AsyncWorkerStoreImpl>(spec, std::move(table_dims), std::move(params), servers, comm);
}

namespace {

// One server's loop (RunServer): the workers' clocks, the PULLs held over the staleness bound,
// and the message handlers.
class ServerLoop {
 public:
  ServerLoop(const ServerOptions& o, dist::Communicator& comm, ServerStats* stats)
      : o_(o), comm_(comm), stats_(stats), clock_(static_cast<size_t>(o.workers), 0),
        done_(static_cast<size_t>(o.workers), false) {
    for (const auto& p : o_.dense) dense_size_ += static_cast<int64_t>(p.value.size());
  }

  Status Run() {
    while (finished_ < o_.workers) {
      dist::Transport::Message m;
      Stopwatch wait;
      RECTRAIN_RETURN_IF_ERROR(comm_.Receive(&m));
      stats_->wait_seconds += wait.Seconds();
      Stopwatch busy;
      RECTRAIN_RETURN_IF_ERROR(Handle(std::move(m)));
      stats_->busy_seconds += busy.Seconds();
    }
    if (!held_.empty()) return InternalError("pulls were left waiting after every worker finished");
    return comm_.Flush();
  }

 private:
  Status Handle(dist::Transport::Message m) {
    if (m.peer < 0 || m.peer >= o_.workers) return Reader(m.bytes, m.peer).Malformed();
    Reader r(m.bytes, m.peer);
    uint32_t type = 0;
    RECTRAIN_RETURN_IF_ERROR(r.Get(&type));
    if (type == kPull) {
      RECTRAIN_ASSIGN_OR_RETURN(bool served, TryPull(m));
      if (!served) {
        ++stats_->held_pulls;
        held_.push_back(std::move(m));
      }
      return OkStatus();
    }
    if (type == kPush) {
      RECTRAIN_RETURN_IF_ERROR(ApplyPush(r, m.peer));
      ++stats_->pushes;
      return ReleaseHeld();
    }
    if (type == kDone) {
      if (done_[static_cast<size_t>(m.peer)]) return r.Malformed();
      done_[static_cast<size_t>(m.peer)] = true;
      ++finished_;
      return ReleaseHeld();
    }
    return r.Malformed();
  }

  // The least clock of the workers still training.
  int64_t MinClock() const {
    int64_t m = std::numeric_limits<int64_t>::max();
    for (int w = 0; w < o_.workers; ++w) {
      if (!done_[static_cast<size_t>(w)]) m = std::min(m, clock_[static_cast<size_t>(w)]);
    }
    return m;
  }

  // A PULL, served now or held; returns whether it was served.
  Result<bool> TryPull(const dist::Transport::Message& m) {
    Reader r(m.bytes, m.peer);
    uint32_t type = 0, mode = 0;
    int64_t c = 0;
    RECTRAIN_RETURN_IF_ERROR(r.Get(&type));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&mode));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&c));
    if (mode == 0 && c - MinClock() > o_.staleness) return false;
    RECTRAIN_RETURN_IF_ERROR(ServePull(r, m.peer, mode == 1 ? embedding::PullMode::kEval : embedding::PullMode::kTrain));
    return true;
  }

  // Answers a PULL (already parsed up to its ids).
  Status ServePull(Reader& r, int peer, embedding::PullMode mode) {
    Writer w(&reply_);
    w.Put<uint32_t>(kRows);
    for (size_t t = 0; t < o_.tables.size(); ++t) {
      uint32_t n = 0;
      RECTRAIN_RETURN_IF_ERROR(r.Get(&n));
      RECTRAIN_ASSIGN_OR_RETURN(std::span<const uint64_t> req, r.Span<uint64_t>(n));
      const int dim = o_.tables[t]->dim();
      rows_.resize(static_cast<size_t>(n) * dim);
      // Called even without ids, so the table's clock advances once per training pull.
      RECTRAIN_RETURN_IF_ERROR(o_.tables[t]->Pull(req, mode, rows_, o_.compute));
      w.Put<uint32_t>(n);
      w.PutSpan<float>(std::span<const float>(rows_));
    }
    RECTRAIN_RETURN_IF_ERROR(r.End());
    w.Put<uint64_t>(static_cast<uint64_t>(dense_size_));
    for (const auto& p : o_.dense) w.PutSpan<float>(std::span<const float>(p.value));
    ++stats_->pulls;
    return comm_.Post(peer, reply_);
  }

  Status ReleaseHeld() {
    for (size_t i = 0; i < held_.size();) {
      RECTRAIN_ASSIGN_OR_RETURN(bool served, TryPull(held_[i]));
      if (served) {
        held_.erase(held_.begin() + static_cast<int64_t>(i));
      } else {
        ++i;
      }
    }
    return OkStatus();
  }

  // A PUSH (parsed up to its type): the rows' gradients and this server's OOV row, then the
  // dense update; the worker's clock moves past the pushed step.
  Status ApplyPush(Reader& r, int peer) {
    int64_t c = 0;
    float lr_dense = 0, lr_sparse = 0;
    RECTRAIN_RETURN_IF_ERROR(r.Get(&c));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&lr_dense));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&lr_sparse));
    const optim::StepContext sparse_step{.step = c, .learning_rate = lr_sparse};
    for (size_t t = 0; t < o_.tables.size(); ++t) {
      uint32_t n = 0;
      RECTRAIN_RETURN_IF_ERROR(r.Get(&n));
      const int dim = o_.tables[t]->dim();
      RECTRAIN_ASSIGN_OR_RETURN(std::span<const uint64_t> push_ids, r.Span<uint64_t>(n));
      RECTRAIN_ASSIGN_OR_RETURN(std::span<const float> grads, r.Span<float>(static_cast<uint64_t>(n) * dim));
      // This server's own OOV row (each server's ids that are not admitted share it).
      oov_.assign(static_cast<size_t>(dim), 0.0f);
      RECTRAIN_ASSIGN_OR_RETURN(const bool touched, o_.tables[t]->PushRows(push_ids, grads, sparse_step, o_.compute, oov_));
      if (touched) {
        RECTRAIN_RETURN_IF_ERROR(o_.tables[t]->ApplyOovGradient(oov_, sparse_step));
      }
    }
    uint64_t m_dense = 0;
    RECTRAIN_RETURN_IF_ERROR(r.Get(&m_dense));
    if (m_dense != static_cast<uint64_t>(dense_size_)) return r.Malformed();
    RECTRAIN_ASSIGN_OR_RETURN(std::span<const float> g, r.Span<float>(m_dense));
    RECTRAIN_RETURN_IF_ERROR(r.End());
    size_t at = 0;
    for (const auto& p : o_.dense) {
      std::copy_n(g.data() + at, p.grad.size(), p.grad.data());
      at += p.grad.size();
    }
    if (dense_size_ > 0) {
      RECTRAIN_RETURN_IF_ERROR(o_.optimizer->Update({.step = c, .learning_rate = lr_dense}, o_.dense, o_.compute));
    }
    clock_[static_cast<size_t>(peer)] = std::max(clock_[static_cast<size_t>(peer)], c + 1);
    return OkStatus();
  }

  const ServerOptions& o_;
  dist::Communicator& comm_;
  ServerStats* stats_;
  std::vector<int64_t> clock_;  // steps each worker has pushed
  std::vector<bool> done_;
  int finished_ = 0;
  std::deque<dist::Transport::Message> held_;  // PULLs over the staleness bound
  std::vector<std::byte> reply_;
  std::vector<float> rows_, oov_;
  int64_t dense_size_ = 0;
};

}  // namespace

Status RunServer(const ServerOptions& o, dist::Communicator& comm, ServerStats* stats) {
  return ServerLoop(o, comm, stats).Run();
}

}  // namespace rectrain::ps
