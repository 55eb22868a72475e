// `rectrain serve`: HTTP/JSON scoring with micro-batching and hot reload (serve/service.h,
// docs/serving.md).
#include <algorithm>
#include <cstdio>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/serve/service.h"

namespace rectrain::cli {

int RunServe(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain serve";
  serve::ServiceOptions so;
  std::string host = "127.0.0.1", token;
  int64_t port = 8500, threads = 2, http_threads = 16, max_batch = so.max_batch_rows, max_wait_us = 1000,
          max_rows = so.max_request_rows, poll_ms = 2000, max_body = 32 << 20, max_connections = 512,
          idle_timeout_ms = 5000;
  bool no_verify = false;
  std::optional<nn::GemmPrecision> precision;
  FlagParser flags(kCmd, "MODEL_PATH [--port P] [--host H --token T] [--max-batch N] [--max-wait-us U]",
                   "Serves MODEL_PATH (a model written by rectrain export, or a directory of numbered\n"
                   "versions: the highest complete one is served, and newer ones load in the background\n"
                   "and replace it without failing a request). POST /v1/predict, POST /v1/reload,\n"
                   "GET /v1/model, /readyz, /healthz, /metrics. Stops on SIGINT/SIGTERM.");
  flags.Positional("MODEL_PATH", &so.model_path, true, "model directory or directory of versions");
  flags.Int("port", &port, "port (default 8500; 0: any free port)");
  flags.String("host", &host, "bind address (default 127.0.0.1; any other needs --token)");
  flags.String("token", &token, "bearer token required off loopback: 16-256 characters of A-Z a-z 0-9 - . _ ~, at least 8 different (or $RECTRAIN_SERVE_TOKEN)");
  flags.Int("threads", &threads, "compute threads for scoring (default 2)");
  flags.Int("http-threads", &http_threads, "request worker threads (default 16: requests handled at once; an idle connection holds none)");
  flags.Int("max-connections", &max_connections, "open connections at most (default 512; docs/serving.md \"Limits\")");
  flags.Int("idle-timeout-ms", &idle_timeout_ms, "close a connection without a request for this long (default 5000)");
  flags.Int("max-batch", &max_batch, "rows scored together at most (default 512)");
  flags.Int("max-wait-us", &max_wait_us, "how long a request waits for others to batch with (default 1000)");
  flags.Int("max-request-rows", &max_rows, "rows per request at most (default 10000; more: 413)");
  flags.Int("max-body-bytes", &max_body, "request body limit (default 32 MiB; more: 413)");
  flags.String("cache-dir", &so.cache_dir, "MODEL_PATH on an object store (s3://...): local copy of its versions (default .rectrain/model-cache/...)");
  flags.Int("poll-ms", &poll_ms, "how often a versions directory is checked (default 2000; 0: only on /v1/reload)");
  flags.Enum("precision", &precision, nn::kGemmPrecisions, "GEMM precision (default: the model's; predictions then equal rectrain eval's)");
  flags.Bool("no-verify", &no_verify, "skip the checksum pass when loading (faster cold start; sizes are still checked)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (token.empty()) {
    if (const char* t = std::getenv("RECTRAIN_SERVE_TOKEN")) token = t;
  }
  so.threads = static_cast<int>(threads);
  so.max_batch_rows = max_batch;
  so.max_wait_ms = static_cast<double>(max_wait_us) / 1000.0;
  so.max_request_rows = max_rows;
  so.poll_seconds = static_cast<double>(poll_ms) / 1000.0;
  so.verify_checksums = !no_verify;
  so.precision = precision;
  EnableGracefulStop("");  // a signal while the model loads stops the server once it is up
  prometheus::MetricsRegistry registry;
  if (Status s = prometheus::RegisterProcessMetrics(registry); !s.ok()) return ReportError(kCmd, s);
  auto service = serve::ModelService::Start(so, &registry);
  if (!service.ok()) return ReportError(kCmd, service.status());
  http::ServerOptions ho;
  ho.host = host;
  ho.port = static_cast<int>(port);
  ho.token = token;
  ho.num_threads = static_cast<int>(http_threads);
  ho.max_body_bytes = max_body;
  ho.max_connections = static_cast<int>(std::clamp<int64_t>(max_connections, 0, 1 << 20));
  ho.idle_timeout_ms = idle_timeout_ms;
  ho.unprotected_risk = "score with and reload the model";
  ho.rate_limit_per_s = 0;  // a model server is load-tested and fronted by its own balancer
  // Clients keep their connection (a reconnect per 100 requests showed as 1% of requests at
  // 100+ ms under wrk); an idle one is closed after --idle-timeout-ms.
  ho.keep_alive_max_requests = 1 << 30;
  RaiseOpenFileLimit();  // --max-connections descriptors
  ho.routes = (*service)->Routes();
  auto server = http::Server::Start(ho, &registry);
  if (!server.ok()) return ReportError(kCmd, server.status());
  std::printf("rectrain serve: %s (model version %lld); POST %s/v1/predict\n", (*server)->url().c_str(),
              static_cast<long long>((*service)->version()), (*server)->url().c_str());
  std::fflush(stdout);
  const int sig = WaitForStopSignal();
  std::fprintf(stderr, "rectrain serve: signal %d, stopping\n", sig);
  (*server)->Stop();
  (*service)->Stop();
  return 0;
}

}  // namespace rectrain::cli
