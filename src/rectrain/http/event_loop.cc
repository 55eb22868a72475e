// rectrain/http/event_loop.cc: see internal/event_loop.h.
#include "rectrain/http/internal/event_loop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <condition_variable>

#include "rectrain/http/internal/dispatcher.h"

namespace rectrain::http::internal {
namespace {

constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadBudget = 256 << 10;  // per event, so one fast uploader cannot hog a worker
constexpr int kAcceptBatch = 64;
constexpr auto kHousekeepingPeriod = std::chrono::milliseconds(50);

std::string PeerName(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, buf, sizeof(buf));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// Sends all of `data` on a fresh socket (its buffer is empty) or gives up: for the canned
// replies to connections the server does not keep.
void SendBestEffort(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

enum class EventLoop::Reason {
  kClient,          // the client closed it (or reset it)
  kIdleTimeout,     // no request for idle_timeout
  kHeaderTimeout,   // a request's head took longer than header_timeout (408)
  kRequestTimeout,  // a request's body took longer than request_timeout (408)
  kWriteTimeout,    // the client did not take a reply within write_timeout
  kEvicted,         // closed at the connection cap to admit a new one
  kRefused,         // a new connection at the cap with none to evict (503), or out of descriptors
  kBadRequest,      // the parser refused a request (4xx/5xx, then closed)
  kServer,          // "Connection: close", HTTP/1.0, keep_alive_max_requests
  kIoError,         // a socket error
  kStopped,         // the server stopped
  kCount,
};

namespace {
constexpr const char* kReasonNames[] = {"client",      "idle_timeout", "header_timeout", "request_timeout",
                                        "write_timeout", "evicted",    "refused",        "bad_request",
                                        "server",      "io_error",     "stopped"};
}  // namespace

struct EventLoop::Conn {
  Conn(uint64_t id_in, int fd_in, std::string peer_in, const ParserLimits& limits)
      : id(id_in), fd(fd_in), peer(std::move(peer_in)), parser(limits) {}
  enum class Phase { kRead, kWrite, kLinger };

  const uint64_t id;
  const int fd;
  const std::string peer;
  RequestParser parser;
  std::string in;                    // received, not yet parsed (a partial line, or pipelined requests)
  std::string head, body;            // the reply being written
  size_t written = 0;                // bytes of head + body sent
  Phase phase = Phase::kRead;
  bool close_after = false;          // close once the reply is written
  bool linger_after = false;         // ... lingering (unread bytes may follow)
  int requests = 0;                  // replies on this connection
  Clock::time_point request_start{};  // first byte of the request being read; {} if none
  // Guarded by EventLoop::mu_:
  bool busy = true;                  // a worker owns it
  Clock::time_point deadline{};
  Reason on_deadline = Reason::kIdleTimeout;
};

Result<std::unique_ptr<EventLoop>> EventLoop::Start(const LoopOptions& options, int listen_fd, Handler handler,
                                                    ErrorHandler on_error, prometheus::MetricsRegistry* registry) {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  loop->stopped_ = true;  // until the threads run: the destructor has nothing to stop
  loop->options_ = options;
  loop->handler_ = std::move(handler);
  loop->on_error_ = std::move(on_error);
  loop->listen_fd_ = listen_fd;
  auto fail = [&](Status status) {
    for (int fd : {loop->listen_fd_, loop->epoll_fd_, loop->wake_fd_}) {
      if (fd >= 0) close(fd);
    }
    return status;
  };
  if (registry != nullptr) {
    Result<prometheus::Gauge*> open = registry->GetGauge("rectrain_http_connections_open", "Open HTTP connections.");
    if (!open.ok()) return fail(open.status());
    loop->open_ = *open;
    for (const char* reason : kReasonNames) {
      Result<prometheus::Counter*> c = registry->GetCounter(
          "rectrain_http_connections_closed_total",
          "HTTP connections closed, by reason (refused: turned away at the connection cap).", {{"reason", reason}});
      if (!c.ok()) return fail(c.status());
      loop->closed_.push_back(*c);
    }
  }
  loop->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  loop->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wake_ev{EPOLLIN, {.u64 = kWakeId}};  // level-triggered: wakes every worker at Stop
  if (loop->epoll_fd_ < 0 || loop->wake_fd_ < 0 || epoll_ctl(loop->epoll_fd_, EPOLL_CTL_ADD, loop->wake_fd_, &wake_ev) != 0) {
    return fail(UnavailableError(std::string("cannot create the server's epoll set: ") + std::strerror(errno)));
  }
  loop->stopped_ = false;
  for (int i = 0; i < options.num_threads; ++i) loop->workers_.emplace_back([l = loop.get()] { l->WorkerLoop(); });
  loop->acceptor_ = std::thread([l = loop.get()] { l->AcceptorLoop(); });
  return loop;
}

EventLoop::~EventLoop() { Stop(); }

void EventLoop::Stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));  // an eventfd write of 1 cannot fail here
  for (std::thread& t : workers_) t.join();
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard lock(mu_);
  for (auto& [id, c] : conns_) {
    close(c->fd);
    Counted(Reason::kStopped);
  }
  conns_.clear();
  close(listen_fd_);
  close(wake_fd_);
  close(epoll_fd_);
}

