#include "rectrain/io/s3/s3_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

#include <openssl/evp.h>

#include "rectrain/base/stopwatch.h"
#include "rectrain/io/s3/sigv4.h"
#include "rectrain/io/s3/xml.h"

namespace rectrain::io::s3 {

// The outcome of one attempt of an operation.
struct S3Client::Attempt {
  bool ok = false;
  bool retryable = false;
  Status status;       // the error when !ok && !retryable
  std::string reason;  // retry statistics key: "HTTP 503", "SlowDown", "connection reset", ...
  std::string last;    // for the final message: "HTTP 503 SlowDown (Please reduce ...)"
};

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

int64_t ParseIsoTime(const std::string& s) {  // 2026-12-04T21:57:22.000Z
  std::tm tm{};
  if (strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000;
}

int64_t ParseHttpTime(const std::string& s) {  // Fri, 04 Dec 2026 21:57:22 GMT
  std::tm tm{};
  if (strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000;
}

std::string ObjectUri(const std::string& bucket, const std::string& key) { return "s3://" + bucket + "/" + key; }

// The S3 error of a response body (<Error><Code>..</Code><Message>..</Message></Error>).
std::pair<std::string, std::string> ErrorCodeOf(const HttpResponse& resp) {
  if (resp.body.empty()) return {};
  Result<XmlNode> x = ParseXml(resp.body);
  if (!x.ok() || x->name != "Error") return {};
  return {x->ChildText("Code"), x->ChildText("Message")};
}

bool RetryableCode(const std::string& code) {
  return code == "SlowDown" || code == "RequestTimeout" || code == "InternalError" || code == "ServiceUnavailable" ||
         code == "Throttling" || code == "ThrottlingException" || code == "RequestTimeTooSkewed";
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseS3Uri(std::string_view uri) {
  if (!uri.starts_with("s3://")) return InvalidArgumentError("not an s3:// URI: \"" + std::string(uri) + "\"");
  std::string_view rest = uri.substr(5);
  const size_t slash = rest.find('/');
  std::string bucket(rest.substr(0, slash));
  if (bucket.empty()) {
    return InvalidArgumentError("\"" + std::string(uri) + "\" has no bucket; write s3://BUCKET/KEY");
  }
  if (bucket.find_first_of("*?[") != std::string::npos) {
    return InvalidArgumentError("\"" + std::string(uri) + "\": a bucket name cannot be a pattern");
  }
  return std::pair{bucket, slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1))};
}

std::string MultipartEtag(const std::vector<std::string>& part_etags) {
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  std::string digests;
  for (std::string e : part_etags) {
    std::erase(e, '"');
    if (e.size() != 32) return "";
    for (size_t i = 0; i < e.size(); i += 2) {
      const int hi = nibble(e[i]), lo = nibble(e[i + 1]);
      if (hi < 0 || lo < 0) return "";
      digests += static_cast<char>(hi * 16 + lo);
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(digests.data(), digests.size(), md, &n, EVP_md5(), nullptr) != 1) return "";
  return Hex(md, n) + "-" + std::to_string(part_etags.size());
}

S3Client::S3Client(S3Config config)
    : config_(std::move(config)),
      http_(HttpOptions{config_.connect_timeout_ms, config_.stall_timeout_ms, config_.ca_bundle}) {}

HttpRequest S3Client::Build(const std::string& method, const std::string& bucket, const std::string& key,
                            const Headers& query, Headers headers, std::string_view body) const {
  const size_t scheme_end = config_.endpoint.find("://") + 3;
  const std::string scheme = config_.endpoint.substr(0, scheme_end);
  std::string host = config_.endpoint.substr(scheme_end);
  std::string path;
  if (config_.UsePathStyle(bucket)) {
    path = "/" + bucket + (key.empty() ? "" : "/" + key);
  } else {
    host = bucket + "." + host;
    path = "/" + key;
  }
  HttpRequest req;
  req.method = method;
  req.body = body;
  std::string q;
  for (const auto& [k, v] : query) {
    q += q.empty() ? "?" : "&";
    q += UriEncode(k, false) + "=" + UriEncode(v, false);
  }
  req.url = scheme + host + UriEncode(path, true) + q;
  headers.emplace_back("Host", host);
  if (config_.credentials.anonymous()) {
    req.headers = std::move(headers);
    return req;
  }
  SignableRequest s{method, path, query, std::move(headers), body};
  SignV4(config_.credentials, config_.region, "s3", AmzDate(std::time(nullptr)), SignOptions{}, &s);
  req.headers = std::move(s.headers);
  return req;
}

void S3Client::CountRetry(const std::string& reason) {
  retries_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  ++retry_reasons_[reason];
}

RemoteIoStats S3Client::stats() const {
  RemoteIoStats s;
  s.requests = requests_.load();
  s.retries = retries_.load();
  s.bytes_read = bytes_read_.load();
  s.bytes_written = bytes_written_.load();
  std::lock_guard<std::mutex> lock(mu_);
  s.retry_reasons = retry_reasons_;
  return s;
}

Status S3Client::Run(const std::string& what, const std::function<Attempt(int attempt_no)>& attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  Stopwatch sw;
  std::string last;
  const int budget = std::max(1, config_.max_attempts);
  for (int i = 0; i < budget; ++i) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    Attempt a = attempt(i);
    if (a.ok) return OkStatus();
    if (!a.retryable) return Status(a.status.code(), what + ": " + a.status.message());
    last = a.last;
    if (i + 1 == budget) break;
    CountRetry(a.reason);
    const int64_t cap = std::min<int64_t>(config_.retry_max_ms, config_.retry_base_ms << std::min(i, 20));
    std::uniform_int_distribution<int64_t> jitter(0, std::max<int64_t>(cap, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(jitter(rng)));
  }
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", sw.Seconds());
  return UnavailableError(what + " failed after " + std::to_string(budget) + " attempts (" + secs + " s): " + last +
                          "; check the endpoint (" + config_.endpoint + ") and its health, or raise AWS_MAX_ATTEMPTS");
}

S3Client::Attempt S3Client::Judge(TransportError te, const std::string& terr, const HttpResponse& resp) const {
  Attempt a;
  if (te != TransportError::kNone) {
    a.reason = TransportErrorName(te);
    a.last = std::string(TransportErrorName(te)) + " (" + terr + ")" +
             (resp.status > 0 ? ", last HTTP status " + std::to_string(resp.status) : "");
    a.retryable = te != TransportError::kTls && te != TransportError::kAborted;
    if (!a.retryable) {
      a.status = te == TransportError::kTls
                     ? UnavailableError(a.last + "; check the CA store or AWS_CA_BUNDLE")
                     : DataLossError("the server sent more bytes than asked for (" + terr + ")");
    }
    return a;
  }
  if (resp.status >= 200 && resp.status < 300) {
    a.ok = true;
    return a;
  }
  const auto [code, message] = ErrorCodeOf(resp);
  a.last = "HTTP " + std::to_string(resp.status) + (code.empty() ? "" : " " + code) +
           (message.empty() ? "" : " (" + message + ")");
  if (resp.status >= 500 || resp.status == 429 || RetryableCode(code)) {
    a.retryable = true;
    a.reason = code == "SlowDown" ? code : "HTTP " + std::to_string(resp.status);
    return a;
  }
  if (resp.status == 404) {
    a.status = code == "NoSuchBucket" ? NotFoundError("no such bucket (" + a.last + ")")
                                      : NotFoundError("no such object (" + a.last + ")");
  } else if (resp.status == 403 || resp.status == 401) {
    a.status = PermissionDeniedError("access denied (" + a.last + "); credentials: " + config_.credentials_source +
                                     ", region " + config_.region);
  } else if (resp.status == 412) {
    a.status = DataLossError("the object changed while it was read (" + a.last + ")");
  } else {
    a.status = InvalidArgumentError("rejected (" + a.last + ")");
  }
  return a;
}

Result<ObjectInfo> S3Client::Head(const std::string& bucket, const std::string& key) {
  ObjectInfo info;
  Status s = Run(ObjectUri(bucket, key) + ": HEAD", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te = http_.Send(Build("HEAD", bucket, key, {}, {}, {}), &resp, nullptr, &err);
    Attempt a = Judge(te, err, resp);
    if (a.ok) {
      info.size = std::atoll(resp.Header("content-length").c_str());
      info.etag = resp.Header("etag");
      info.mtime_ns = ParseHttpTime(resp.Header("last-modified"));
    }
    return a;
  });
  if (!s.ok()) return s;
  return info;
}

Result<int64_t> S3Client::GetRange(const std::string& bucket, const std::string& key, int64_t offset, int64_t n,
                                   char* dst, const std::string& expect_etag, ObjectInfo* info) {
  const std::string uri = ObjectUri(bucket, key);
  int64_t received = 0;
  int64_t expected = n;  // shrinks to what the object holds once its size is known
  std::string etag = expect_etag;
  ObjectInfo got;
  bool past_end = false;
  const std::string what = uri + ": GET bytes " + std::to_string(offset) + "-" + std::to_string(offset + n - 1);
  Status s = Run(what, [&](int) {
    const int64_t from = offset + received;
    Headers h{{"Range", "bytes=" + std::to_string(from) + "-" + std::to_string(offset + expected - 1)}};
    if (!etag.empty()) h.emplace_back("If-Match", etag);
    HttpResponse resp;
    int64_t skip = -1;  // set on the first body byte: bytes to drop (a server that ignored Range)
    int64_t wrote = 0;
    const BodySink sink = [&](const char* data, size_t len) {
      if (skip < 0) skip = resp.status == 200 ? from : 0;
      const int64_t drop = std::min<int64_t>(skip, static_cast<int64_t>(len));
      skip -= drop;
      const int64_t keep = std::min<int64_t>(static_cast<int64_t>(len) - drop, expected - received - wrote);
      if (keep > 0) std::memcpy(dst + received + wrote, data + drop, static_cast<size_t>(keep));
      wrote += std::max<int64_t>(keep, 0);
      return true;
    };
    std::string err;
    const TransportError te = http_.Send(Build("GET", bucket, key, {}, std::move(h), {}), &resp, sink, &err);
    if (resp.status == 416) {  // the range starts at or past the end
      past_end = true;
      return Attempt{.ok = true};
    }
    if (resp.status >= 200 && resp.status < 300) {
      const std::string now = resp.Header("etag");
      if (!etag.empty() && !now.empty() && now != etag) {
        return Attempt{.status = DataLossError("the object changed while it was read: ETag " + etag +
                                               " when opened, " + now + " now; rerun to read the new version")};
      }
      if (etag.empty()) etag = now;
      // Content-Range: bytes a-b/total
      const std::string cr = resp.Header("content-range");
      const size_t slash = cr.rfind('/');
      int64_t total = -1;
      if (slash != std::string::npos && cr.substr(slash + 1) != "*") total = std::atoll(cr.c_str() + slash + 1);
      if (resp.status == 200) total = std::atoll(resp.Header("content-length").c_str());
      if (total >= 0) {
        got.size = total;
        expected = std::min(expected, std::max<int64_t>(0, total - offset));
      }
      got.etag = etag;
      got.mtime_ns = ParseHttpTime(resp.Header("last-modified"));
    }
    received += wrote;
    bytes_read_.fetch_add(wrote, std::memory_order_relaxed);
    if (got.size == 0 && resp.Header("content-range").ends_with("/0")) {
      // An empty object (some servers answer "bytes 0-0/0" and a body they never send).
      expected = 0;
      return Attempt{.ok = true};
    }
    Attempt a = Judge(te, err, resp);
    if (a.ok && received < expected) {  // the body ended early: resume from the next byte
      a = Attempt{.retryable = true, .reason = "short body",
                  .last = "the body ended after " + std::to_string(received) + " of " + std::to_string(expected) + " bytes"};
    }
    return a;
  });
  if (!s.ok()) return s;
  if (past_end) return int64_t{0};
  if (info != nullptr) *info = got;
  return received;
}

Status S3Client::Put(const std::string& bucket, const std::string& key, std::string_view body) {
  return Run(ObjectUri(bucket, key) + ": PUT (" + std::to_string(body.size()) + " bytes)", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te = http_.Send(Build("PUT", bucket, key, {}, {}, body), &resp, nullptr, &err);
    Attempt a = Judge(te, err, resp);
    if (a.ok) bytes_written_.fetch_add(static_cast<int64_t>(body.size()), std::memory_order_relaxed);
    return a;
  });
}

Status S3Client::Delete(const std::string& bucket, const std::string& key) {
  return Run(ObjectUri(bucket, key) + ": DELETE", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te = http_.Send(Build("DELETE", bucket, key, {}, {}, {}), &resp, nullptr, &err);
    if (te == TransportError::kNone && resp.status == 404) return Attempt{.ok = true};  // already gone
    return Judge(te, err, resp);
  });
}

