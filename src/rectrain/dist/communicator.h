// rectrain/dist/communicator.h: the collectives of a distributed training job, the only way
// rectrain's ranks talk to each other (no MPI call lives outside dist/).
//
// A Communicator is built over a Transport (dist/transport.h) or, for a job of one process, with
// none at all: Communicator::Single() has rank 0 of world 1 and every collective is a local copy
// or nothing, so a single-process run pays no cost for being "distributed-ready".
//
// Collectives (every rank calls the same ones, in the same order, with matching shapes):
//   AllReduce     sum/max/min of a float, double or int64 array, in place. Results are
//                 bit-identical on every rank. Small arrays (<= 16 KiB) are exchanged whole and
//                 reduced in rank order 0, 1, ...; larger ones use a ring (reduce-scatter then
//                 all-gather: 2·(world-1)/world of the bytes per rank, the bandwidth optimum).
//   AllToAllV     rank r sends send[counts[0]...] to rank 0, the next counts[1] elements to rank 1,
//                 ...; receives what each rank sent it, concatenated in rank order. A variant
//                 takes the receive counts when the caller already knows them (one round, not two).
//   Broadcast     root's buffer to everyone.
//   AllGatherV    every rank's array, concatenated in rank order, on every rank.
//   Barrier       returns once every rank has entered it.
// Each call has a deadline (set_timeout, default 300 s): a peer that does not deliver in time
// makes the call return DeadlineExceeded naming that rank and the caller's context (set_context,
// e.g. "step 1234"), never a hang. After any error the communicator is unusable; the job ends.
//
// Accounting: stats() counts calls, bytes sent and received, and seconds spent per operation,
// for the step breakdown, the log and /metrics.
//
// Example:
//   std::unique_ptr<Communicator> comm = ...;     // Single(), an InProc rank, or from MPI
//   comm->set_context("step " + std::to_string(step));
//   RECTRAIN_RETURN_IF_ERROR(comm->AllReduce(grads, ReduceOp::kSum));
//
// Thread safety: one thread per Communicator (the rank's training thread).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/dist/transport.h"

namespace rectrain::dist {

enum class ReduceOp : uint8_t { kSum, kMax, kMin };

enum class CommOp : uint8_t { kAllReduce, kAllToAllV, kBroadcast, kAllGatherV, kBarrier, kPost };
inline constexpr int kNumCommOps = 6;
const char* CommOpName(CommOp op);  // "allreduce", "alltoallv", ...

struct CommOpStats {
  int64_t calls = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  double seconds = 0;
};

struct CommStats {
  std::array<CommOpStats, kNumCommOps> ops{};
  const CommOpStats& of(CommOp op) const { return ops[static_cast<size_t>(op)]; }
  int64_t bytes_sent() const;
  int64_t bytes_received() const;
  double seconds() const;
};

class Communicator {
 public:
  // rank 0 of 1: no transport, every collective local.
  static std::unique_ptr<Communicator> Single();
  // Over `transport` (non-null), which it owns.
  explicit Communicator(std::unique_ptr<Transport> transport);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool distributed() const { return world_ > 1; }
  // "single" | "inproc" | "mpi".
  std::string transport_name() const;

  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Named in error messages ("while in allreduce at step 12"); the caller updates it per phase.
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  // A test seam: `hook` (empty: none) runs before every round of messages, with the operation
  // and the context. The CLI installs one from $RECTRAIN_TEST_HANG_AT to stop a rank at a chosen
  // collective, which is how a hung process looks to its peers (tests/mpi_hang_test.sh).
  using RoundHook = std::function<void(CommOp op, const std::string& context)>;
  void set_round_hook(RoundHook hook) { round_hook_ = std::move(hook); }

  [[nodiscard]] Status AllReduce(std::span<float> data, ReduceOp op);
  [[nodiscard]] Status AllReduce(std::span<double> data, ReduceOp op);
  [[nodiscard]] Status AllReduce(std::span<int64_t> data, ReduceOp op);

  // See the top comment. send_counts.size() == world() (InvalidArgument otherwise) and their sum
  // == send.size(). *recv and *recv_counts are resized.
  template <typename T>
  [[nodiscard]] Status AllToAllV(std::span<const T> send, std::span<const int64_t> send_counts,
                                 std::vector<T>* recv, std::vector<int64_t>* recv_counts) {
    std::vector<int64_t> bytes_out = Scaled(send_counts, sizeof(T));
    std::vector<int64_t> bytes_in;
    RECTRAIN_RETURN_IF_ERROR(AllToAllVBytes(AsBytes(send), bytes_out, nullptr, &bytes_in,
                                            [&](int64_t n) { recv->resize(n / sizeof(T)); return AsWritable(*recv); }));
    recv_counts->resize(bytes_in.size());
    for (size_t i = 0; i < bytes_in.size(); ++i) (*recv_counts)[i] = bytes_in[i] / static_cast<int64_t>(sizeof(T));
    return OkStatus();
  }
  // The same when every rank knows what it will receive from each peer (recv_counts, elements).
  // A peer sending another amount is an Internal error naming it.
  template <typename T>
  [[nodiscard]] Status AllToAllVKnown(std::span<const T> send, std::span<const int64_t> send_counts,
                                      std::span<const int64_t> recv_counts, std::vector<T>* recv) {
    std::vector<int64_t> bytes_out = Scaled(send_counts, sizeof(T));
    std::vector<int64_t> bytes_in = Scaled(recv_counts, sizeof(T));
    std::vector<int64_t> unused;
    return AllToAllVBytes(AsBytes(send), bytes_out, &bytes_in, &unused,
                          [&](int64_t n) { recv->resize(n / sizeof(T)); return AsWritable(*recv); });
  }