void EventLoop::Counted(Reason reason) {
  if (!closed_.empty()) closed_[static_cast<size_t>(reason)]->Increment();
}

void EventLoop::WorkerLoop() {
  while (!stopping_) {
    epoll_event ev{};
    // One event at a time: a worker busy in a slow handler holds no other connection's event.
    const int n = epoll_wait(epoll_fd_, &ev, 1, -1);
    if (n <= 0 || stopping_) continue;
    if (ev.data.u64 == kWakeId) continue;
    if (Conn* c = Claim(ev.data.u64)) Serve(c);
  }
}

// Accepts connections (so that admission, the cap and its 503 keep working while every worker
// is busy in a handler) and closes those past their deadline, every kHousekeepingPeriod.
void EventLoop::AcceptorLoop() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  auto next_scan = Clock::now() + kHousekeepingPeriod;
  auto paused_until = Clock::time_point{};
  while (!stopping_) {
    const auto now = Clock::now();
    fds[0].events = now < paused_until ? 0 : POLLIN;
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_scan - now).count();
    const int n = poll(fds, 2, static_cast<int>(std::max<int64_t>(0, wait)));
    if (stopping_) break;
    if (n > 0 && (fds[0].revents & POLLIN) != 0 && !AcceptAll()) {
      // Out of descriptors: the pending connections stay queued; try again after a pause
      // instead of spinning on a listen socket that stays readable.
      paused_until = Clock::now() + kHousekeepingPeriod;
    }
    if (Clock::now() >= next_scan) {
      CloseExpired();
      next_scan = Clock::now() + kHousekeepingPeriod;
    }
  }
}

bool EventLoop::AcceptAll() {
  for (int i = 0; i < kAcceptBatch && !stopping_; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd, PeerName(addr));
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      Counted(Reason::kRefused);
      return false;
    }
    break;  // EAGAIN: accepted all
  }
  return true;
}

void EventLoop::Admit(int fd, std::string peer) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // replies go out as head + body
  int victim_fd = -1;
  {
    std::lock_guard lock(mu_);
    if (static_cast<int>(conns_.size()) >= options_.max_connections) {
      // The connection waiting longest for its (next) request makes room; one being handled or
      // written to is never dropped.
      Conn* victim = nullptr;
      for (auto& [id, c] : conns_) {
        if (c->busy || c->phase != Conn::Phase::kRead) continue;
        const auto rank = [](const Conn* x) { return std::pair(!x->parser.idle(), x->deadline); };
        if (victim == nullptr || rank(c.get()) < rank(victim)) victim = c.get();
      }
      if (victim == nullptr) {
        Counted(Reason::kRefused);
        const std::string body = ErrorJson(UnavailableError(
            "the server has " + std::to_string(conns_.size()) +
            " connections open, its limit (max_connections), all busy; retry later"));
        RouteReply reply{503, body, "application/json", {{"Retry-After", "1"}}};
        SendBestEffort(fd, ResponseHead(reply, body.size(), false, 1) + body);
        close(fd);
        return;
      }
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, victim->fd, nullptr);
      victim_fd = victim->fd;
      conns_.erase(victim->id);
      Counted(Reason::kEvicted);
      if (open_ != nullptr) open_->Add(-1);
    }
    const uint64_t id = next_id_++;
    auto conn = std::make_unique<Conn>(id, fd, std::move(peer), options_.limits);
    conn->busy = false;
    conn->deadline = Clock::now() + options_.idle_timeout;
    conn->on_deadline = Reason::kIdleTimeout;
    epoll_event ev{EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, {.u64 = id}};
    conns_.emplace(id, std::move(conn));
    if (open_ != nullptr) open_->Add(1);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  if (victim_fd >= 0) close(victim_fd);
}

