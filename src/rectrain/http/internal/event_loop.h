// rectrain/http/internal/event_loop.h: PRIVATE to http/. The server's connections: one epoll
// set watched by `num_threads` worker threads. A connection is registered one-shot, so the
// worker that takes its event owns it alone: it reads what has arrived (non-blocking), feeds
// the connection's RequestParser, runs the handler for each complete request, writes the reply
// and re-arms the connection (or hands an unfinished write to EPOLLOUT). One acceptor thread
// admits new connections (the cap holds while every worker is busy) and every 50 ms closes those
// past their deadline (idle, header, request, write, linger).
// No thread ever waits on a client: an idle or slow connection costs a file descriptor and its
// buffers, not a thread.
//
// Ownership: `mu_` guards the connection table and each connection's `busy` flag; a worker
// holds a connection (busy) from its event to its re-arm, and only a connection that is not
// busy is closed by the acceptor or evicted at the cap. Epoll events carry a connection id
// (never reused), so an event for a connection closed meanwhile is recognised and dropped.
//
// Thread safety: Start/Stop from one thread; `handler` runs on the workers concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/http/request_parser.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"

namespace rectrain::http::internal {

struct LoopOptions {
  ParserLimits limits;
  int num_threads = 4;
  int max_connections = 512;
  int keep_alive_max_requests = 100;
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds request_timeout{60000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds linger_timeout{1000};  // after an error reply: wait for the client's FIN
};

class EventLoop {
 public:
  // The reply to a complete request from `peer`; an HttpError (parser refusal) gets `on_error`.
  using Handler = std::function<RouteReply(const HttpRequest& request, const std::string& peer)>;
  using ErrorHandler = std::function<RouteReply(const HttpError& error)>;

  // Takes ownership of `listen_fd` (bound, listening, non-blocking; closed here on an error
  // too) and starts the threads.
  // `registry` (may be null) gets the rectrain_http_connections* series.
  static Result<std::unique_ptr<EventLoop>> Start(const LoopOptions& options, int listen_fd, Handler handler,
                                                  ErrorHandler on_error, prometheus::MetricsRegistry* registry);
  ~EventLoop();  // Stop()

  // Stops accepting, lets the requests being handled finish (their replies close the
  // connection), closes every connection and joins the threads. Idempotent.
  void Stop();

  struct Conn;

 private:
  enum class Reason;  // why a connection was closed (a label of the closed counter)
  enum class Written { kAll, kPending, kClosed };
  using Clock = std::chrono::steady_clock;

  EventLoop() = default;
  void WorkerLoop();
  void AcceptorLoop();
  bool AcceptAll();  // false: out of file descriptors
  void Admit(int fd, std::string peer);
  Conn* Claim(uint64_t id);
  void Serve(Conn* c);
  void ReadAndServe(Conn* c);
  void ServeBuffered(Conn* c, bool eof);
  Written Respond(Conn* c, RouteReply reply, const HttpRequest* request, bool keep_alive);
  Written Flush(Conn* c);
  void AfterReply(Conn* c);
  void Rearm(Conn* c, uint32_t events, Clock::time_point deadline, Reason on_deadline);
  void Close(Conn* c, Reason reason);
  void Linger(Conn* c, Reason reason);
  void CloseAfterReply(Conn* c);
  void CloseExpired();
  void Counted(Reason reason);

  LoopOptions options_;
  Handler handler_;
  ErrorHandler on_error_;
  int epoll_fd_ = -1, listen_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;  // guarded by mu_
  uint64_t next_id_ = 16;                                        // guarded by mu_
  std::vector<std::thread> workers_;
  std::thread acceptor_;
  bool stopped_ = false;
  prometheus::Gauge* open_ = nullptr;
  std::vector<prometheus::Counter*> closed_;  // by Reason
};

}  // namespace rectrain::http::internal
