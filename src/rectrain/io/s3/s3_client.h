// rectrain/io/s3/s3_client.h: the S3 REST operations rectrain uses (HEAD, ranged GET, PUT,
// ListObjectsV2 with pagination, DELETE, multipart upload), signed with SigV4 and retried.
//
// Retries: an attempt that fails with a connection error, a timeout or stall, a reset, HTTP 5xx,
// 429, or an S3 error code SlowDown / RequestTimeout / InternalError is retried after an
// exponential backoff with full jitter (delay uniform in [0, min(max, base * 2^attempt)]), up
// to S3Config::max_attempts attempts. A ranged GET that breaks after some bytes resumes from the
// first byte not yet received. After the budget the error names the object, the operation and
// the last HTTP status or transport error:
//   s3://b/k: GET bytes 0-2097151 failed after 10 attempts (12.4 s): HTTP 503 SlowDown (Please
//   reduce your request rate.)
// Codes: NotFound (404 / NoSuchKey / NoSuchBucket), PermissionDenied (403, with where the
// credentials came from), DataLoss (the object's ETag changed), Unavailable (retries spent),
// InvalidArgument (other 4xx).
//
// Thread safety: every method may be called from any number of threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/io/s3/http_client.h"
#include "rectrain/io/s3/s3_config.h"

namespace rectrain::io::s3 {

struct ObjectInfo {
  int64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;
};

struct ListEntry {
  std::string key;
  int64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;
  bool is_prefix = false;  // a CommonPrefix (with a delimiter): key ends in the delimiter
};

class S3Client {
 public:
  explicit S3Client(S3Config config);

  const S3Config& config() const { return config_; }

  Result<ObjectInfo> Head(const std::string& bucket, const std::string& key);
  // Reads bytes [offset, offset + n) into dst (n > 0; fewer only past the end of the object).
  // `expect_etag` (if not empty) must match the object's; *info (may be null) receives its size
  // and ETag. offset beyond the end reads 0 bytes.
  Result<int64_t> GetRange(const std::string& bucket, const std::string& key, int64_t offset, int64_t n, char* dst,
                           const std::string& expect_etag, ObjectInfo* info);
  Status Put(const std::string& bucket, const std::string& key, std::string_view body);
  Status Delete(const std::string& bucket, const std::string& key);
  // Every object (and, with a delimiter, common prefix) under `prefix`, in key order, following
  // continuation tokens across pages. `max_keys` per page (1000 at most on S3).
  Result<std::vector<ListEntry>> List(const std::string& bucket, const std::string& prefix,
                                      const std::string& delimiter, int max_keys = 1000, int64_t limit = -1);

  Result<std::string> CreateMultipartUpload(const std::string& bucket, const std::string& key);
  // Returns the part's ETag.
  Result<std::string> UploadPart(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                 int part_number, std::string_view body);
  // `made`: the object the upload makes. An attempt whose answer is lost (a reset, a timeout)
  // may have completed the upload on the server, and then its retries fail (S3: 404
  // NoSuchUpload; s3rver: 500): after such a loss, a failed attempt asks (HEAD) whether the key
  // holds `made` (its size, and as ETag its MD5 or S3's multipart ETag, the MD5 of the parts'
  // MD5s and "-N") and if so counts the upload as complete.
  struct UploadedObject {
    int64_t size = 0;
    std::string md5_hex;  // of all the bytes
  };
  Status CompleteMultipartUpload(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                 const std::vector<std::string>& part_etags, const UploadedObject& made);
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key, const std::string& upload_id);

  // Counters over the client's life: requests, retries by reason, bytes.
  RemoteIoStats stats() const;

 private:
  struct Attempt;  // the outcome of one try (s3_client.cc)

  // URL and signed headers of one attempt.
  HttpRequest Build(const std::string& method, const std::string& bucket, const std::string& key,
                    const std::vector<std::pair<std::string, std::string>>& query,
                    std::vector<std::pair<std::string, std::string>> headers, std::string_view body) const;
  // Classifies a finished exchange: OK (2xx), retryable, or a final error.
  Attempt Judge(TransportError te, const std::string& terr, const HttpResponse& resp) const;
  // Runs `attempt` until it succeeds, fails for good, or the budget is spent.
  Status Run(const std::string& what, const std::function<Attempt(int attempt_no)>& attempt);
  void CountRetry(const std::string& reason);
  // Whether the key holds `made` now (CompleteMultipartUpload).
  bool Holds(const std::string& bucket, const std::string& key, const std::vector<std::string>& part_etags,
             const UploadedObject& made);

  S3Config config_;
  HttpClient http_;
  std::atomic<int64_t> requests_{0}, retries_{0}, bytes_read_{0}, bytes_written_{0};
  mutable std::mutex mu_;
  std::map<std::string, int64_t> retry_reasons_;  // guarded by mu_
};

// S3's ETag of an object made by a multipart upload (AWS, MinIO, Ceph): the MD5 of the parts'
// binary MD5s (their ETags, quoted or not), "-" and the number of parts. Empty when a part's ETag
// is not an MD5 (SSE-KMS, some stores).
std::string MultipartEtag(const std::vector<std::string>& part_etags);

// "s3://bucket/key" -> (bucket, key). InvalidArgument for another scheme or an empty bucket.
Result<std::pair<std::string, std::string>> ParseS3Uri(std::string_view uri);

}  // namespace rectrain::io::s3