  template <typename T>
  [[nodiscard]] Status Broadcast(std::span<T> data, int root) {
    return BroadcastBytes(std::as_writable_bytes(data), root);
  }
  // Broadcasts a string of any length from root (its value elsewhere is replaced).
  [[nodiscard]] Status BroadcastString(std::string* s, int root);

  // *recv = every rank's `send`, in rank order; *counts (may be null) = elements per rank.
  template <typename T>
  [[nodiscard]] Status AllGatherV(std::span<const T> send, std::vector<T>* recv,
                                  std::vector<int64_t>* counts) {
    std::vector<int64_t> bytes_in;
    RECTRAIN_RETURN_IF_ERROR(AllGatherVBytes(AsBytes(send), &bytes_in, [&](int64_t n) {
      recv->resize(n / sizeof(T));
      return AsWritable(*recv);
    }));
    if (counts != nullptr) {
      counts->resize(bytes_in.size());
      for (size_t i = 0; i < bytes_in.size(); ++i) (*counts)[i] = bytes_in[i] / static_cast<int64_t>(sizeof(T));
    }
    return OkStatus();
  }

  [[nodiscard]] Status Barrier();

  // The asynchronous channel (Transport::Post/Receive/Flush) with this communicator's timeout and
  // accounting (bytes under kPost). Receive waits at most timeout() for a message from any rank.
  // With Single() there is no peer: Post and Receive are FailedPrecondition.
  [[nodiscard]] Status Post(int peer, std::span<const std::byte> bytes);
  [[nodiscard]] Status Receive(Transport::Message* out);
  [[nodiscard]] Status Flush();

  // OK while this rank is in step with its job. Otherwise the first error that took it out of
  // step: a collective that failed (a peer that did not deliver before the deadline, a transport
  // error) or Abandon(); every later call returns it at once. A process whose communicator is
  // not ok() must end the job with Abort() rather than exit: its peers may be waiting for it in
  // a collective, and MPI_Finalize at exit waits for every rank (a hung one forever).
  const Status& status() const { return broken_; }
  // This rank fails alone, with an error its peers do not know about (they may be waiting in a
  // collective): status() becomes `why` (an Internal error if `why` is OK), so that the process
  // ends the job. A no-op when status() already holds an error.
  void Abandon(const Status& why);

  // Ends the whole job after a fatal error on this rank (see Transport::Abort); for Single()
  // it does nothing.
  void Abort(int exit_code);

  const CommStats& stats() const { return stats_; }

 private:
  // Resizes the caller's receive vector to n bytes and returns it.
  using Alloc = std::function<std::span<std::byte>(int64_t n)>;
  template <typename T>
  static std::span<const std::byte> AsBytes(std::span<const T> s) { return std::as_bytes(s); }
  template <typename T>
  static std::span<const std::byte> AsBytes(std::span<T> s) { return std::as_bytes(s); }
  template <typename T>
  static std::span<std::byte> AsWritable(std::vector<T>& v) { return std::as_writable_bytes(std::span<T>(v)); }
  static std::vector<int64_t> Scaled(std::span<const int64_t> counts, size_t size) {
    std::vector<int64_t> out(counts.begin(), counts.end());
    for (int64_t& c : out) c *= static_cast<int64_t>(size);
    return out;
  }

  Communicator() = default;
  template <typename T>
  Status AllReduceImpl(std::span<T> data, ReduceOp op);
  Status AllToAllVBytes(std::span<const std::byte> send, const std::vector<int64_t>& send_bytes,
                        const std::vector<int64_t>* known_recv_bytes, std::vector<int64_t>* recv_bytes,
                        const Alloc& alloc);
  Status AllGatherVBytes(std::span<const std::byte> send, std::vector<int64_t>* recv_bytes, const Alloc& alloc);
  Status BroadcastBytes(std::span<std::byte> data, int root);
  // One round of point-to-point messages with the deadline and the accounting of `op`.
  Status Round(CommOp op, std::span<const SendOp> sends, std::span<const RecvOp> recvs);

  std::unique_ptr<Transport> transport_;
  int rank_ = 0;
  int world_ = 1;
  std::chrono::milliseconds timeout_{300'000};
  std::string context_;
  RoundHook round_hook_;
  Status broken_;  // status(): the first error; later calls return it at once
  CommStats stats_;
  CommOp current_ = CommOp::kBarrier;
  // Scratch reused between calls (fresh memory is slow to touch on our machines).
  std::vector<std::byte> scratch_;
  std::vector<int64_t> counts_scratch_;
};

// Every rank passes its own outcome of a phase (setup, a checkpoint write, ...). Returns OK on
// every rank when all are OK; otherwise every rank returns the lowest failing rank's status
// (the failing rank its own; the others with "rank r: " in front, so each process's error
// says where the job went wrong). A communicator error is returned as such.
[[nodiscard]] Status AgreeOk(Communicator& comm, const Status& mine);

}  // namespace rectrain::dist
