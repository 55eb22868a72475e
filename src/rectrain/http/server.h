// rectrain/http/server.h: the small HTTP/1.1 server every long-running rectrain process can run
// (our own: an epoll event loop, request_parser.h, a pool of worker threads; decision and
// measurements in docs/decisions/0008-own-http-server.md). It serves:
//   GET  /metrics                    Prometheus text exposition of a prometheus::MetricsRegistry
//   GET  /healthz                    {"ok":true}
//   ServerOptions::routes            given by the process that runs the server: `rectrain serve`
//                                    /v1/predict, ...; `rectrain ui` the tracking REST API
//                                    (webui/tracking_api.h)
//   GET  /<file>                     static files from ServerOptions::static_dir ("/" ->
//                                    index.html); paths escaping the directory are refused (403)
// HEAD is answered as GET. Errors are JSON: {"error":{"code":"NOT_FOUND","message":"run 42 not
// found"}} with the HTTP status from HttpStatusForCode(); a path under /api/ that no route
// matches is a JSON 404 too ("no API route GET /api/x").
//
// Security: binds 127.0.0.1 by default. A non-loopback bind requires a token (CheckToken),
// checked on every route but the public ones (/healthz, static files, Route::public_route) as
// "Authorization: Bearer <token>" or "?token=<token>". Without a token (loopback), requests
// must carry a loopback Host header, which defeats DNS rebinding. Each client address is rate
// limited (token bucket) with 429 + Retry-After.
//
// Limits (docs/serving.md "Limits"): request parsing as in request_parser.h (body, head,
// target); at most max_connections open connections (at the cap, the connection idle longest
// is closed to admit a new one; with none idle the new one gets 503); a connection that sends
// no request for idle_timeout_ms is closed; a request must deliver its head within
// header_timeout_ms and its body within request_timeout_ms of its first byte (else 408); a
// reply must be taken by the client within write_timeout_ms. An idle connection holds no
// thread: only the requests being handled hold one of num_threads workers. Refused and closed
// connections are counted in rectrain_http_connections_closed_total{reason}.
//
// Thread safety: Start/Stop from one thread. Handlers run on the server's worker threads,
// concurrently; the registry and what the routes read must be thread-safe and outlive the Server.
//
// Example (what `rectrain ui` does):
//   http::ServerOptions opts;  opts.port = 8080;  opts.static_dir = "/usr/share/rectrain/ui";
//   opts.routes = webui::TrackingApiRoutes(store.get(), {});
//   RECTRAIN_ASSIGN_OR_RETURN(auto server, http::Server::Start(opts, &registry));
//   std::cout << "serving on " << server->url() << "\n";  ...  server->Stop();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/prometheus/registry.h"

namespace rectrain::http {

// A route added by the process that runs the server (`rectrain serve`: /v1/predict, /readyz,
// ...): a path pattern, answered by `handler` on a worker thread. It passes the gate (rate
// limit, Host check, and the token unless `public_route`). The views in a RouteRequest live
// until the handler returns.
struct RouteRequest {
  std::string_view body;
  std::string_view content_type;
  std::string_view method;                    // the route's method (GET for a HEAD request)
  std::string_view path;                      // percent-decoded
  std::vector<std::string_view> path_params;  // the {name} segments of Route::path, in order
  std::span<const std::pair<std::string, std::string>> query;  // decoded, in order

  bool HasParam(std::string_view key) const;
  std::string Param(std::string_view key) const;  // the first value; "" if absent
  std::vector<std::string> ParamValues(std::string_view key) const;
};
struct RouteReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};
struct Route {
  std::string method;  // GET | POST | DELETE
  // "/v1/predict", or with {name} segments that match one path segment each:
  // "/api/runs/{id}/metrics" (the handler reads them from RouteRequest::path_params).
  std::string path;
  std::function<RouteReply(const RouteRequest&)> handler;
  bool public_route = false;  // true: no token needed (health and readiness probes)
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: any free port (see Server::port()).
  std::string token;                     // Required for non-loopback hosts.
  std::string static_dir;                // "" = no static files.
  int64_t max_body_bytes = 1 << 20;      // Larger requests get 413 (chunked ones too).
  double rate_limit_per_s = 200.0;       // Per client address; <= 0 disables.
  double rate_limit_burst = 400.0;       // Bucket size.
  int num_threads = 4;                   // Worker threads: requests handled at once.
  // Requests one keep-alive connection may carry before the server closes it.
  int keep_alive_max_requests = 100;
  int max_connections = 512;             // Open connections at most (see the top comment).
  int64_t idle_timeout_ms = 5000;        // A connection without a request in progress.
  int64_t header_timeout_ms = 10000;     // From a request's first byte to the end of its head.
  int64_t request_timeout_ms = 60000;    // From a request's first byte to the end of its body.
  int64_t write_timeout_ms = 10000;      // For the client to take a reply.
  int64_t max_head_bytes = 16 << 10;     // Request line + headers (431 above).
  int64_t max_target_bytes = 8 << 10;    // Request target (414 above).
  // What anyone who can reach a non-loopback port could do without a token, for the error
  // that asks for one ("read and delete runs" for `rectrain ui`).
  std::string unprotected_risk = "use every route of this server";
  std::vector<Route> routes;             // extra routes (see Route); matched before static files
};

class Server {
 public:
  // Binds and starts serving in background threads; returns once the server accepts
  // connections. `registry` may be null: /metrics then answers 404. Errors: InvalidArgument
  // for a missing token on a non-loopback host, a token CheckToken refuses, a limit out of range, a route
  // with another method than GET/POST/DELETE or a malformed path, or more connections than
  // the process may open files; Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                               prometheus::MetricsRegistry* registry);
  ~Server();  // Stops.
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  // "http://127.0.0.1:<port>" (IPv6 hosts in brackets).
  std::string url() const;
  // Stops accepting, finishes in-flight requests and joins. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for "localhost" (any case), 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 (a host without
// port or brackets; "[::1]" is accepted too).
bool IsLoopbackHost(std::string_view host);

// OK if `token` is 16 to 256 characters from A-Z a-z 0-9 - . _ ~ (they need no escaping in a
// header or a URL) with at least 8 different ones (so "aaaa..." or 16 spaces are refused);
// InvalidArgument saying so otherwise. `openssl rand -hex 16` and GenerateToken() pass.
Status CheckToken(std::string_view token);

// The one Status -> HTTP table: InvalidArgument/OutOfRange 400, PermissionDenied 403,
// NotFound 404, AlreadyExists/Aborted/FailedPrecondition 409, ResourceExhausted 429,
// Cancelled 499, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, the rest 500.
int HttpStatusForCode(StatusCode code);

// {"error":{"code":"NOT_FOUND","message":"..."}}
std::string ErrorJson(const Status& status);

// 32 hex characters from /dev/urandom that pass CheckToken, for `rectrain ui --host 0.0.0.0`
// without --token.
Result<std::string> GenerateToken();

}  // namespace rectrain::http
