// rectrain/http/dispatcher.cc: see internal/dispatcher.h.
#include "rectrain/http/internal/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace rectrain::http::internal {
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

RouteReply Error(const Status& status) {
  return RouteReply{HttpStatusForCode(status.code()), ErrorJson(status), "application/json", {}};
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

}  // namespace

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

std::vector<std::string_view> PathSegments(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.starts_with('/')) path.remove_prefix(1);
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string ResponseHead(const RouteReply& reply, size_t body_bytes, bool keep_alive, int minor_version) {
  std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " ";
  head += ReasonPhrase(reply.status);
  head += "\r\nContent-Type: ";
  head += reply.content_type;
  head += "\r\nContent-Length: ";
  head += std::to_string(body_bytes);
  head += "\r\n";
  for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
  if (!keep_alive) {
    head += "Connection: close\r\n";
  } else if (minor_version == 0) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

Dispatcher::~Dispatcher() = default;

Result<std::unique_ptr<Dispatcher>> Dispatcher::Create(const ServerOptions& options,
                                                       prometheus::MetricsRegistry* registry) {
  std::unique_ptr<Dispatcher> d(new Dispatcher());
  d->options_ = options;
  d->registry_ = registry;
  d->limiter_ = std::make_unique<RateLimiter>(options.rate_limit_per_s, options.rate_limit_burst);
  if (!options.static_dir.empty()) {
    std::error_code ec;
    d->static_root_ = fs::canonical(options.static_dir, ec);
    if (ec || !fs::is_directory(d->static_root_)) {
      return NotFoundError("static directory " + options.static_dir + " does not exist");
    }
  }
  if (registry != nullptr) {
    RECTRAIN_ASSIGN_OR_RETURN(d->requests_ok_, registry->GetCounter("rectrain_http_requests_total",
                                                                    "HTTP requests served.", {{"outcome", "ok"}}));
  }
  prometheus::MetricsRegistry* reg = registry;
  std::vector<Route> routes = {
      {"GET", "/healthz", [](const RouteRequest&) { return RouteReply{200, "{\"ok\":true}", "application/json", {}}; }, true},
      {"GET", "/metrics", [reg](const RouteRequest&) {
         if (reg == nullptr) return Error(NotFoundError("no metrics registry is attached to this server"));
         return RouteReply{200, reg->Render(), "text/plain; version=0.0.4; charset=utf-8", {}};
       }, false}};
  routes.insert(routes.end(), options.routes.begin(), options.routes.end());
  for (Route& route : routes) {
    if (route.method != "GET" && route.method != "POST" && route.method != "DELETE") {
      return InvalidArgumentError("route " + route.path + ": method must be GET, POST or DELETE, not " + route.method);
    }
    if (!route.path.starts_with('/') || !route.handler) {
      return InvalidArgumentError("route '" + route.path + "' must start with '/' and have a handler");
    }
    CompiledRoute compiled{std::move(route), {}};
    for (std::string_view seg : PathSegments(compiled.route.path)) {
      const bool param = seg.starts_with('{') && seg.ends_with('}') && seg.size() > 2;
      compiled.segments.emplace_back(param ? std::string_view("{}") : seg);
    }
    d->routes_.push_back(std::move(compiled));
  }
  return d;
}

void Dispatcher::Count(int status) {
  if (registry_ == nullptr) return;
  if (status < 400) {
    requests_ok_->Increment();
    return;
  }
  auto c = registry_->GetCounter("rectrain_http_requests_total", "HTTP requests served.",
                                 {{"outcome", std::to_string(status)}});
  if (c.ok()) (*c)->Increment();
}

RouteReply Dispatcher::ErrorReply(const HttpError& error) {
  RouteReply reply = Error(Status(error.code, error.message));
  reply.status = error.status;
  Count(reply.status);
  return reply;
}

RouteReply Dispatcher::Handle(const HttpRequest& request, const std::string& peer) {
  RouteReply reply;
  try {
    reply = Dispatch(request, peer);
  } catch (const std::exception& e) {
    reply = Error(InternalError(std::string("request failed: ") + e.what()));
  } catch (...) {
    reply = Error(InternalError("request failed: unknown exception"));
  }
  Count(reply.status);
  return reply;
}

bool Dispatcher::Authorized(const HttpRequest& request, const RouteRequest& route_request) const {
  if (options_.token.empty()) return true;
  if (const std::string* auth = request.Header("authorization");
      auth != nullptr && auth->starts_with("Bearer ") &&
      ConstantTimeEquals(std::string_view(*auth).substr(7), options_.token)) {
    return true;
  }
  return route_request.HasParam("token") && ConstantTimeEquals(route_request.Param("token"), options_.token);
}

RouteReply Dispatcher::Dispatch(const HttpRequest& request, const std::string& peer) {
  if (!limiter_->Allow(peer)) {
    RouteReply r = Error(ResourceExhaustedError("rate limit exceeded for " + peer + "; retry later"));
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }
  // Without a token the server trusts loopback peers; a browser page on another origin could
  // still reach it through DNS rebinding, which this Host check defeats. (The parser has
  // already refused a Host that is not host[:port].)
  const std::string* host = request.Header("host");
  if (options_.token.empty()) {
    Result<std::string> name = host == nullptr ? Result<std::string>(std::string()) : ParseHostHeader(*host);
    if (!name.ok() || !IsLoopbackHost(*name)) {
      return Error(PermissionDeniedError("Host header '" + (host == nullptr ? std::string() : *host) +
                                         "' is not a loopback name; start the server with a token to serve "
                                         "other names"));
    }
  }
  Result<std::vector<std::pair<std::string, std::string>>> query = ParseQuery(request.query);
  if (!query.ok()) return Error(query.status().WithContext("the query string"));
  const std::string_view method = request.method == "HEAD" ? std::string_view("GET") : request.method;
  const std::vector<std::string_view> segments = PathSegments(request.path);
  RouteRequest rr;
  rr.query = *query;
  rr.path = request.path;
  rr.body = request.body;
  const std::string* content_type = request.Header("content-type");
  if (content_type != nullptr) rr.content_type = *content_type;
  std::string allowed;
  for (const CompiledRoute& c : routes_) {
    if (c.segments.size() != segments.size()) continue;
    rr.path_params.clear();
    bool match = true;
    for (size_t i = 0; match && i < segments.size(); ++i) {
      if (c.segments[i] == "{}") {
        match = !segments[i].empty();
        rr.path_params.push_back(segments[i]);
      } else {
        match = c.segments[i] == segments[i];
      }
    }
    if (!match) continue;
    if (c.route.method != method) {
      allowed += (allowed.empty() ? "" : ", ") + c.route.method;
      continue;
    }
    if (!c.route.public_route && !Authorized(request, rr)) {
      RouteReply r = Error(PermissionDeniedError("missing or wrong token: send 'Authorization: Bearer <token>' or "
                                                 "'?token=<token>'"));
      r.status = 401;
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
    rr.method = c.route.method;
    return c.route.handler(rr);
  }
  if (!allowed.empty()) {
    RouteReply r = Error(InvalidArgumentError(std::string(request.method) + " is not allowed on " + request.path +
                                              " (allowed: " + allowed + ")"));
    r.status = 405;
    r.headers.emplace_back("Allow", allowed);
    return r;
  }
  if (method == "GET") return ServeStatic(request.path);
  if (request.path.starts_with("/api/")) return Error(NotFoundError("no API route " + request.method + " " + request.path));
  return Error(NotFoundError("no route " + request.method + " " + request.path));
}

RouteReply Dispatcher::ServeStatic(const std::string& p) const {
  if (p.starts_with("/api/")) return Error(NotFoundError("no API route GET " + p));
  if (static_root_.empty()) return Error(NotFoundError("no such route: " + p));
  // `p` is percent-decoded. Refuse any '..' segment, backslash or NUL outright, then make sure
  // the resolved file (symlinks followed) stays under the root.
  bool bad = p.find('\0') != std::string::npos || p.find('\\') != std::string::npos;
  for (std::string_view seg : PathSegments(p)) bad = bad || seg == "..";
  const auto refuse = [&] { return Error(PermissionDeniedError("path '" + p + "' escapes the static directory")); };
  if (bad) return refuse();
  const size_t first = p.find_first_not_of('/');
  std::string rel = first == std::string::npos ? std::string() : p.substr(first);
  if (rel.empty() || rel.ends_with("/")) rel += "index.html";
  std::error_code ec;
  const fs::path full = fs::weakly_canonical(static_root_ / rel, ec);
  if (ec) return Error(NotFoundError("no such file: " + p));
  auto [root_end, full_it] = std::mismatch(static_root_.begin(), static_root_.end(), full.begin(), full.end());
  if (root_end != static_root_.end()) return refuse();
  if (!fs::is_regular_file(full, ec)) return Error(NotFoundError("no such file: " + p));
  std::ifstream in(full, std::ios::binary);
  std::stringstream body;
  body << in.rdbuf();
  if (!in) return Error(UnavailableError("cannot read " + p));
  return RouteReply{200, body.str(), std::string(ContentTypeFor(full)), {}};
}

}  // namespace rectrain::http::internal
