// rectrain/io/s3/http_client.h: one HTTP/1.1 exchange at a time over libcurl, with a pool of
// reusable connections (keep-alive). No retries here: the S3 client decides what to retry from
// the outcome, and resumes partial bodies itself.
//
// Thread safety: Send may be called from any number of threads; each call borrows its own curl
// handle from the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/status.h"

namespace rectrain::io::s3 {

struct HttpOptions {
  int64_t connect_timeout_ms = 10000;
  int64_t stall_timeout_ms = 30000;  // no byte received for this long: the transfer is cut
  std::string ca_bundle;             // empty: the system CA store
};

struct HttpRequest {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;  // must stay live during Send
};

struct HttpResponse {
  long status = 0;                                           // 0 when no response arrived
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;                                          // when no sink was given
  int64_t body_bytes = 0;                                    // bytes of body received
  // The header `name` (lower-case), or "".
  std::string Header(std::string_view name) const;
};

// Receives body bytes as they arrive; returning false aborts the transfer (e.g. more bytes than
// the caller's buffer holds).
using BodySink = std::function<bool(const char* data, size_t n)>;

// Transport failures, classified for the retry policy.
enum class TransportError {
  kNone,
  kConnect,      // could not connect / resolve
  kTimeout,      // connect timeout or stalled transfer
  kReset,        // connection reset, closed early, partial body
  kTls,          // certificate or handshake failure (not retried)
  kAborted,      // the sink refused data
  kOther,
};
const char* TransportErrorName(TransportError e);

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `req` and fills *resp (body into `sink` when given, else resp->body). Returns
  // TransportError::kNone when a complete response arrived (any status), else the failure and
  // a message in *error. resp->body_bytes counts the body received either way.
  TransportError Send(const HttpRequest& req, HttpResponse* resp, const BodySink& sink, std::string* error);

 private:
  void* Borrow();
  void Return(void* handle);

  HttpOptions options_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* handles, guarded by mu_
};

}  // namespace rectrain::io::s3
