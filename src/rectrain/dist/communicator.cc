#include "rectrain/dist/communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "rectrain/base/stopwatch.h"

namespace rectrain::dist {
namespace {

// Arrays up to this size are sent whole to every peer and reduced locally in rank order (one
// round, latency-bound sizes); larger ones go around the ring.
constexpr int64_t kSmallAllReduceBytes = 16 << 10;

template <typename T>
void Combine(ReduceOp op, const T* in, T* acc, int64_t n) {
  switch (op) {
    case ReduceOp::kSum:
      for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
      break;
    case ReduceOp::kMax:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
      break;
    case ReduceOp::kMin:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], in[i]);
      break;
  }
}

}  // namespace

const char* CommOpName(CommOp op) {
  switch (op) {
    case CommOp::kAllReduce: return "allreduce";
    case CommOp::kAllToAllV: return "alltoallv";
    case CommOp::kBroadcast: return "broadcast";
    case CommOp::kAllGatherV: return "allgatherv";
    case CommOp::kBarrier: return "barrier";
    case CommOp::kPost: return "post";
  }
  return "?";
}

int64_t CommStats::bytes_sent() const {
  int64_t n = 0;
  for (const auto& o : ops) n += o.bytes_sent;
  return n;
}
int64_t CommStats::bytes_received() const {
  int64_t n = 0;
  for (const auto& o : ops) n += o.bytes_received;
  return n;
}
double CommStats::seconds() const {
  double s = 0;
  for (const auto& o : ops) s += o.seconds;
  return s;
}

// Counts one call of an operation and its wall time.
class OpScope {
 public:
  OpScope(CommOpStats* stats) : stats_(stats) { ++stats_->calls; }
  ~OpScope() { stats_->seconds += sw_.Seconds(); }

 private:
  CommOpStats* stats_;
  Stopwatch sw_;
};

std::unique_ptr<Communicator> Communicator::Single() { return std::unique_ptr<Communicator>(new Communicator()); }

