// rectrain/serve/service.h: `rectrain serve` as a library: HTTP/JSON scoring of a serving model
// with adaptive micro-batching, hot reload and Prometheus metrics. Routes (http::Route, behind
// the server's security gate: loopback by default, a token elsewhere, body and rate limits):
//   POST /v1/predict   {"rows": [{"I1": 3, "C1": "68fd1e64", ...}, ...]}  rows by column name
//                      {"lines": ["0\t3\t...", ...]}                    rows in the training files' layout
//                      -> {"model_version": 3, "predictions": [0.0312, ...]} (a list per row for
//                      multi-task and multi-class models, with "outputs": their names)
//   POST /v1/reload    load a newer version now (a versions directory) or the model directory
//                      again -> {"model_version": N, "reloaded": true|false}; 409 with the error
//                      when the candidate is refused (the old model keeps serving)
//   GET  /v1/model     the serving model's manifest summary
//   GET  /readyz       200 once a model is loaded, else 503 (public, like /healthz)
// Bad requests get a 4xx whose message names the row and field (docs/serving.md).
//
// Micro-batching: requests are parsed on the handler threads; one scoring thread takes the
// waiting requests of the same model version together, up to max_batch_rows rows, waiting at
// most max_wait_ms after the first for more to arrive, and answers each with its rows.
//
// Hot reload: a model path holding numbered version directories is polled; a newer complete
// version (export renames it into place) loads on a background thread and replaces the current
// one with one pointer swap. Requests parsed before the swap are scored by the model that parsed
// them, so none sees a half-loaded model and none fails. A version that fails to load (corrupt,
// incompatible) is counted, logged and skipped until its directory changes.
//
// Thread safety: HandlePredict and the other handlers run concurrently on server threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/nn/layer.h"

namespace rectrain::serve {

struct ServiceOptions {
  // A model directory (manifest.json) or a directory of versions; or the same on an object store
  // ("s3://bucket/models"), mirrored into `cache_dir` (model_mirror.h) and served from there.
  std::string model_path;
  std::string cache_dir;          // object store only; empty: ModelMirror::DefaultCacheDir
  int threads = 2;                // compute threads of the scoring thread
  int64_t max_batch_rows = 512;   // rows scored together at most
  double max_wait_ms = 1.0;       // how long the first waiting request waits for company
  int64_t max_request_rows = 10000;
  double poll_seconds = 2.0;      // versions directory; <= 0: only on POST /v1/reload
  bool verify_checksums = true;
  std::optional<nn::GemmPrecision> precision;  // PredictorOptions::precision
  std::ostream* log = nullptr;    // reload lines; null: stderr
};

// Rows of one request as lines of the model's layout (`general`: always through the JSON
// parser, not the fast path for {"lines": [...]}; for tests). InvalidArgument names the row and field
// (rows[3].C1: ...); ResourceExhausted when there are more than max_rows. Never throws.
Result<std::vector<std::string>> ParsePredictRequest(std::string_view body, const data::RowParser& parser,
                                                     int64_t max_rows, bool general = false);

class ModelService {
 public:
  // Loads the model (a versions directory may still be empty: not ready until one appears) and
  // starts the scoring and watcher threads. `registry` (may be null) gets the rectrain_serve_* series.
  static Result<std::unique_ptr<ModelService>> Start(const ServiceOptions& options,
                                                     prometheus::MetricsRegistry* registry);
  ~ModelService();  // Stop()

  std::vector<http::Route> Routes();
  http::RouteReply HandlePredict(std::string_view body);
  http::RouteReply HandleReload();
  http::RouteReply HandleModel() const;
  http::RouteReply HandleReady() const;
  int64_t version() const;  // 0 before the first model
  void Stop();

  struct Impl;

 private:
  explicit ModelService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::serve