EventLoop::Conn* EventLoop::Claim(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second->busy) return nullptr;  // closed meanwhile
  it->second->busy = true;
  return it->second.get();
}

void EventLoop::Rearm(Conn* c, uint32_t events, Clock::time_point deadline, Reason on_deadline) {
  std::lock_guard lock(mu_);
  c->deadline = deadline;
  c->on_deadline = on_deadline;
  c->busy = false;
  epoll_event ev{events | EPOLLRDHUP | EPOLLONESHOT, {.u64 = c->id}};
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void EventLoop::Close(Conn* c, Reason reason) {
  const int fd = c->fd;
  {
    std::lock_guard lock(mu_);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    conns_.erase(c->id);  // destroys *c
    if (open_ != nullptr) open_->Add(-1);
  }
  close(fd);
  Counted(reason);
}

// The reply is out but the client may still be sending (a refused body): stop writing, read
// and drop what arrives until it closes or linger_timeout passes, so that closing does not
// reset the connection before the client has read the reply.
void EventLoop::Linger(Conn* c, Reason reason) {
  shutdown(c->fd, SHUT_WR);
  c->phase = Conn::Phase::kLinger;
  Rearm(c, EPOLLIN, Clock::now() + options_.linger_timeout, reason);
}

void EventLoop::CloseAfterReply(Conn* c) {
  const Reason reason = c->linger_after ? Reason::kBadRequest : Reason::kServer;
  if (c->linger_after || !c->in.empty()) return Linger(c, reason);
  Close(c, reason);
}

void EventLoop::CloseExpired() {
  std::vector<std::pair<int, Reason>> expired;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = *it->second;
      if (c.busy || now < c.deadline) {
        ++it;
        continue;
      }
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
      expired.emplace_back(c.fd, c.on_deadline);
      if (open_ != nullptr) open_->Add(-1);
      it = conns_.erase(it);
    }
  }
  for (auto [fd, reason] : expired) {
    if (reason == Reason::kHeaderTimeout || reason == Reason::kRequestTimeout) {
      const std::string body = ErrorJson(DeadlineExceededError(
          reason == Reason::kHeaderTimeout
              ? "the request head did not arrive within " + std::to_string(options_.header_timeout.count()) + " ms"
              : "the request did not arrive within " + std::to_string(options_.request_timeout.count()) + " ms"));
      RouteReply reply{408, body, "application/json", {}};
      SendBestEffort(fd, ResponseHead(reply, body.size(), false, 1) + body);
    }
    close(fd);
    Counted(reason);
  }
}

void EventLoop::Serve(Conn* c) {
  switch (c->phase) {
    case Conn::Phase::kWrite:
      if (Flush(c) == Written::kAll) AfterReply(c);
      return;
    case Conn::Phase::kLinger: {
      char scratch[4096];
      ssize_t n;
      while ((n = read(c->fd, scratch, sizeof(scratch))) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) return Close(c, c->on_deadline);
      std::lock_guard lock(mu_);  // keep the linger deadline
      c->busy = false;
      epoll_event ev{EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, {.u64 = c->id}};
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
      return;
    }
    case Conn::Phase::kRead:
      ReadAndServe(c);
      return;
  }
}

