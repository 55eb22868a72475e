#include "rectrain/dist/mpi_transport.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <list>
#include <thread>
#include <vector>

namespace rectrain::dist::internal {
namespace {

// MPI counts are int: larger messages go as several pieces (both sides split identically).
constexpr int64_t kMaxPieceBytes = int64_t{1} << 30;

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

// Finalises MPI at process exit, after every communicator is gone.
struct MpiSession {
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int rank, int world) : comm_(comm), rank_(rank), world_(world) {}
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "mpi"; }

  Status Exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                  Clock::time_point deadline) override {
    requests_.clear();
    recv_peer_.clear();
    expected_.clear();
    for (const RecvOp& r : recvs) {
      for (int64_t off = 0; off < r.bytes || (off == 0 && r.bytes == 0); off += kMaxPieceBytes) {
        const int n = static_cast<int>(std::min(kMaxPieceBytes, r.bytes - off));
        MPI_Request req;
        const int rc = MPI_Irecv(static_cast<char*>(r.data) + off, n, MPI_BYTE, r.peer, 0, comm_, &req);
        if (rc != MPI_SUCCESS) return UnavailableError("MPI_Irecv from rank " + std::to_string(r.peer) + ": " + MpiError(rc));
        requests_.push_back(req);
        recv_peer_.push_back(r.peer);
        expected_.push_back(n);
        if (r.bytes == 0) break;
      }
    }
    const size_t num_recv = requests_.size();
    for (const SendOp& s : sends) {
      for (int64_t off = 0; off < s.bytes || (off == 0 && s.bytes == 0); off += kMaxPieceBytes) {
        const int n = static_cast<int>(std::min(kMaxPieceBytes, s.bytes - off));
        MPI_Request req;
        const int rc = MPI_Isend(static_cast<const char*>(s.data) + off, n, MPI_BYTE, s.peer, 0, comm_, &req);
        if (rc != MPI_SUCCESS) return UnavailableError("MPI_Isend to rank " + std::to_string(s.peer) + ": " + MpiError(rc));
        requests_.push_back(req);
        if (s.bytes == 0) break;
      }
    }
    // Poll: spin for 2 ms plus the time the bytes take at 1 GB/s (an exchange inside a step is
    // short; sleeping adds the timer's granularity to every round — 300 us per round was measured
    // with 100 us sleeps — and stalls the shared-memory transfer of large messages, which moves
    // only while we call into MPI), then back off from 20 us up to 1 ms for a slow peer.
    statuses_.resize(requests_.size());
    int64_t bytes = 0;
    for (const SendOp& op : sends) bytes += op.bytes;
    for (const RecvOp& op : recvs) bytes += op.bytes;
    const Clock::time_point spin_until = Clock::now() + std::chrono::microseconds(2000 + bytes / 1000);
    int64_t polls = 0;
    int64_t sleep_us = 20;
    while (true) {
      int flag = 0;
      const int rc = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, statuses_.data());
      if (rc != MPI_SUCCESS) {
        for (size_t i = 0; i < requests_.size(); ++i) {
          if (statuses_[i].MPI_ERROR != MPI_SUCCESS && statuses_[i].MPI_ERROR != MPI_ERR_PENDING) {
            const int peer = i < num_recv ? recv_peer_[i] : -1;
            return UnavailableError("MPI error " + std::string(peer >= 0 ? "receiving from rank " + std::to_string(peer) : "sending") +
                                    ": " + MpiError(statuses_[i].MPI_ERROR) + " (the peer's process may have ended)");
          }
        }
        return UnavailableError("MPI_Testall: " + MpiError(rc));
      }
      if (flag) break;
      if (Clock::now() >= deadline) {
        std::string missing;
        std::vector<bool> named(static_cast<size_t>(world_), false);
        for (size_t i = 0; i < num_recv; ++i) {
          int done = 0;
          MPI_Status st;
          MPI_Test(&requests_[i], &done, &st);
          if (done || named[static_cast<size_t>(recv_peer_[i])]) continue;
          named[static_cast<size_t>(recv_peer_[i])] = true;
          missing += (missing.empty() ? "" : ", ") + std::to_string(recv_peer_[i]);
        }
        if (missing.empty()) missing = "any peer (a send did not complete)";
        return DeadlineExceededError("no message from rank " + missing +
                                     " before the timeout (it may have died, hung or run out of memory; "
                                     "dist.timeout_s sets the limit)");
      }
      if ((++polls & 63) == 0 && Clock::now() > spin_until) {
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        sleep_us = std::min<int64_t>(1000, sleep_us * 2);
      }
    }
    for (size_t i = 0; i < num_recv; ++i) {
      int got = 0;
      MPI_Get_count(&statuses_[i], MPI_BYTE, &got);
      if (got != expected_[i]) {
        return InternalError("message of " + std::to_string(got) + " bytes from rank " + std::to_string(recv_peer_[i]) +
                             " where " + std::to_string(expected_[i]) +
                             " were expected (the ranks disagree about the protocol: same binary and config everywhere?)");
      }
    }
    return OkStatus();
  }

  void Abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

  // The asynchronous channel: tag 1 (the collectives use tag 0), sends from owned copies.
  Status Post(int peer, std::span<const std::byte> bytes) override {
    if (bytes.size() > static_cast<size_t>(kMaxPieceBytes)) {
      return InvalidArgumentError("an asynchronous message of " + std::to_string(bytes.size()) + " bytes (at most 1 GiB)");
    }
    RECTRAIN_RETURN_IF_ERROR(ReapPosts());
    posts_.push_back(Pending{std::vector<std::byte>(bytes.begin(), bytes.end()), MPI_REQUEST_NULL});
    Pending& p = posts_.back();
    const int rc = MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, peer, kAsyncTag, comm_, &p.request);
    if (rc != MPI_SUCCESS) return UnavailableError("MPI_Isend to rank " + std::to_string(peer) + ": " + MpiError(rc));
    return OkStatus();
  }

  Status Receive(Clock::time_point deadline, Message* out) override {
    const Clock::time_point spin_until = Clock::now() + std::chrono::milliseconds(2);
    int64_t sleep_us = 20;
    int64_t polls = 0;
    while (true) {
      RECTRAIN_RETURN_IF_ERROR(ReapPosts());
      int flag = 0;
      MPI_Status st;
      int rc = MPI_Iprobe(MPI_ANY_SOURCE, kAsyncTag, comm_, &flag, &st);
      if (rc != MPI_SUCCESS) return UnavailableError("MPI_Iprobe: " + MpiError(rc));
      if (flag) {
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        out->peer = st.MPI_SOURCE;
        out->bytes.resize(static_cast<size_t>(n));
        rc = MPI_Recv(out->bytes.data(), n, MPI_BYTE, st.MPI_SOURCE, kAsyncTag, comm_, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          return UnavailableError("MPI_Recv from rank " + std::to_string(st.MPI_SOURCE) + ": " + MpiError(rc));
        }
        return OkStatus();
      }
      if (Clock::now() >= deadline) {
        return DeadlineExceededError("no message from any rank before the timeout (a peer may have died, hung or run "
                                     "out of memory; dist.timeout_s sets the limit)");
      }
      if ((++polls & 63) == 0 && Clock::now() > spin_until) {
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        sleep_us = std::min<int64_t>(1000, sleep_us * 2);
      }
    }
  }

  Status Flush(Clock::time_point deadline) override {
    while (!posts_.empty()) {
      RECTRAIN_RETURN_IF_ERROR(ReapPosts());
      if (posts_.empty()) break;
      if (Clock::now() >= deadline) {
        return DeadlineExceededError(std::to_string(posts_.size()) + " asynchronous message(s) not taken by their peers "
                                     "before the timeout");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return OkStatus();
  }

 private:
  static constexpr int kAsyncTag = 1;
  struct Pending {
    std::vector<std::byte> bytes;
    MPI_Request request;
  };
  // Frees the copies of posts that have left.
  Status ReapPosts() {
    for (auto it = posts_.begin(); it != posts_.end();) {
      int done = 0;
      const int rc = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return UnavailableError("MPI_Test of an asynchronous send: " + MpiError(rc));
      it = done ? posts_.erase(it) : std::next(it);
    }
    return OkStatus();
  }
  std::list<Pending> posts_;

  MPI_Comm comm_;
  int rank_;
  int world_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  std::vector<int> recv_peer_;
  std::vector<int> expected_;
};

}  // namespace

Result<std::unique_ptr<Transport>> StartMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return UnavailableError("MPI_Init_thread failed: " + MpiError(rc));
    static MpiSession session;  // finalises at exit
    (void)session;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  return std::unique_ptr<Transport>(std::make_unique<MpiTransport>(comm, rank, world));
}

std::string MpiVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(len));
  // The first clause ("Open MPI v4.1.4", "MPICH Version: 4.0.2"); len may count a trailing NUL.
  const size_t end = s.find_first_of(std::string("\r\n,\0", 4));
  if (end != std::string::npos) s.resize(end);
  while (!s.empty() && (s.back() == ',' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace rectrain::dist::internal
