// rectrain/http/server.cc: see server.h. Binding, the option checks, and the public helpers;
// the request handling is internal/dispatcher.h, the connections internal/event_loop.h.
#include "rectrain/http/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "rectrain/http/internal/dispatcher.h"
#include "rectrain/http/internal/event_loop.h"

namespace rectrain::http {
namespace {

// A listening, non-blocking socket on host:port (port 0: any free one), and its port.
Result<std::pair<int, int>> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return UnavailableError("cannot bind " + where + ": " + gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      const int bound = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(addr).sin6_port
                                                          : reinterpret_cast<sockaddr_in&>(addr).sin_port);
      freeaddrinfo(found);
      return std::pair(fd, bound);
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return UnavailableError("cannot bind " + where + " (" + why + "; in use, or not an address of this machine)");
}

Status CheckOptions(const ServerOptions& o) {
  if (!IsLoopbackHost(o.host) && o.token.empty()) {
    return InvalidArgumentError("a token is required to bind to non-loopback address " + o.host +
                                " (anyone who can reach the port could " + o.unprotected_risk + ")");
  }
  if (!o.token.empty()) {
    RECTRAIN_RETURN_IF_ERROR(CheckToken(o.token));
  }
  if (o.max_body_bytes <= 0 || o.num_threads <= 0 || o.max_connections <= 0 || o.idle_timeout_ms <= 0 ||
      o.header_timeout_ms <= 0 || o.request_timeout_ms <= 0 || o.write_timeout_ms <= 0 || o.max_head_bytes < 256 ||
      o.max_target_bytes < 64) {
    return InvalidArgumentError(
        "max_body_bytes, num_threads, max_connections and the timeouts must be positive, max_head_bytes >= 256 "
        "and max_target_bytes >= 64");
  }
  rlimit files{};
  constexpr int kSpareFiles = 64;  // the process's own files, the listen socket, epoll
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(o.max_connections) + kSpareFiles > files.rlim_cur) {
    return InvalidArgumentError("max_connections " + std::to_string(o.max_connections) + " needs " +
                                std::to_string(o.max_connections + kSpareFiles) +
                                " open files, but this process may open " + std::to_string(files.rlim_cur) +
                                " (ulimit -n): raise the limit or lower max_connections");
  }
  return OkStatus();
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string h(host);
  std::transform(h.begin(), h.end(), h.begin(), [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  if (h == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

Status CheckToken(std::string_view token) {
  const bool allowed_chars = std::all_of(token.begin(), token.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
  });
  const size_t distinct = std::set<char>(token.begin(), token.end()).size();
  if (token.size() < 16 || token.size() > 256 || !allowed_chars || distinct < 8) {
    return InvalidArgumentError("the token must be 16 to 256 characters from A-Z a-z 0-9 - . _ ~ with at least 8 "
                                "different ones (e.g. `openssl rand -hex 16`); this one has " +
                                std::to_string(token.size()) + " characters, " + std::to_string(distinct) +
                                " different" + (allowed_chars ? "" : ", and others than those"));
  }
  return OkStatus();
}

int HttpStatusForCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kCancelled:
      return 499;
    case StatusCode::kUnimplemented:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kUnknown:
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
      return 500;
  }
  return 500;
}

std::string ErrorJson(const Status& status) {
  nlohmann::json j = {{"error",
                       {{"code", std::string(StatusCodeName(status.code()))},
                        {"message", status.message()}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> GenerateToken() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  static const char kHex[] = "0123456789abcdef";
  while (true) {  // fewer than 8 different hex digits in 32: about 1 in 10^7, drawn again
    unsigned char bytes[16];
    if (!in.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
      return UnavailableError("cannot read /dev/urandom to generate a token");
    }
    std::string out;
    for (unsigned char b : bytes) {
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
    if (CheckToken(out).ok()) return out;
  }
}

struct Server::Impl {
  ServerOptions options;
  int port = 0;
  std::unique_ptr<internal::Dispatcher> dispatcher;
  std::unique_ptr<internal::EventLoop> loop;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

int Server::port() const { return impl_->port; }

std::string Server::url() const {
  const std::string& h = impl_->options.host;
  bool v6 = h.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(impl_->port);
}

void Server::Stop() {
  if (impl_->loop) impl_->loop->Stop();
}

std::string RouteRequest::Param(std::string_view key) const {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return {};
}

bool RouteRequest::HasParam(std::string_view key) const {
  return std::any_of(query.begin(), query.end(), [&](const auto& kv) { return kv.first == key; });
}

std::vector<std::string> RouteRequest::ParamValues(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : query) {
    if (k == key) out.push_back(v);
  }
  return out;
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, prometheus::MetricsRegistry* registry) {
  RECTRAIN_RETURN_IF_ERROR(CheckOptions(options));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  RECTRAIN_ASSIGN_OR_RETURN(impl->dispatcher, internal::Dispatcher::Create(impl->options, registry));
  RECTRAIN_ASSIGN_OR_RETURN(auto listening, Listen(options.host, options.port));
  impl->port = listening.second;
  internal::LoopOptions lo;
  lo.limits.max_body_bytes = options.max_body_bytes;
  lo.limits.max_head_bytes = options.max_head_bytes;
  lo.limits.max_target_bytes = options.max_target_bytes;
  lo.num_threads = options.num_threads;
  lo.max_connections = options.max_connections;
  lo.keep_alive_max_requests = std::max(1, options.keep_alive_max_requests);
  lo.idle_timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  lo.header_timeout = std::chrono::milliseconds(options.header_timeout_ms);
  lo.request_timeout = std::chrono::milliseconds(options.request_timeout_ms);
  lo.write_timeout = std::chrono::milliseconds(options.write_timeout_ms);
  internal::Dispatcher* d = impl->dispatcher.get();
  auto loop = internal::EventLoop::Start(
      lo, listening.first, [d](const HttpRequest& r, const std::string& peer) { return d->Handle(r, peer); },
      [d](const HttpError& e) { return d->ErrorReply(e); }, registry);
  if (!loop.ok()) return loop.status();  // it closed the socket
  impl->loop = std::move(loop).value();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

}  // namespace rectrain::http