Communicator::Communicator(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {
  rank_ = transport_->rank();
  world_ = transport_->world();
}

Communicator::~Communicator() = default;

std::string Communicator::transport_name() const { return transport_ ? transport_->name() : "single"; }

void Communicator::Abandon(const Status& why) {
  if (!broken_.ok()) return;
  broken_ = why.ok() ? InternalError("a rank abandoned the job without an error") : why;
}

Status Communicator::Round(CommOp op, std::span<const SendOp> sends, std::span<const RecvOp> recvs) {
  if (!broken_.ok()) return broken_;
  if (sends.empty() && recvs.empty()) return OkStatus();
  if (round_hook_) round_hook_(op, context_);
  CommOpStats& st = stats_.ops[static_cast<size_t>(op)];
  for (const SendOp& s : sends) st.bytes_sent += s.bytes;
  for (const RecvOp& r : recvs) st.bytes_received += r.bytes;
  Status s = transport_->Exchange(sends, recvs, Clock::now() + timeout_);
  if (!s.ok()) {
    std::string where = std::string("rank ") + std::to_string(rank_) + " of " + std::to_string(world_) +
                        " in " + CommOpName(op);
    if (!context_.empty()) where += " at " + context_;
    broken_ = s.WithContext(where);
    return broken_;
  }
  return OkStatus();
}

template <typename T>
Status Communicator::AllReduceImpl(std::span<T> data, ReduceOp op) {
  OpScope scope(&stats_.ops[static_cast<size_t>(CommOp::kAllReduce)]);
  if (!broken_.ok()) return broken_;
  if (world_ == 1 || data.empty()) return OkStatus();
  const int64_t n = static_cast<int64_t>(data.size());
  const int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  if (bytes <= kSmallAllReduceBytes) {
    // Everyone's array to everyone; reduced in rank order so every rank computes the same bits.
    scratch_.resize(static_cast<size_t>(bytes * world_));
    T* all = reinterpret_cast<T*>(scratch_.data());
    std::vector<SendOp> sends;
    std::vector<RecvOp> recvs;
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      sends.push_back({p, data.data(), bytes});
      recvs.push_back({p, all + p * n, bytes});
    }
    RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kAllReduce, sends, recvs));
    std::memcpy(all + rank_ * n, data.data(), static_cast<size_t>(bytes));
    std::memcpy(data.data(), all, static_cast<size_t>(bytes));
    for (int p = 1; p < world_; ++p) Combine(op, all + p * n, data.data(), n);
    return OkStatus();
  }
  // Ring: reduce-scatter, then all-gather. Chunk c covers [c·n/w, (c+1)·n/w).
  auto chunk_begin = [&](int c) { return static_cast<int64_t>(c) * n / world_; };
  const int right = (rank_ + 1) % world_;
  const int left = (rank_ + world_ - 1) % world_;
  scratch_.resize(static_cast<size_t>((n / world_ + 1) * static_cast<int64_t>(sizeof(T))));
  T* incoming = reinterpret_cast<T*>(scratch_.data());
  for (int s = 0; s < world_ - 1; ++s) {
    const int send_c = (rank_ - s + world_) % world_;
    const int recv_c = (rank_ - s - 1 + 2 * world_) % world_;
    const int64_t sb = chunk_begin(send_c), se = chunk_begin(send_c + 1);
    const int64_t rb = chunk_begin(recv_c), re = chunk_begin(recv_c + 1);
    const SendOp send{right, data.data() + sb, (se - sb) * static_cast<int64_t>(sizeof(T))};
    const RecvOp recv{left, incoming, (re - rb) * static_cast<int64_t>(sizeof(T))};
    RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kAllReduce, {&send, 1}, {&recv, 1}));
    Combine(op, incoming, data.data() + rb, re - rb);
  }
  // Rank r now holds the reduced chunk (r + 1) mod w; pass the reduced chunks around.
  for (int s = 0; s < world_ - 1; ++s) {
    const int send_c = (rank_ + 1 - s + world_) % world_;
    const int recv_c = (rank_ - s + world_) % world_;
    const int64_t sb = chunk_begin(send_c), se = chunk_begin(send_c + 1);
    const int64_t rb = chunk_begin(recv_c), re = chunk_begin(recv_c + 1);
    const SendOp send{right, data.data() + sb, (se - sb) * static_cast<int64_t>(sizeof(T))};
    const RecvOp recv{left, data.data() + rb, (re - rb) * static_cast<int64_t>(sizeof(T))};
    RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kAllReduce, {&send, 1}, {&recv, 1}));
  }
  return OkStatus();
}

Status Communicator::AllReduce(std::span<float> data, ReduceOp op) { return AllReduceImpl(data, op); }
Status Communicator::AllReduce(std::span<double> data, ReduceOp op) { return AllReduceImpl(data, op); }
Status Communicator::AllReduce(std::span<int64_t> data, ReduceOp op) { return AllReduceImpl(data, op); }