Result<std::vector<ListEntry>> S3Client::List(const std::string& bucket, const std::string& prefix,
                                              const std::string& delimiter, int max_keys, int64_t limit) {
  std::vector<ListEntry> out;
  std::string token;
  for (;;) {
    Headers q{{"list-type", "2"}, {"max-keys", std::to_string(max_keys)}, {"prefix", prefix}};
    if (!delimiter.empty()) q.emplace_back("delimiter", delimiter);
    if (!token.empty()) q.emplace_back("continuation-token", token);
    std::sort(q.begin(), q.end());
    XmlNode page;
    Status s = Run("s3://" + bucket + "/" + prefix + ": LIST", [&](int) {
      HttpResponse resp;
      std::string err;
      const TransportError te = http_.Send(Build("GET", bucket, "", q, {}, {}), &resp, nullptr, &err);
      Attempt a = Judge(te, err, resp);
      if (!a.ok) return a;
      Result<XmlNode> x = ParseXml(resp.body);
      if (!x.ok() || x->name != "ListBucketResult") {
        return Attempt{.retryable = true, .reason = "bad listing",
                       .last = "unreadable ListObjectsV2 response (" + (x.ok() ? "root <" + x->name + ">" : x.status().message()) + ")"};
      }
      page = std::move(x).value();
      return a;
    });
    if (!s.ok()) return s;
    for (const XmlNode* c : page.Children("Contents")) {
      out.push_back(ListEntry{c->ChildText("Key"), std::atoll(c->ChildText("Size").c_str()), c->ChildText("ETag"),
                              ParseIsoTime(c->ChildText("LastModified")), false});
    }
    for (const XmlNode* c : page.Children("CommonPrefixes")) out.push_back(ListEntry{c->ChildText("Prefix"), 0, "", 0, true});
    token = page.ChildText("NextContinuationToken");
    if (page.ChildText("IsTruncated") != "true" || token.empty()) break;
    if (limit >= 0 && static_cast<int64_t>(out.size()) >= limit) break;
  }
  std::sort(out.begin(), out.end(), [](const ListEntry& a, const ListEntry& b) { return a.key < b.key; });
  return out;
}

