#include "rectrain/dist/inproc.h"

#include <cstring>
#include <thread>

namespace rectrain::dist {

class InProcTransport final : public Transport {
 public:
  InProcTransport(InProcHub* hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return hub_->world(); }
  std::string name() const override { return "inproc"; }

  Status Exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                  Clock::time_point deadline) override {
    std::unique_lock<std::mutex> lock(hub_->mu_);
    if (!hub_->aborted_.empty()) return Status(StatusCode::kAborted, hub_->aborted_);
    if (!hub_->silenced_[static_cast<size_t>(rank_)]) {
      for (const SendOp& s : sends) {
        const auto* p = static_cast<const std::byte*>(s.data);
        hub_->box(rank_, s.peer).messages.emplace_back(p, p + s.bytes);
      }
    }
    hub_->cv_.notify_all();
    std::vector<bool> done(recvs.size(), false);
    size_t remaining = recvs.size();
    while (remaining > 0) {
      for (size_t i = 0; i < recvs.size(); ++i) {
        if (done[i]) continue;
        // Messages from one peer are matched in order: only the first pending receive per peer
        // may take the front message.
        bool earlier_pending = false;
        for (size_t j = 0; j < i; ++j) earlier_pending |= !done[j] && recvs[j].peer == recvs[i].peer;
        if (earlier_pending) continue;
        auto& q = hub_->box(recvs[i].peer, rank_).messages;
        if (q.empty()) continue;
        std::vector<std::byte> m = std::move(q.front());
        q.pop_front();
        if (static_cast<int64_t>(m.size()) != recvs[i].bytes) {
          return InternalError("message of " + std::to_string(m.size()) + " bytes from rank " +
                               std::to_string(recvs[i].peer) + " where " + std::to_string(recvs[i].bytes) +
                               " were expected (the ranks disagree about the protocol)");
        }
        if (!m.empty()) std::memcpy(recvs[i].data, m.data(), m.size());
        done[i] = true;
        --remaining;
      }
      if (remaining == 0) break;
      if (!hub_->aborted_.empty()) return Status(StatusCode::kAborted, hub_->aborted_);
      if (hub_->cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        // One last look, then name the peers that did not deliver.
        bool progress = false;
        for (size_t i = 0; i < recvs.size() && !progress; ++i) {
          progress = !done[i] && !hub_->box(recvs[i].peer, rank_).messages.empty();
        }
        if (progress) continue;
        std::string missing;
        std::vector<bool> named(static_cast<size_t>(world()), false);
        for (size_t i = 0; i < recvs.size(); ++i) {
          if (done[i] || named[static_cast<size_t>(recvs[i].peer)]) continue;
          named[static_cast<size_t>(recvs[i].peer)] = true;
          missing += (missing.empty() ? "" : ", ") + std::to_string(recvs[i].peer);
        }
        return DeadlineExceededError("no message from rank " + missing +
                                     " before the timeout (it may have died, hung or run out of memory; "
                                     "dist.timeout_s sets the limit)");
      }
    }
    return OkStatus();
  }

  Status Post(int peer, std::span<const std::byte> bytes) override {
    std::lock_guard<std::mutex> lock(hub_->mu_);
    if (!hub_->aborted_.empty()) return Status(StatusCode::kAborted, hub_->aborted_);
    if (!hub_->silenced_[static_cast<size_t>(rank_)]) {
      hub_->posted_[static_cast<size_t>(peer)].emplace_back(rank_, std::vector<std::byte>(bytes.begin(), bytes.end()));
    }
    hub_->cv_.notify_all();
    return OkStatus();
  }

  Status Receive(Clock::time_point deadline, Message* out) override {
    std::unique_lock<std::mutex> lock(hub_->mu_);
    auto& q = hub_->posted_[static_cast<size_t>(rank_)];
    while (q.empty()) {
      if (!hub_->aborted_.empty()) return Status(StatusCode::kAborted, hub_->aborted_);
      if (hub_->cv_.wait_until(lock, deadline) == std::cv_status::timeout && q.empty()) {
        return DeadlineExceededError("no message from any rank before the timeout (a peer may have died, hung or run "
                                     "out of memory; dist.timeout_s sets the limit)");
      }
    }
    out->peer = q.front().first;
    out->bytes = std::move(q.front().second);
    q.pop_front();
    return OkStatus();
  }

  Status Flush(Clock::time_point) override { return OkStatus(); }  // posts are delivered at once

  void Abort(int exit_code) override {
    std::lock_guard<std::mutex> lock(hub_->mu_);
    if (hub_->aborted_.empty()) {
      hub_->aborted_ = "rank " + std::to_string(rank_) + " failed and ended the job (exit code " +
                       std::to_string(exit_code) + "; its log has the error)";
    }
    hub_->cv_.notify_all();
  }

 private:
  InProcHub* hub_;
  int rank_;
};

InProcHub::InProcHub(int world)
    : world_(world),
      boxes_(static_cast<size_t>(world * world)),
      posted_(static_cast<size_t>(world)),
      silenced_(static_cast<size_t>(world), false) {}

std::unique_ptr<Transport> InProcHub::MakeTransport(int rank) {
  return std::make_unique<InProcTransport>(this, rank);
}

void InProcHub::Silence(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  silenced_[static_cast<size_t>(rank)] = true;
}

std::vector<Status> RunRanks(int world, const std::function<Status(Communicator&)>& fn,
                             const RunRanksOptions& options) {
  InProcHub hub(world);
  if (options.setup) options.setup(hub);
  std::vector<Status> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator comm(hub.MakeTransport(r));
      comm.set_timeout(options.timeout);
      out[static_cast<size_t>(r)] = fn(comm);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace rectrain::dist
