// rectrain/http/server.cc: see server.h. Infrastructure: binding, auth, Host check, rate limit,
// body limit, error mapping, /metrics and static files. The REST routes live in api.cc.
#include "rectrain/http/server.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "rectrain/http/internal/api.h"

namespace rectrain::http {
namespace {

namespace fs = std::filesystem;

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string_view ContentTypeFor(const fs::path& p) {
  static const std::map<std::string, std::string_view> kTypes = {
      {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
      {".json", "application/json"}, {".svg", "image/svg+xml"}, {".png", "image/png"},
      {".ico", "image/x-icon"}, {".woff2", "font/woff2"}, {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"}, {".wasm", "application/wasm"}};
  auto it = kTypes.find(p.extension().string());
  return it == kTypes.end() ? std::string_view("application/octet-stream") : it->second;
}

// Token buckets per client address.
class RateLimiter {
 public:
  RateLimiter(double per_s, double burst) : per_s_(per_s), burst_(burst) {}
  // True if a request from `client` may proceed now.
  bool Allow(const std::string& client) {
    if (per_s_ <= 0) return true;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (buckets_.size() > 10000) buckets_.clear();  // bound memory under address churn
    auto [it, inserted] = buckets_.try_emplace(client, Bucket{burst_, now});
    Bucket& b = it->second;
    double elapsed = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(burst_, b.tokens + elapsed * per_s_);
    b.last = now;
    if (b.tokens < 1.0) return false;
    b.tokens -= 1.0;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  double per_s_, burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

// The Host header value without its port ("[::1]:80" -> "::1", "a:1" -> "a").
std::string HostWithoutPort(const std::string& host) {
  if (host.starts_with("[")) {
    size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  size_t colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  std::string h(host);
  if (inet_pton(AF_INET, h.c_str(), &addr) == 1) {
    return (ntohl(addr.s_addr) >> 24) == 127;
  }
  return false;
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
  unsigned char bytes[16];
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
    return UnavailableError("cannot read /dev/urandom to generate a token");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

struct Server::Impl {
  ServerOptions options;
  MetricsRegistry* registry = nullptr;
  track::TrackingStore* store = nullptr;
  httplib::Server svr;
  std::thread thread;
  int port = 0;
  std::unique_ptr<RateLimiter> limiter;
  fs::path static_root;  // canonical; empty if none
  Counter* requests_ok = nullptr;
  bool stopped = false;

  bool Authorized(const httplib::Request& req) const {
    if (options.token.empty()) return true;
    std::string auth = req.get_header_value("Authorization");
    if (auth.starts_with("Bearer ") && ConstantTimeEquals(auth.substr(7), options.token)) {
      return true;
    }
    return req.has_param("token") && ConstantTimeEquals(req.get_param_value("token"),
                                                        options.token);
  }

  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req,
                                            httplib::Response& res) {
    using HR = httplib::Server::HandlerResponse;
    if (!limiter->Allow(req.remote_addr)) {
      res.set_header("Retry-After", "1");
      internal::SendError(res, ResourceExhaustedError("rate limit exceeded for " +
                                                      req.remote_addr + "; retry later"));
      return HR::Handled;
    }
    if (req.has_header("Content-Length")) {
      int64_t len = std::strtoll(req.get_header_value("Content-Length").c_str(), nullptr, 10);
      if (len > options.max_body_bytes) {
        res.set_header("Connection", "close");
        internal::SendError(res, InvalidArgumentError(
                                     "request body of " + std::to_string(len) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(options.max_body_bytes) + " bytes"));
        res.status = 413;
        return HR::Handled;
      }
    }
    // Without a token the server trusts loopback peers; a browser page on another origin could
    // still reach it through DNS rebinding, which this Host check defeats.
    if (options.token.empty() &&
        !IsLoopbackHost(HostWithoutPort(req.get_header_value("Host")))) {
      internal::SendError(res, PermissionDeniedError(
                                   "Host header '" + req.get_header_value("Host") +
                                   "' is not a loopback name; start the server with a token to "
                                   "serve other names"));
      return HR::Handled;
    }
    bool protected_route = req.path == "/metrics" || req.path.starts_with("/api/") ||
                           std::any_of(options.routes.begin(), options.routes.end(), [&](const Route& r) {
                             return !r.public_route && r.path == req.path;
                           });
    if (protected_route && !Authorized(req)) {
      res.set_header("WWW-Authenticate", "Bearer");
      internal::SendError(res, PermissionDeniedError(
                                   "missing or wrong token: send 'Authorization: Bearer <token>' "
                                   "or '?token=<token>'"));
      res.status = 401;
      return HR::Handled;
    }
    return HR::Unhandled;
  }

  void ServeStatic(const httplib::Request& req, httplib::Response& res) {
    if (req.path.starts_with("/api/")) {
      internal::SendError(res, NotFoundError("no API route " + req.method + " " + req.path));
      return;
    }
    if (static_root.empty()) {
      internal::SendError(res, NotFoundError("no such route: " + req.path));
      return;
    }
    // req.path is already percent-decoded. Refuse any '..' segment, backslash or NUL outright,
    // then make sure the resolved file (symlinks followed) stays under the root.
    const std::string& p = req.path;
    bool bad = p.find('\0') != std::string::npos || p.find('\\') != std::string::npos;
    for (size_t start = 0; !bad && start <= p.size();) {
      size_t slash = p.find('/', start);
      std::string_view seg(p.data() + start,
                           (slash == std::string::npos ? p.size() : slash) - start);
      bad = seg == "..";
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    auto refuse = [&] {
      internal::SendError(res, PermissionDeniedError("path '" + p +
                                                     "' escapes the static directory"));
    };
    if (bad) return refuse();
    std::string rel = p.substr(p.find_first_not_of('/') == std::string::npos
                                   ? p.size()
                                   : p.find_first_not_of('/'));
    if (rel.empty() || rel.ends_with("/")) rel += "index.html";
    std::error_code ec;
    fs::path full = fs::weakly_canonical(static_root / rel, ec);
    if (ec) return internal::SendError(res, NotFoundError("no such file: " + p));
    auto [root_end, full_it] = std::mismatch(static_root.begin(), static_root.end(), full.begin(),
                                             full.end());
    if (root_end != static_root.end()) return refuse();
    if (!fs::is_regular_file(full, ec)) {
      return internal::SendError(res, NotFoundError("no such file: " + p));
    }
    std::ifstream in(full, std::ios::binary);
    std::stringstream body;
    body << in.rdbuf();
    if (!in) return internal::SendError(res, UnavailableError("cannot read " + p));
    res.set_content(body.str(), std::string(ContentTypeFor(full)));
  }
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
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->svr.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                              MetricsRegistry* registry,
                                              track::TrackingStore* store) {
  if (!IsLoopbackHost(options.host)) {
    if (options.token.empty()) {
      return InvalidArgumentError("a token is required to bind to non-loopback address " +
                                  options.host +
                                  " (anyone who can reach the port could read and delete runs)");
    }
    if (options.token.size() < 16) {
      return InvalidArgumentError("the token must have at least 16 characters");
    }
  }
  if (options.max_body_bytes <= 0 || options.num_threads <= 0) {
    return InvalidArgumentError("max_body_bytes and num_threads must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->registry = registry;
  impl->store = store;
  impl->limiter = std::make_unique<RateLimiter>(options.rate_limit_per_s, options.rate_limit_burst);
  if (!options.static_dir.empty()) {
    std::error_code ec;
    impl->static_root = fs::canonical(options.static_dir, ec);
    if (ec || !fs::is_directory(impl->static_root)) {
      return NotFoundError("static directory " + options.static_dir + " does not exist");
    }
  }
  if (registry != nullptr) {
    RECTRAIN_ASSIGN_OR_RETURN(
        impl->requests_ok,
        registry->GetCounter("rectrain_http_requests_total", "HTTP requests served.",
                             {{"outcome", "ok"}}));
  }
  Impl* self = impl.get();
  httplib::Server& svr = impl->svr;
  const int threads = options.num_threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  // Replies go out as headers then body: with Nagle's algorithm the body waits for the client's
  // delayed ACK of the headers, 40 ms on Linux per request on a keep-alive connection.
  svr.set_tcp_nodelay(true);
  svr.set_keep_alive_max_count(static_cast<size_t>(std::max(1, options.keep_alive_max_requests)));
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);
  svr.set_pre_routing_handler(
      [self](const httplib::Request& req, httplib::Response& res) { return self->PreRoute(req, res); });
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    StatusCode code = res.status == 404   ? StatusCode::kNotFound
                      : res.status == 413 ? StatusCode::kInvalidArgument
                      : res.status < 500  ? StatusCode::kInvalidArgument
                                          : StatusCode::kInternal;
    int http_status = res.status;
    internal::SendError(res, Status(code, "HTTP " + std::to_string(http_status) + " for " +
                                              req.method + " " + req.path));
    res.status = http_status;
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                               std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    internal::SendError(res, InternalError("request failed: " + what));
  });
  // Counted before the reply is written (httplib runs the post-routing handler after the error
  // handler and before the first byte goes out): the logger runs after the write, so a client
  // could see the reply, ask /metrics on another connection and find its request not counted.
  svr.set_post_routing_handler([self](const httplib::Request&, httplib::Response& res) {
    if (self->registry == nullptr) return;
    if (res.status < 400) {
      self->requests_ok->Increment();
    } else {
      auto c = self->registry->GetCounter("rectrain_http_requests_total", "HTTP requests served.",
                                          {{"outcome", std::to_string(res.status)}});
      if (c.ok()) (*c)->Increment();
    }
  });

  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"ok\":true}", "application/json");
  });
  svr.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    if (self->registry == nullptr) {
      internal::SendError(res, NotFoundError("no metrics registry is attached to this server"));
      return;
    }
    res.set_content(self->registry->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  for (const Route& route : impl->options.routes) {
    if (route.method != "GET" && route.method != "POST") {
      return InvalidArgumentError("route " + route.path + ": method must be GET or POST, not " + route.method);
    }
    auto reply_with = [&route](const httplib::Request& req, httplib::Response& res, std::string_view body) {
      const std::string content_type = req.get_header_value("Content-Type");
      RouteReply reply = route.handler(RouteRequest{body, content_type});
      res.status = reply.status;
      res.set_content(std::move(reply.body), reply.content_type.c_str());
    };
    if (route.method == "GET") {
      svr.Get(route.path, [reply_with](const httplib::Request& req, httplib::Response& res) { reply_with(req, res, req.body); });
    } else {
      // Read through a content reader: httplib would otherwise parse a body sent as
      // application/x-www-form-urlencoded (curl -d's default) and refuse one over 8 KiB with a
      // bare 413. The size limit is max_body_bytes, checked in PreRoute.
      svr.Post(route.path, [reply_with](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& content) {
        std::string body;
        content([&](const char* data, size_t n) {
          body.append(data, n);
          return true;
        });
        reply_with(req, res, body);
      });
    }
  }
  internal::RegisterApiRoutes(svr, store, options);
  svr.Get(".*", [self](const httplib::Request& req, httplib::Response& res) {
    self->ServeStatic(req, res);
  });

  if (options.port == 0) {
    impl->port = svr.bind_to_any_port(options.host);
    if (impl->port <= 0) {
      return UnavailableError("cannot bind " + options.host + " on any port");
    }
  } else {
    if (!svr.bind_to_port(options.host, options.port)) {
      return UnavailableError("cannot bind " + options.host + ":" + std::to_string(options.port) +
                              " (in use, or not an address of this machine)");
    }
    impl->port = options.port;
  }
  impl->thread = std::thread([self] { self->svr.listen_after_bind(); });
  // cpp-httplib 0.11 has no wait_until_ready(): poll is_running().
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!svr.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::unique_ptr<Server> server(new Server(std::move(impl)));
  if (!server->impl_->svr.is_running()) {
    server->Stop();
    return UnavailableError("HTTP server on " + options.host + " did not start within 10 s");
  }
  return server;
}

}  // namespace rectrain::http