Result<std::string> S3Client::CreateMultipartUpload(const std::string& bucket, const std::string& key) {
  std::string upload_id;
  Status s = Run(ObjectUri(bucket, key) + ": CreateMultipartUpload", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te = http_.Send(Build("POST", bucket, key, {{"uploads", ""}}, {}, {}), &resp, nullptr, &err);
    Attempt a = Judge(te, err, resp);
    if (!a.ok) return a;
    Result<XmlNode> x = ParseXml(resp.body);
    if (!x.ok() || x->ChildText("UploadId").empty()) {
      return Attempt{.retryable = true, .reason = "bad response", .last = "no UploadId in the response"};
    }
    upload_id = x->ChildText("UploadId");
    return a;
  });
  if (!s.ok()) return s;
  return upload_id;
}

Result<std::string> S3Client::UploadPart(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, int part_number, std::string_view body) {
  std::string etag;
  Status s = Run(ObjectUri(bucket, key) + ": UploadPart " + std::to_string(part_number), [&](int) {
    HttpResponse resp;
    std::string err;
    const Headers q{{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}};
    const TransportError te = http_.Send(Build("PUT", bucket, key, q, {}, body), &resp, nullptr, &err);
    Attempt a = Judge(te, err, resp);
    if (a.ok) {
      etag = resp.Header("etag");
      bytes_written_.fetch_add(static_cast<int64_t>(body.size()), std::memory_order_relaxed);
    }
    return a;
  });
  if (!s.ok()) return s;
  return etag;
}

