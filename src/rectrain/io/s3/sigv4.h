// rectrain/io/s3/sigv4.h: AWS Signature Version 4 (header signing), with OpenSSL's SHA-256 and
// HMAC-SHA256. Checked against AWS's published test suite (tests/golden/sigv4/, sigv4_test.cc)
// and the S3 documentation's worked example.
//
// The request is given decoded: `path` is the raw path ("/bucket/my key"), query parameters are
// raw (name, value) pairs; SignV4 percent-encodes both the way SigV4 prescribes (RFC 3986
// unreserved characters kept, '/' kept in the path). S3 signs the path as is (normalize_path
// false); other AWS services first remove "." / ".." segments and repeated slashes.
//
// Thread safety: pure functions.
//
// Example:
//   s3::SignableRequest req{"GET", "/bucket/key", {}, {{"Host", "127.0.0.1:9000"}}};
//   s3::SignV4(creds, "us-east-1", "s3", "20150830T123600Z", {.sign_body = true}, &req);
//   // req.headers now holds X-Amz-Date, X-Amz-Content-Sha256 and Authorization.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rectrain::io::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials only
  // No key: requests go unsigned (public buckets).
  bool anonymous() const { return access_key_id.empty(); }
};

struct SignableRequest {
  std::string method;
  std::string path;                                        // raw, starts with '/'
  std::vector<std::pair<std::string, std::string>> query;  // raw name, value
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;  // hashed when SignOptions::sign_body
};

struct SignOptions {
  bool normalize_path = false;      // true for non-S3 services
  bool sign_body = true;            // add and sign x-amz-content-sha256 (S3 requires it)
  bool omit_session_token = false;  // send the token unsigned (a variant some services need)
  // The payload hash to sign instead of hashing `body` ("UNSIGNED-PAYLOAD", or precomputed).
  std::string payload_hash;
};

// What SignV4 computed (tests compare each step with the published vectors).
struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // hex
  std::string authorization;
};

// Adds X-Amz-Date (`amz_date`, "YYYYMMDDTHHMMSSZ"), X-Amz-Security-Token (with a session
// token), X-Amz-Content-Sha256 (sign_body) and Authorization to req->headers, and returns the
// intermediate values. Headers already in `req` are all signed.
Signature SignV4(const Credentials& creds, std::string_view region, std::string_view service,
                 std::string_view amz_date, const SignOptions& options, SignableRequest* req);

// Percent-encodes every byte except A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash) as %XX.
std::string UriEncode(std::string_view s, bool keep_slash);
// Lower-case hex of `n` bytes.
std::string Hex(const unsigned char* p, size_t n);
// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);
// Raw 32-byte HMAC-SHA256.
std::string HmacSha256(std::string_view key, std::string_view data);
// "YYYYMMDDTHHMMSSZ" for a UNIX time in seconds.
std::string AmzDate(int64_t unix_seconds);

}  // namespace rectrain::io::s3
