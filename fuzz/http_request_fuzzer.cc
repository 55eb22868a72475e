// libFuzzer target: bytes from a client through the server's request parser and router, as
// `rectrain ui` and `rectrain serve` configure them (fuzz/README.md). The first byte picks the
// server (bit 0: ui or serve), whether it has a token (bit 1) and the size of the pieces the
// bytes arrive in (bits 2-4); the rest is what the client sends, possibly several pipelined
// requests. Each complete request is dispatched; every reply must be a status in 100..599 and,
// when JSON, parse. The parser must end in done, a refusal with a 4xx/5xx, or wanting more.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "rectrain/http/internal/dispatcher.h"
#include "rectrain/http/request_parser.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/webui/tracking_api.h"

namespace {

using namespace rectrain;  // NOLINT: a fuzz target's file scope

constexpr char kToken[] = "0123456789abcdef";

std::filesystem::path ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  return std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / ("rectrain_http_fuzz_" + std::to_string(getpid()));
}

// A tracking store with three runs (metrics, params, finals) and a static directory, created
// once per process.
track::TrackingStore* Store() {
  static std::unique_ptr<track::TrackingStore> store = [] {
    const std::filesystem::path dir = ScratchDir();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "static");
    FILE* f = std::fopen((dir / "static" / "index.html").c_str(), "w");
    if (f == nullptr) std::abort();
    std::fputs("<html></html>", f);
    std::fclose(f);
    auto s = track::TrackingStore::Open((dir / "t.db").string());
    if (!s.ok()) std::abort();
    for (int i = 0; i < 3; ++i) {
      track::RunInfo info;
      info.name = "run" + std::to_string(i);
      info.params = {{"lr", std::to_string(i)}, {"model.type", "deepfm"}};
      auto id = (*s)->StartRun(info);
      if (!id.ok()) std::abort();
      std::pair<std::string, double> m[] = {{"loss", 1.0 / (i + 1)}};
      (*s)->LogMetrics(*id, 1, m).IgnoreError();
      (*s)->SetFinal(*id, m).IgnoreError();
    }
    return std::move(s).value();
  }();
  return store.get();
}

// The routes of `rectrain serve` (serve/service.cc) with stand-in handlers: what is fuzzed
// here is the path to them (parser, gate, routing); the predict body parser has its own
// fuzzing in serve_test.
std::vector<http::Route> ServeRoutes() {
  auto echo = [](const http::RouteRequest& r) {
    const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    return http::RouteReply{body.is_discarded() ? 400 : 200, nlohmann::json{{"bytes", r.body.size()}}.dump(),
                            "application/json", {}};
  };
  return {{"POST", "/v1/predict", echo, false},
          {"POST", "/v1/reload", echo, false},
          {"GET", "/v1/model", echo, false},
          {"GET", "/readyz", echo, true}};
}

http::internal::Dispatcher* Server(int config) {
  static std::unique_ptr<http::internal::Dispatcher> servers[4];
  prometheus::MetricsRegistry* registry = [] {
    static prometheus::MetricsRegistry r;
    return &r;
  }();
  std::unique_ptr<http::internal::Dispatcher>& d = servers[config & 3];
  if (d == nullptr) {
    http::ServerOptions o;
    o.rate_limit_per_s = 0;
    if ((config & 2) != 0) o.token = kToken;
    if ((config & 1) == 0) {
      track::TrackingStore* store = Store();
      o.static_dir = ScratchDir() / "static";
      webui::TrackingApiOptions api;
      api.artifact_root = ScratchDir();
      o.routes = webui::TrackingApiRoutes(store, api);
    } else {
      o.routes = ServeRoutes();
    }
    auto created = http::internal::Dispatcher::Create(o, registry);
    if (!created.ok()) std::abort();
    d = std::move(created).value();
  }
  return d.get();
}

void CheckReply(const http::RouteReply& r) {
  if (r.status < 100 || r.status > 599) std::abort();
  if (r.content_type == "application/json" &&
      nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false).is_discarded()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int config = data[0];
  const size_t piece = 1 + ((config >> 2) & 7) * 9;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::internal::Dispatcher* server = Server(config);
  http::ParserLimits limits;
  limits.max_body_bytes = 4096;
  limits.max_head_bytes = 2048;
  limits.max_target_bytes = 512;
  http::RequestParser parser(limits);
  std::string in;
  for (size_t fed = 0; fed < bytes.size();) {
    const size_t n = std::min(piece, bytes.size() - fed);
    in.append(bytes, fed, n);
    fed += n;
    while (true) {
      const http::ParseResult r = parser.Parse(&in);
      if (r == http::ParseResult::kNeedMore) break;
      if (r == http::ParseResult::kError) {
        if (parser.error().status < 400 || parser.error().message.empty()) std::abort();
        CheckReply(server->ErrorReply(parser.error()));
        return 0;  // the connection would close
      }
      if (parser.request().body.size() > static_cast<size_t>(limits.max_body_bytes)) std::abort();
      CheckReply(server->Handle(parser.request(), "127.0.0.1"));
      parser.Reset();
    }
    // Bounded: a partial head, or a chunk size line (at most 4096 bytes), and one piece.
    if (in.size() > std::max<size_t>(static_cast<size_t>(limits.max_head_bytes), 4096) + piece) std::abort();
  }
  return 0;
}