bool S3Client::Holds(const std::string& bucket, const std::string& key, const std::vector<std::string>& part_etags,
                     const UploadedObject& made) {
  Result<ObjectInfo> info = Head(bucket, key);
  if (!info.ok() || info->size != made.size) return false;
  std::string etag = info->etag;
  std::erase(etag, '"');
  return !etag.empty() && (etag == made.md5_hex || etag == MultipartEtag(part_etags));
}

Status S3Client::CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                         const std::string& upload_id, const std::vector<std::string>& part_etags,
                                         const UploadedObject& made) {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < part_etags.size(); ++i) {
    body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + part_etags[i] + "</ETag></Part>";
  }
  body += "</CompleteMultipartUpload>";
  bool answer_lost = false;  // an earlier attempt may have completed the upload
  return Run(ObjectUri(bucket, key) + ": CompleteMultipartUpload", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te =
        http_.Send(Build("POST", bucket, key, {{"uploadId", upload_id}}, {}, body), &resp, nullptr, &err);
    Attempt a = Judge(te, err, resp);
    // S3 may answer 200 and report an error in the body.
    if (a.ok && resp.body.find("<Error>") != std::string::npos) {
      const auto [code, message] = ErrorCodeOf(resp);
      a = Attempt{.retryable = RetryableCode(code), .status = UnavailableError("failed: " + code + " " + message),
                  .reason = code, .last = "HTTP 200 with error " + code + " (" + message + ")"};
    }
    if (!a.ok && answer_lost && Holds(bucket, key, part_etags, made)) return Attempt{.ok = true};
    answer_lost |= te != TransportError::kNone;
    return a;
  });
}

Status S3Client::AbortMultipartUpload(const std::string& bucket, const std::string& key, const std::string& upload_id) {
  return Run(ObjectUri(bucket, key) + ": AbortMultipartUpload", [&](int) {
    HttpResponse resp;
    std::string err;
    const TransportError te =
        http_.Send(Build("DELETE", bucket, key, {{"uploadId", upload_id}}, {}, {}), &resp, nullptr, &err);
    return Judge(te, err, resp);
  });
}

}  // namespace rectrain::io::s3
