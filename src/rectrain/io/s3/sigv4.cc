#include "rectrain/io/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

namespace rectrain::io::s3 {

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Header values: leading/trailing spaces trimmed, inner runs of spaces (and folded line
// breaks) collapsed to one space.
std::string TrimAll(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Removes "." and ".." segments and empty segments (RFC 3986 section 5.2.4, plus the slash
// collapsing AWS services apply); keeps a trailing slash.
std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    std::string_view seg = path.substr(pos, next - pos);
    if (seg == "..") {
      if (!out.empty()) out.pop_back();
    } else if (!seg.empty() && seg != ".") {
      out.push_back(seg);
    }
    pos = next + 1;
  }
  std::string result;
  for (std::string_view seg : out) {
    result += '/';
    result.append(seg);
  }
  const bool trailing = !path.empty() && (path.back() == '/' || path.ends_with("/.") || path.ends_with("/.."));
  if (result.empty() || trailing) result += '/';
  return result;
}

std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return Hex(md, sizeof(md));
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), md, &len);
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string AmzDate(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

Signature SignV4(const Credentials& creds, std::string_view region, std::string_view service,
                 std::string_view amz_date, const SignOptions& options, SignableRequest* req) {
  req->headers.emplace_back("X-Amz-Date", std::string(amz_date));
  std::string payload_hash = options.payload_hash;
  if (payload_hash.empty()) payload_hash = Sha256Hex(req->body);
  if (options.sign_body) req->headers.emplace_back("X-Amz-Content-Sha256", payload_hash);
  if (!creds.session_token.empty() && !options.omit_session_token) {
    req->headers.emplace_back("X-Amz-Security-Token", creds.session_token);
  }
  // Canonical headers: lower-case names, sorted; values of a repeated name joined by ','.
  std::vector<std::pair<std::string, std::string>> canon;
  for (const auto& [name, value] : req->headers) canon.emplace_back(Lower(name), TrimAll(value));
  std::stable_sort(canon.begin(), canon.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < canon.size(); ++i) {
    if (i > 0 && canon[i].first == canon[i - 1].first) {
      canonical_headers.pop_back();  // the '\n'
      canonical_headers += ',' + canon[i].second + '\n';
      continue;
    }
    canonical_headers += canon[i].first + ':' + canon[i].second + '\n';
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += canon[i].first;
  }
  const std::string path = options.normalize_path ? NormalizePath(req->path) : req->path;
  Signature sig;
  sig.canonical_request = req->method + '\n' + UriEncode(path, true) + '\n' + CanonicalQuery(req->query) + '\n' +
                          canonical_headers + '\n' + signed_headers + '\n' + payload_hash;
  const std::string date(amz_date.substr(0, 8));
  const std::string scope = date + '/' + std::string(region) + '/' + std::string(service) + "/aws4_request";
  sig.string_to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + '\n' + scope + '\n' + Sha256Hex(sig.canonical_request);
  std::string key = HmacSha256("AWS4" + creds.secret_access_key, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, "aws4_request");
  const std::string raw = HmacSha256(key, sig.string_to_sign);
  sig.signature = Hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  sig.authorization = "AWS4-HMAC-SHA256 Credential=" + creds.access_key_id + '/' + scope +
                      ", SignedHeaders=" + signed_headers + ", Signature=" + sig.signature;
  req->headers.emplace_back("Authorization", sig.authorization);
  if (!creds.session_token.empty() && options.omit_session_token) {
    req->headers.emplace_back("X-Amz-Security-Token", creds.session_token);
  }
  return sig;
}

}  // namespace rectrain::io::s3
