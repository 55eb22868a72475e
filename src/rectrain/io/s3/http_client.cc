#include "rectrain/io/s3/http_client.h"

#include <curl/curl.h>
#include <signal.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rectrain::io::s3 {
namespace {

struct Exchange {
  HttpResponse* resp;
  const BodySink* sink;
  std::string_view upload;
  size_t uploaded = 0;
  bool sink_refused = false;
  long status = 0;  // from the status line, so that an error body never reaches the sink
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t len = size * n;
  std::string_view line(data, len);
  if (line.starts_with("HTTP/")) {
    ex->resp->headers.clear();  // a new response (after 100-continue or a redirect)
    const size_t sp = line.find(' ');
    ex->status = sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    ex->resp->status = ex->status;
    return len;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return len;
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  ex->resp->headers.emplace_back(std::move(name), std::string(value));
  return len;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t len = size * n;
  if (*ex->sink && ex->status >= 200 && ex->status < 300) {
    if (!(*ex->sink)(data, len)) {
      ex->sink_refused = true;
      return 0;  // aborts the transfer
    }
  } else {
    ex->resp->body.append(data, len);
  }
  ex->resp->body_bytes += static_cast<int64_t>(len);
  return len;
}

size_t OnUpload(char* buf, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t len = std::min(size * n, ex->upload.size() - ex->uploaded);
  std::memcpy(buf, ex->upload.data() + ex->uploaded, len);
  ex->uploaded += len;
  return len;
}

TransportError Classify(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportError::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError::kTimeout;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportError::kReset;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return TransportError::kTls;
    case CURLE_WRITE_ERROR:
      return TransportError::kAborted;
    default:
      return TransportError::kOther;
  }
}

}  // namespace

const char* TransportErrorName(TransportError e) {
  switch (e) {
    case TransportError::kNone: return "none";
    case TransportError::kConnect: return "connection refused";
    case TransportError::kTimeout: return "timeout";
    case TransportError::kReset: return "connection reset";
    case TransportError::kTls: return "TLS error";
    case TransportError::kAborted: return "aborted";
    case TransportError::kOther: break;
  }
  return "transport error";
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    // With CURLOPT_NOSIGNAL (needed with threads) a TLS write to a connection the server reset
    // would raise SIGPIPE and end the process; the failed write is an error we retry instead.
    struct sigaction old {};
    if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  });
}

HttpClient::~HttpClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::Borrow() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::Return(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(handle);
}

TransportError HttpClient::Send(const HttpRequest& req, HttpResponse* resp, const BodySink& sink, std::string* error) {
  *resp = HttpResponse();
  CURL* curl = static_cast<CURL*>(Borrow());
  if (curl == nullptr) {
    *error = "curl_easy_init failed";
    return TransportError::kOther;
  }
  curl_easy_reset(curl);
  Exchange ex{resp, &sink, req.body};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  // A transfer that moves less than 1 byte/s for the stall time is cut (a stalled server).
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max<int64_t>(1, options_.stall_timeout_ms / 1000)));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  if (!options_.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  if (req.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT" || req.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &ex);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    if (req.method == "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "POST");
  } else if (req.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  struct curl_slist* headers = nullptr;
  for (const auto& [k, v] : req.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  // No "Expect: 100-continue" round trip before uploads.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (rc == CURLE_OK) {
    resp->status = status;
    Return(curl);
    return TransportError::kNone;
  }
  *error = errbuf[0] != '\0' ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  resp->status = status;
  const TransportError kind = ex.sink_refused ? TransportError::kAborted : Classify(rc);
  // A handle whose connection broke is not reused as is: curl reconnects, but drop it anyway so
  // that a poisoned TLS state never carries over.
  curl_easy_cleanup(curl);
  return kind;
}

}  // namespace rectrain::io::s3