Status Communicator::AllToAllVBytes(std::span<const std::byte> send, const std::vector<int64_t>& send_bytes,
                                    const std::vector<int64_t>* known_recv_bytes,
                                    std::vector<int64_t>* recv_bytes, const Alloc& alloc) {
  OpScope scope(&stats_.ops[static_cast<size_t>(CommOp::kAllToAllV)]);
  if (!broken_.ok()) return broken_;
  if (static_cast<int>(send_bytes.size()) != world_ ||
      (known_recv_bytes != nullptr && static_cast<int>(known_recv_bytes->size()) != world_)) {
    return InvalidArgumentError("AllToAllV needs one count per rank (" + std::to_string(world_) + "), got " +
                                std::to_string(send_bytes.size()));
  }
  const int64_t total_out = std::accumulate(send_bytes.begin(), send_bytes.end(), int64_t{0});
  if (total_out != static_cast<int64_t>(send.size())) {
    return InvalidArgumentError("AllToAllV counts sum to " + std::to_string(total_out) + " bytes but " +
                                std::to_string(send.size()) + " bytes were given");
  }
  std::vector<int64_t>& in = *recv_bytes;
  if (known_recv_bytes != nullptr) {
    in = *known_recv_bytes;
  } else {
    // Round 1: how much each peer will send.
    in.assign(world_, 0);
    std::vector<SendOp> sends;
    std::vector<RecvOp> recvs;
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      sends.push_back({p, &send_bytes[p], sizeof(int64_t)});
      recvs.push_back({p, &in[p], sizeof(int64_t)});
    }
    RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kAllToAllV, sends, recvs));
    in[rank_] = send_bytes[rank_];
    for (int p = 0; p < world_; ++p) {
      if (in[p] < 0) return InternalError("rank " + std::to_string(p) + " announced a negative AllToAllV size");
    }
  }
  const int64_t total_in = std::accumulate(in.begin(), in.end(), int64_t{0});
  std::span<std::byte> out = alloc(total_in);
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  int64_t send_off = 0, recv_off = 0;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) {
      if (in[p] != send_bytes[p]) {
        return InternalError("AllToAllV: rank " + std::to_string(p) + " expects " + std::to_string(in[p]) +
                             " bytes from itself but sends " + std::to_string(send_bytes[p]));
      }
      if (in[p] > 0) std::memcpy(out.data() + recv_off, send.data() + send_off, static_cast<size_t>(in[p]));
    } else {
      if (send_bytes[p] > 0) sends.push_back({p, send.data() + send_off, send_bytes[p]});
      if (in[p] > 0) recvs.push_back({p, out.data() + recv_off, in[p]});
    }
    send_off += send_bytes[p];
    recv_off += in[p];
  }
  return Round(CommOp::kAllToAllV, sends, recvs);
}

Status Communicator::AllGatherVBytes(std::span<const std::byte> send, std::vector<int64_t>* recv_bytes,
                                     const Alloc& alloc) {
  OpScope scope(&stats_.ops[static_cast<size_t>(CommOp::kAllGatherV)]);
  if (!broken_.ok()) return broken_;
  std::vector<int64_t>& in = *recv_bytes;
  in.assign(world_, 0);
  const int64_t mine = static_cast<int64_t>(send.size());
  in[rank_] = mine;
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    sends.push_back({p, &mine, sizeof(int64_t)});
    recvs.push_back({p, &in[p], sizeof(int64_t)});
  }
  RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kAllGatherV, sends, recvs));
  const int64_t total = std::accumulate(in.begin(), in.end(), int64_t{0});
  std::span<std::byte> out = alloc(total);
  sends.clear();
  recvs.clear();
  int64_t off = 0;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) {
      if (mine > 0) std::memcpy(out.data() + off, send.data(), static_cast<size_t>(mine));
    } else {
      if (mine > 0) sends.push_back({p, send.data(), mine});
      if (in[p] > 0) recvs.push_back({p, out.data() + off, in[p]});
    }
    off += in[p];
  }
  return Round(CommOp::kAllGatherV, sends, recvs);
}

Status Communicator::BroadcastBytes(std::span<std::byte> data, int root) {
  OpScope scope(&stats_.ops[static_cast<size_t>(CommOp::kBroadcast)]);
  if (!broken_.ok()) return broken_;
  if (root < 0 || root >= world_) {
    return InvalidArgumentError("Broadcast root " + std::to_string(root) + " is not a rank of " +
                                std::to_string(world_));
  }
  if (world_ == 1 || data.empty()) return OkStatus();
  // Binomial tree over ranks relative to the root: log2(world) rounds.
  const int vrank = (rank_ - root + world_) % world_;
  const int64_t bytes = static_cast<int64_t>(data.size());
  for (int mask = 1; mask < world_; mask <<= 1) {
    if (vrank < mask) {
      if (vrank + mask < world_) {
        const SendOp s{(vrank + mask + root) % world_, data.data(), bytes};
        RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kBroadcast, {&s, 1}, {}));
      }
    } else if (vrank < 2 * mask) {
      const RecvOp r{(vrank - mask + root) % world_, data.data(), bytes};
      RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kBroadcast, {}, {&r, 1}));
    }
  }
  return OkStatus();
}

