// rectrain/http/server.h: the small HTTP server every long-running rectrain process can run
// (cpp-httplib underneath, kept out of this header). It serves:
//   GET  /metrics                    Prometheus text exposition of a MetricsRegistry
//   GET  /healthz                    {"ok":true}
//   GET  /api/runs                   run list: status, tag (repeatable), q (name substring),
//                                    group, parent, param=k=v (repeatable), metric=auc>=0.8
//                                    (repeatable), sort, order=asc|desc, limit, offset;
//                                    include_params=all|k1,k2 adds "params" to each run
//   GET  /api/runs.csv               the same list as CSV
//   GET  /api/runs/{id}              run detail (config, params, files, artifacts, metric keys)
//   DELETE /api/runs/{id}            deletes a run
//   GET  /api/runs/{id}/metrics      key (repeatable; default all keys), max_points (default
//                                    1000; 0 = all), min_step/max_step (a zoomed range):
//                                    min/max-downsampled series
//   GET  /api/runs/{id}/log          max_bytes (default 65536): tail of the run's "log"
//                                    artifact, if it lies under ServerOptions::artifact_root
//   GET  /api/runs/{id}/metrics.csv  every point of the run
//   GET  /api/compare?ids=1,2,3      differing params + final metrics side by side
//   GET  /api/groups                 run groups with status counts; by=group|parent|tag
//   GET  /<file>                     static files from ServerOptions::static_dir ("/" ->
//                                    index.html); paths escaping the directory are refused (403)
// docs/tracking.md lists the JSON shapes. Errors are JSON: {"error":{"code":"NOT_FOUND",
// "message":"run 42 not found"}} with the HTTP status from HttpStatusForCode().
//
// Security: binds 127.0.0.1 by default. A non-loopback bind requires a token (>= 16 chars),
// checked on /api/* and /metrics as "Authorization: Bearer <token>" or "?token=<token>"
// (static assets are public so a browser can load the UI, which then sends the token). Without
// a token (loopback), requests must carry a loopback Host header, which defeats DNS rebinding.
// Request bodies over max_body_bytes get 413; each client address is rate limited (token
// bucket) with 429 + Retry-After.
//
// Thread safety: Start/Stop from one thread. Handlers run on the server's own thread pool; the
// registry and store they read are thread-safe and must outlive the Server.
//
// Example (what `rectrain ui` does):
//   http::ServerOptions opts;  opts.port = 8080;  opts.static_dir = "/usr/share/rectrain/ui";
//   RECTRAIN_ASSIGN_OR_RETURN(auto server, http::Server::Start(opts, &registry, store.get()));
//   std::cout << "serving on " << server->url() << "\n";  ...  server->Stop();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/http/prometheus.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::http {

// A route added by the process that runs the server (`rectrain serve`: /v1/predict, /readyz,
// ...): an exact path, answered by `handler` on a handler thread. It passes the same gate as
// /api/* (rate limit, body size, Host check, and the token unless `public_route`).
struct RouteRequest {
  std::string_view body;
  std::string_view content_type;
};
struct RouteReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};
struct Route {
  std::string method;  // GET | POST
  std::string path;    // exact, e.g. "/v1/predict"
  std::function<RouteReply(const RouteRequest&)> handler;
  bool public_route = false;  // true: no token needed (health and readiness probes)
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: any free port (see Server::port()).
  std::string token;                     // Required for non-loopback hosts.
  std::string static_dir;                // "" = no static files.
  int64_t max_body_bytes = 1 << 20;      // Larger requests get 413.
  double rate_limit_per_s = 200.0;       // Per client address; <= 0 disables.
  double rate_limit_burst = 400.0;       // Bucket size.
  int num_threads = 4;                   // Handler threads (each serves one connection at a time).
  // Requests one keep-alive connection may carry before the server closes it (a reconnect costs
  // a client more than the request: 100 keeps it rare; more holds a thread longer per client).
  int keep_alive_max_requests = 100;
  int64_t default_max_points = 1000;     // For /api/runs/{id}/metrics without max_points.
  // Log files (artifacts of kind "log") are served by /api/runs/{id}/log only if they resolve
  // to a path under this directory (the workspace); "" = never.
  std::string artifact_root;
  std::string alertmanager_url;          // GET /api/runs/{id}/alerts asks it; "" = none (docs/alerts.md)
  std::vector<Route> routes;             // extra routes (see Route); matched before static files
};

class Server {
 public:
  // Binds and starts serving in background threads; returns once the server accepts
  // connections. `registry` and/or `store` may be null: their routes then answer 404
  // ("no tracking store is attached to this server"). Errors: InvalidArgument for a missing or
  // short token on a non-loopback host; Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                               MetricsRegistry* registry,
                                               track::TrackingStore* store);
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

// True for "localhost", 127.0.0.0/8 and ::1.
bool IsLoopbackHost(std::string_view host);

// The one Status -> HTTP table: InvalidArgument/OutOfRange 400, PermissionDenied 403,
// NotFound 404, AlreadyExists/Aborted/FailedPrecondition 409, ResourceExhausted 429,
// Cancelled 499, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, the rest 500.
int HttpStatusForCode(StatusCode code);

// {"error":{"code":"NOT_FOUND","message":"..."}}
std::string ErrorJson(const Status& status);

// 32 hex characters from /dev/urandom, for `rectrain ui --host 0.0.0.0` without --token.
Result<std::string> GenerateToken();

}  // namespace rectrain::http
