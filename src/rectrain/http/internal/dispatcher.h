// rectrain/http/internal/dispatcher.h: PRIVATE to http/. What the server does with a parsed
// request, without a socket: the gate (rate limit, Host check, token), the route table (the
// built-in /healthz and /metrics, then ServerOptions::routes), static files, error replies and
// the request counters. The event loop calls Handle() on its worker threads; the fuzz target
// and the tests call it directly.
//
// Thread safety: Handle() and ErrorReply() may run concurrently; the routes' handlers must be
// thread-safe (server.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/http/request_parser.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"

namespace rectrain::http::internal {

class RateLimiter;

class Dispatcher {
 public:
  // Checks the options (token, limits, routes) and compiles the route table. `registry` may be
  // null (no /metrics, no counters). Errors: those of Server::Start.
  static Result<std::unique_ptr<Dispatcher>> Create(const ServerOptions& options,
                                                    prometheus::MetricsRegistry* registry);
  ~Dispatcher();

  // The reply to a complete request from `peer` (an address, the rate limiter's key). HEAD is
  // answered as GET (the caller drops the body). Never throws: a handler's exception is a 500.
  RouteReply Handle(const HttpRequest& request, const std::string& peer);
  // The JSON reply to a request the parser refused; counted like the others.
  RouteReply ErrorReply(const HttpError& error);

 private:
  struct CompiledRoute {
    Route route;
    std::vector<std::string> segments;  // "{}" matches any one non-empty segment
  };
  Dispatcher() = default;
  RouteReply Dispatch(const HttpRequest& request, const std::string& peer);
  RouteReply ServeStatic(const std::string& path) const;
  bool Authorized(const HttpRequest& request, const RouteRequest& route_request) const;
  void Count(int status);

  ServerOptions options_;
  prometheus::MetricsRegistry* registry_ = nullptr;
  prometheus::Counter* requests_ok_ = nullptr;
  std::unique_ptr<RateLimiter> limiter_;
  std::filesystem::path static_root_;  // canonical; empty if none
  std::vector<CompiledRoute> routes_;
};

// Splits "/a/b/c" into {"a", "b", "c"} ("/" gives {""}).
std::vector<std::string_view> PathSegments(std::string_view path);

// Writes `reply` as an HTTP/1.1 response head (status line, Content-Type, Content-Length of
// `body_bytes`, the reply's headers, and "Connection: close" unless `keep_alive`, or
// "Connection: keep-alive" for an HTTP/1.0 client that keeps it).
std::string ResponseHead(const RouteReply& reply, size_t body_bytes, bool keep_alive, int minor_version);

}  // namespace rectrain::http::internal