void EventLoop::ReadAndServe(Conn* c) {
  bool eof = false;
  char scratch[kReadChunk];
  for (size_t budget = kReadBudget; budget > 0;) {
    const ssize_t n = read(c->fd, scratch, std::min(sizeof(scratch), budget));
    if (n > 0) {
      c->in.append(scratch, static_cast<size_t>(n));
      budget -= static_cast<size_t>(n);
      if (static_cast<size_t>(n) < sizeof(scratch)) break;  // drained (the next read would say EAGAIN)
      continue;
    }
    if (n == 0) {
      eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return Close(c, errno == ECONNRESET ? Reason::kClient : Reason::kIoError);
  }
  ServeBuffered(c, eof);
}

// Parses and answers every complete request in c->in (pipelined requests in order), then
// waits for more bytes, or closes.
void EventLoop::ServeBuffered(Conn* c, bool eof) {
  while (true) {
    const ParseResult r = c->parser.Parse(&c->in);
    const auto now = Clock::now();
    if (!c->parser.idle() && c->request_start == Clock::time_point{}) c->request_start = now;
    if (r == ParseResult::kNeedMore) {
      if (eof) return Close(c, Reason::kClient);
      if (c->parser.ShouldSendContinue()) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        if (send(c->fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
            static_cast<ssize_t>(kContinue.size())) {
          return Close(c, Reason::kIoError);
        }
        c->parser.ContinueSent();
      }
      if (c->parser.idle()) return Rearm(c, EPOLLIN, now + options_.idle_timeout, Reason::kIdleTimeout);
      const bool head = !c->parser.head_done();
      const auto deadline = c->request_start + (head ? options_.header_timeout : options_.request_timeout);
      return Rearm(c, EPOLLIN, deadline, head ? Reason::kHeaderTimeout : Reason::kRequestTimeout);
    }
    Written w;
    if (r == ParseResult::kError) {
      c->linger_after = true;
      w = Respond(c, on_error_(c->parser.error()), nullptr, false);
    } else {
      HttpRequest& request = c->parser.request();
      const bool keep = request.keep_alive && !stopping_ && c->requests + 1 < options_.keep_alive_max_requests;
      w = Respond(c, handler_(request, c->peer), &request, keep);
    }
    if (w != Written::kAll) return;
    if (c->close_after) return CloseAfterReply(c);
  }
}

EventLoop::Written EventLoop::Respond(Conn* c, RouteReply reply, const HttpRequest* request, bool keep_alive) {
  const bool head_only = request != nullptr && request->method == "HEAD";
  c->head = ResponseHead(reply, reply.body.size(), keep_alive, request != nullptr ? request->minor_version : 1);
  c->body = head_only ? std::string() : std::move(reply.body);
  c->written = 0;
  c->close_after = !keep_alive;
  c->requests++;
  c->request_start = {};
  c->parser.Reset();
  return Flush(c);
}

EventLoop::Written EventLoop::Flush(Conn* c) {
  while (c->written < c->head.size() + c->body.size()) {
    iovec iov[2];
    int count = 0;
    if (c->written < c->head.size()) {
      iov[count++] = {c->head.data() + c->written, c->head.size() - c->written};
      iov[count++] = {c->body.data(), c->body.size()};
    } else {
      const size_t off = c->written - c->head.size();
      iov[count++] = {c->body.data() + off, c->body.size() - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      c->written += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      Close(c, errno == EPIPE || errno == ECONNRESET ? Reason::kClient : Reason::kIoError);
      return Written::kClosed;
    }
    if (stopping_) {  // no worker will come back for it: wait here, bounded
      pollfd p{c->fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(options_.write_timeout.count())) == 1) continue;
      Close(c, Reason::kWriteTimeout);
      return Written::kClosed;
    }
    c->phase = Conn::Phase::kWrite;
    Rearm(c, EPOLLOUT, Clock::now() + options_.write_timeout, Reason::kWriteTimeout);
    return Written::kPending;
  }
  c->head.clear();
  c->body = std::string();
  c->phase = Conn::Phase::kRead;
  return Written::kAll;
}

void EventLoop::AfterReply(Conn* c) {
  if (c->close_after) return CloseAfterReply(c);
  ServeBuffered(c, false);
}

}  // namespace rectrain::http::internal