Status Communicator::BroadcastString(std::string* s, int root) {
  int64_t size = static_cast<int64_t>(s->size());
  RECTRAIN_RETURN_IF_ERROR(Broadcast(std::span<int64_t>(&size, 1), root));
  s->resize(static_cast<size_t>(size));
  return BroadcastBytes(std::as_writable_bytes(std::span<char>(s->data(), s->size())), root);
}

Status Communicator::Barrier() {
  OpScope scope(&stats_.ops[static_cast<size_t>(CommOp::kBarrier)]);
  if (!broken_.ok()) return broken_;
  // Dissemination barrier: in round k everyone signals rank + 2^k and waits for rank - 2^k.
  char token = 1, got = 0;
  for (int dist = 1; dist < world_; dist <<= 1) {
    const SendOp s{(rank_ + dist) % world_, &token, 1};
    const RecvOp r{(rank_ - dist + world_) % world_, &got, 1};
    RECTRAIN_RETURN_IF_ERROR(Round(CommOp::kBarrier, {&s, 1}, {&r, 1}));
  }
  return OkStatus();
}

Status Communicator::Post(int peer, std::span<const std::byte> bytes) {
  if (!broken_.ok()) return broken_;
  if (!transport_) return FailedPreconditionError("a single process has no peer to post to");
  CommOpStats& st = stats_.ops[static_cast<size_t>(CommOp::kPost)];
  ++st.calls;
  st.bytes_sent += static_cast<int64_t>(bytes.size());
  Status s = transport_->Post(peer, bytes);
  if (!s.ok()) broken_ = s.WithContext("rank " + std::to_string(rank_) + " posting to rank " + std::to_string(peer));
  return broken_;
}

Status Communicator::Receive(Transport::Message* out) {
  if (!broken_.ok()) return broken_;
  if (!transport_) return FailedPreconditionError("a single process has no peer to receive from");
  Stopwatch sw;
  Status s = transport_->Receive(Clock::now() + timeout_, out);
  CommOpStats& st = stats_.ops[static_cast<size_t>(CommOp::kPost)];
  st.seconds += sw.Seconds();
  if (!s.ok()) {
    std::string where = "rank " + std::to_string(rank_) + " of " + std::to_string(world_) + " waiting for a message";
    if (!context_.empty()) where += " at " + context_;
    broken_ = s.WithContext(where);
    return broken_;
  }
  st.bytes_received += static_cast<int64_t>(out->bytes.size());
  return OkStatus();
}

Status Communicator::Flush() {
  if (!broken_.ok() || !transport_) return broken_;
  Status s = transport_->Flush(Clock::now() + timeout_);
  if (!s.ok()) broken_ = s.WithContext("rank " + std::to_string(rank_) + " flushing its messages");
  return broken_;
}

void Communicator::Abort(int exit_code) {
  if (transport_) transport_->Abort(exit_code);
}

Status AgreeOk(Communicator& comm, const Status& mine) {
  if (comm.world() == 1) return mine;
  std::vector<int64_t> first = {mine.ok() ? comm.world() : comm.rank()};
  RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<int64_t>(first), ReduceOp::kMin));
  const int failed = static_cast<int>(first[0]);
  if (failed == comm.world()) return OkStatus();
  std::vector<int64_t> code = {static_cast<int64_t>(mine.code())};
  std::string message = mine.message();
  RECTRAIN_RETURN_IF_ERROR(comm.Broadcast(std::span<int64_t>(code), failed));
  RECTRAIN_RETURN_IF_ERROR(comm.BroadcastString(&message, failed));
  if (failed == comm.rank()) return mine;
  return Status(static_cast<StatusCode>(code[0]), "rank " + std::to_string(failed) + ": " + message);
}

}  // namespace rectrain::dist
