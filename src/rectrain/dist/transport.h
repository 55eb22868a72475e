// rectrain/dist/transport.h: point-to-point messages between the ranks of one job, the only
// layer that touches a network library. The collectives (dist/communicator.h) are written once
// on top of it, so every transport gets the same algorithms, the same byte accounting and the
// same timeout behaviour, and a missing peer is always named: a collective is a set of
// point-to-point messages, so the one that did not arrive says which rank is late.
//
// Implementations: InProcTransport (ranks are threads of one process; tests, dist/inproc.h) and
// MpiTransport (one process per rank under mpirun/srun; dist/mpi.h, built with
// RECTRAIN_WITH_MPI). A job of one rank needs no transport at all (Communicator::Single()).
//
// Semantics. Messages from rank a to rank b arrive in the order they were sent (FIFO per
// ordered pair); there are no tags. Exchange() posts every send and every receive of one round,
// then waits for all of them: receives name their peer and their exact size (collectives send
// sizes first), so a round never needs unbounded buffering or any-source matching.
//
// Thread safety: a Transport is used by one thread at a time (the rank's training thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/status.h"

namespace rectrain::dist {

using Clock = std::chrono::steady_clock;

struct SendOp {
  int peer = 0;
  const void* data = nullptr;
  int64_t bytes = 0;
};

struct RecvOp {
  int peer = 0;
  void* data = nullptr;
  int64_t bytes = 0;  // exact: a message of another size is an Internal error naming both sizes
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // "inproc" | "mpi".
  virtual std::string name() const = 0;

  // Posts `sends` and `recvs` (peers != rank(); any number per peer, matched in order) and waits
  // until all have completed or `deadline` passes. On a timeout returns DeadlineExceeded whose
  // message lists the peers whose messages did not arrive ("no message from rank 2"), and the
  // transport is unusable afterwards (the job must exit). Unavailable when a peer is known to be
  // gone (its connection closed). The buffers must stay valid until Exchange returns.
  [[nodiscard]] virtual Status Exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                                        Clock::time_point deadline) = 0;

  // Ends the job everywhere as fast as the transport can (MPI_Abort), after a fatal error on
  // this rank, so the peers do not wait for their timeout. The default does nothing.
  virtual void Abort(int exit_code) { (void)exit_code; }

  // The message channel of the asynchronous parameter server (dist.mode async), apart from the
  // collectives' channel: messages from any peer, FIFO per ordered pair, matched in arrival order.
  // Post copies `bytes` and returns at once. Receive waits for the next message from any peer
  // until `deadline` (DeadlineExceeded "no message from any rank"). Flush waits until every
  // posted message has left this rank (before a collective phase or the end of the job).
  struct Message {
    int peer = 0;
    std::vector<std::byte> bytes;
  };
  [[nodiscard]] virtual Status Post(int peer, std::span<const std::byte> bytes) = 0;
  [[nodiscard]] virtual Status Receive(Clock::time_point deadline, Message* out) = 0;
  [[nodiscard]] virtual Status Flush(Clock::time_point deadline) = 0;
};

}  // namespace rectrain::dist
