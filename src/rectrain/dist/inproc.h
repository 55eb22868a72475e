// rectrain/dist/inproc.h: a job whose ranks are threads of one process. Messages are copied
// through per-pair mailboxes of a shared InProcHub. It exists for fast, deterministic tests of
// everything distributed (the collectives, the sharded embedding store, the trainer on N ranks)
// without launching processes, and for fault injection: a rank can be made silent (its messages
// are dropped, as if it hung) to test that peers time out with an error naming it.
//
// Example:
//   std::vector<Status> s = RunRanks(4, [](Communicator& comm) -> Status {
//     std::vector<float> g = {1.0f};
//     return comm.AllReduce(g, ReduceOp::kSum);   // g == {4} on every rank
//   });
//
// Thread safety: an InProcHub is thread-safe; each of its transports belongs to one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/dist/transport.h"

namespace rectrain::dist {

class InProcHub {
 public:
  // `world` >= 1 ranks.
  explicit InProcHub(int world);
  int world() const { return world_; }

  // The transport of `rank` (each rank's once; the hub must outlive it).
  std::unique_ptr<Transport> MakeTransport(int rank);

  // Fault injection: from now on every message `rank` sends is dropped (it looks hung).
  void Silence(int rank);

 private:
  friend class InProcTransport;
  struct Mailbox {
    std::deque<std::vector<std::byte>> messages;
  };
  Mailbox& box(int src, int dst) { return boxes_[static_cast<size_t>(src * world_ + dst)]; }

  const int world_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Mailbox> boxes_;      // guarded by mu_; [src * world + dst]
  // The asynchronous channel: one arrival-ordered queue per destination.
  std::vector<std::deque<std::pair<int, std::vector<std::byte>>>> posted_;  // guarded by mu_; [dst]
  std::vector<bool> silenced_;      // guarded by mu_
  std::string aborted_;             // guarded by mu_: non-empty once a rank called Abort()
};

struct RunRanksOptions {
  std::chrono::milliseconds timeout{30'000};  // each communicator's timeout
  // Called with the hub before the ranks start (fault injection).
  std::function<void(InProcHub&)> setup;
};

// Runs fn(comm) on `world` threads, one per rank, each with its own Communicator over one hub,
// and returns each rank's Status (index = rank) after all have returned.
std::vector<Status> RunRanks(int world, const std::function<Status(Communicator&)>& fn,
                             const RunRanksOptions& options = {});

}  // namespace rectrain::dist
