// rectrain/http/request_parser.cc: see request_parser.h.
#include "rectrain/http/request_parser.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace rectrain::http {
namespace {

constexpr int64_t kMaxChunkLineBytes = 4096;
constexpr size_t kMaxMethodBytes = 32;

bool IsTchar(unsigned char c) {
  return std::isalnum(c) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                                     std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTchar(static_cast<unsigned char>(c)); });
}

// A field value byte: HTAB, SP, VCHAR or obs-text; no other control character.
bool IsFieldValueByte(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A printable rendering of client bytes for an error message, at most 64 characters.
std::string Quote(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (s.size() > 64) out += "...";
  return "'" + out + "'";
}

}  // namespace

const std::string* HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

void RequestParser::Reset() {
  state_ = State::kHead;
  started_ = false;
  scanned_ = 0;
  body_left_ = chunk_left_ = trailer_bytes_ = 0;
  continue_sent_ = false;
  request_ = HttpRequest{};
  error_ = HttpError{};
}

bool RequestParser::ShouldSendContinue() const {
  return request_.expect_continue && !continue_sent_ &&
         (state_ == State::kBody || state_ == State::kChunkSize) && request_.body.empty();
}

ParseResult RequestParser::Fail(int status, StatusCode code, std::string message) {
  state_ = State::kError;
  error_ = HttpError{status, code, std::move(message)};
  return ParseResult::kError;
}

ParseResult RequestParser::Parse(std::string* in) {
  if (state_ == State::kDone) return ParseResult::kDone;
  if (state_ == State::kError) return ParseResult::kError;
  if (state_ == State::kHead) {
    const ParseResult head = ParseHead(in);
    if (head != ParseResult::kDone || state_ == State::kDone) return head;
  }
  if (state_ == State::kBody) {
    const size_t take = static_cast<size_t>(std::min<int64_t>(body_left_, static_cast<int64_t>(in->size())));
    request_.body.append(*in, 0, take);
    in->erase(0, take);
    body_left_ -= static_cast<int64_t>(take);
    if (body_left_ > 0) return ParseResult::kNeedMore;
    state_ = State::kDone;
    return ParseResult::kDone;
  }
  return ParseChunked(in);
}

// Finds the end of the head ("\r\n\r\n"), refusing bare LF/CR and NUL as it scans, and the
// limits as soon as they are passed.
ParseResult RequestParser::ParseHead(std::string* in) {
  if (scanned_ == 0) {  // Empty lines before a request are ignored (RFC 9112 2.2).
    size_t skip = 0;
    while (in->size() >= skip + 2 && (*in)[skip] == '\r' && (*in)[skip + 1] == '\n') skip += 2;
    if (skip > 0) {
      in->erase(0, skip);
      started_ = true;
    }
  }
  if (!in->empty()) started_ = true;
  const std::string& s = *in;
  const size_t first_line_limit = static_cast<size_t>(limits_.max_target_bytes) + kMaxMethodBytes + 16;
  size_t head_end = std::string::npos;
  for (size_t i = scanned_; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\0') return Fail(400, StatusCode::kInvalidArgument, "the request head contains a NUL byte");
    if (c == '\r' && i + 1 < s.size() && s[i + 1] != '\n') {
      return Fail(400, StatusCode::kInvalidArgument, "a bare CR in the request head; lines end with CRLF");
    }
    if (c != '\n') continue;
    if (i == 0 || s[i - 1] != '\r') {
      return Fail(400, StatusCode::kInvalidArgument, "a bare LF in the request head; lines end with CRLF");
    }
    if (i >= 3 && s[i - 2] == '\n' && s[i - 3] == '\r') {
      head_end = i + 1;
      break;
    }
  }
  const size_t first_lf = s.find('\n');
  if ((first_lf == std::string::npos ? s.size() : first_lf) > first_line_limit) {
    return Fail(414, StatusCode::kInvalidArgument,
                "the request line is longer than " + std::to_string(first_line_limit) +
                    " bytes (the request target may have at most " + std::to_string(limits_.max_target_bytes) +
                    ")");
  }
  const size_t head_bytes = head_end == std::string::npos ? s.size() : head_end;
  if (static_cast<int64_t>(head_bytes) > limits_.max_head_bytes) {
    return Fail(431, StatusCode::kInvalidArgument,
                "the request line and headers are longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
  }
  if (head_end == std::string::npos) {
    scanned_ = s.empty() ? 0 : s.size() - 1;  // a CR at the end is checked against what follows
    return ParseResult::kNeedMore;
  }
  const ParseResult r = ApplyHead(std::string_view(s).substr(0, head_end - 4));  // without the final CRLFCRLF
  in->erase(0, head_end);
  scanned_ = 0;
  return r;
}

ParseResult RequestParser::ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Fail(400, StatusCode::kInvalidArgument,
                "the request line must be METHOD SP TARGET SP HTTP/1.1, got " + Quote(line));
  }
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!IsToken(method) || method.size() > kMaxMethodBytes) {
    return Fail(400, StatusCode::kInvalidArgument, "the method " + Quote(method) + " is not a token");
  }
  if (version.size() != 8 || !version.starts_with("HTTP/") || !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' || !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return Fail(400, StatusCode::kInvalidArgument, "the HTTP version " + Quote(version) + " is malformed");
  }
  if (version[5] != '1' || version[7] > '1') {
    return Fail(505, StatusCode::kUnimplemented, "HTTP version " + std::string(version.substr(5)) +
                                                     " is not supported (1.0 and 1.1 are)");
  }
  if (static_cast<int64_t>(target.size()) > limits_.max_target_bytes) {
    return Fail(414, StatusCode::kInvalidArgument,
                "the request target of " + std::to_string(target.size()) + " bytes exceeds the limit of " +
                    std::to_string(limits_.max_target_bytes) + " bytes");
  }
  if (target.empty() || target[0] != '/') {
    return Fail(400, StatusCode::kInvalidArgument,
                "the request target must be a path starting with '/', got " + Quote(target));
  }
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') {
      return Fail(400, StatusCode::kInvalidArgument, "the request target " + Quote(target) +
                                                         " contains a character that must be percent-encoded");
    }
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.minor_version = version[7] - '0';
  const size_t q = target.find('?');
  Result<std::string> path = PercentDecode(target.substr(0, q), /*plus_is_space=*/false);
  if (!path.ok()) return Fail(400, StatusCode::kInvalidArgument, "the request path: " + path.status().message());
  request_.path = std::move(path).value();
  if (q != std::string_view::npos) request_.query = std::string(target.substr(q + 1));
  return ParseResult::kNeedMore;
}

ParseResult RequestParser::ApplyHead(std::string_view head) {
  size_t eol = head.find("\r\n");
  if (ParseRequestLine(head.substr(0, eol)) == ParseResult::kError) return ParseResult::kError;
  while (eol != std::string_view::npos) {
    const size_t start = eol + 2;
    eol = head.find("\r\n", start);
    const std::string_view line = head.substr(start, eol == std::string_view::npos ? eol : eol - start);
    if (line.front() == ' ' || line.front() == '\t') {
      return Fail(400, StatusCode::kInvalidArgument, "a header line starts with whitespace (obsolete line folding)");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Fail(400, StatusCode::kInvalidArgument, "the header line " + Quote(line) + " is not NAME: VALUE");
    }
    const std::string_view value = TrimOws(line.substr(colon + 1));
    if (!std::all_of(value.begin(), value.end(), [](char c) { return IsFieldValueByte(static_cast<unsigned char>(c)); })) {
      return Fail(400, StatusCode::kInvalidArgument, "the header " + Quote(line.substr(0, colon)) +
                                                         " has a control character in its value");
    }
    if (static_cast<int>(request_.headers.size()) >= limits_.max_headers) {
      return Fail(431, StatusCode::kInvalidArgument,
                  "the request has more than " + std::to_string(limits_.max_headers) + " headers");
    }
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    request_.headers.emplace_back(std::move(name), std::string(value));
  }
  return ParseFraming();
}

// Host, Connection, Expect and the body's framing, from the parsed headers.
ParseResult RequestParser::ParseFraming() {
  int hosts = 0, lengths = 0, encodings = 0;
  const std::string *host = nullptr, *length = nullptr, *encoding = nullptr, *expect = nullptr;
  HttpRequest& r = request_;
  r.keep_alive = r.minor_version == 1;
  for (const auto& [name, value] : r.headers) {
    if (name == "host") hosts++, host = &value;
    if (name == "content-length") lengths++, length = &value;
    if (name == "transfer-encoding") encodings++, encoding = &value;
    if (name == "expect") expect = &value;
    if (name != "connection") continue;
    for (size_t start = 0; start <= value.size();) {
      const size_t comma = std::min(value.find(',', start), value.size());
      const std::string_view option = TrimOws(std::string_view(value).substr(start, comma - start));
      if (EqualsIgnoreCase(option, "close")) r.keep_alive = false;
      if (EqualsIgnoreCase(option, "keep-alive") && r.minor_version == 0) r.keep_alive = true;
      start = comma + 1;
    }
  }
  if (hosts > 1) return Fail(400, StatusCode::kInvalidArgument, "the Host header is given more than once");
  if (hosts == 0 && r.minor_version == 1) {
    return Fail(400, StatusCode::kInvalidArgument, "an HTTP/1.1 request needs a Host header");
  }
  if (host != nullptr) {
    if (Result<std::string> h = ParseHostHeader(*host); !h.ok()) {
      return Fail(400, StatusCode::kInvalidArgument, "Host header " + Quote(*host) + ": " + h.status().message());
    }
  }
  if (lengths > 1) return Fail(400, StatusCode::kInvalidArgument, "Content-Length is given more than once");
  if (encodings > 1) return Fail(400, StatusCode::kInvalidArgument, "Transfer-Encoding is given more than once");
  if (lengths > 0 && encodings > 0) {
    return Fail(400, StatusCode::kInvalidArgument,
                "the request has both Content-Length and Transfer-Encoding; send one (RFC 9112 6.1)");
  }
  if (encoding != nullptr && r.minor_version == 0) {
    return Fail(400, StatusCode::kInvalidArgument, "Transfer-Encoding is not allowed in an HTTP/1.0 request");
  }
  if (encoding != nullptr && !EqualsIgnoreCase(*encoding, "chunked")) {
    return Fail(501, StatusCode::kUnimplemented,
                "Transfer-Encoding " + Quote(*encoding) + " is not supported: send the body as is or chunked");
  }
  if (expect != nullptr) {
    if (!EqualsIgnoreCase(*expect, "100-continue")) {
      return Fail(417, StatusCode::kInvalidArgument, "Expect " + Quote(*expect) + " is not supported (100-continue is)");
    }
    r.expect_continue = true;
  }
  if (encoding != nullptr) {
    state_ = State::kChunkSize;
    return ParseResult::kDone;
  }
  int64_t n = 0;
  if (length != nullptr) {
    if (length->empty() || length->size() > 18 ||
        !std::all_of(length->begin(), length->end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Fail(400, StatusCode::kInvalidArgument, "Content-Length " + Quote(*length) + " is not a number of bytes");
    }
    n = std::stoll(*length);
  }
  if (n > limits_.max_body_bytes) {
    return Fail(413, StatusCode::kResourceExhausted, "request body of " + std::to_string(n) +
                                                         " bytes exceeds the limit of " +
                                                         std::to_string(limits_.max_body_bytes) + " bytes");
  }
  body_left_ = n;
  r.body.reserve(static_cast<size_t>(n));
  state_ = n > 0 ? State::kBody : State::kDone;
  return ParseResult::kDone;
}

ParseResult RequestParser::ParseChunked(std::string* in) {
  while (true) {
    switch (state_) {
      case State::kChunkSize:
      case State::kTrailer: {
        const size_t lf = in->find('\n');
        const int64_t pending = static_cast<int64_t>(lf == std::string::npos ? in->size() : lf);
        if (state_ == State::kChunkSize && pending > kMaxChunkLineBytes) {
          return Fail(400, StatusCode::kInvalidArgument,
                      "a chunk size line is longer than " + std::to_string(kMaxChunkLineBytes) + " bytes");
        }
        if (state_ == State::kTrailer && trailer_bytes_ + pending > limits_.max_head_bytes) {
          return Fail(431, StatusCode::kInvalidArgument,
                      "the trailer fields are longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
        }
        if (lf == std::string::npos) return ParseResult::kNeedMore;
        if (lf == 0 || (*in)[lf - 1] != '\r') {
          return Fail(400, StatusCode::kInvalidArgument, "a bare LF in the chunked body; lines end with CRLF");
        }
        const std::string line = in->substr(0, lf - 1);
        in->erase(0, lf + 1);
        if (line.find('\r') != std::string::npos) {
          return Fail(400, StatusCode::kInvalidArgument, "a bare CR in the chunked body; lines end with CRLF");
        }
        const ParseResult r = state_ == State::kTrailer ? TrailerLine(line) : ChunkSizeLine(line);
        if (r != ParseResult::kNeedMore) return r;
        break;
      }
      case State::kChunkData: {
        const size_t take = static_cast<size_t>(std::min<int64_t>(chunk_left_, static_cast<int64_t>(in->size())));
        request_.body.append(*in, 0, take);
        in->erase(0, take);
        chunk_left_ -= static_cast<int64_t>(take);
        if (chunk_left_ > 0) return ParseResult::kNeedMore;
        state_ = State::kChunkDataEnd;
        break;
      }
      case State::kChunkDataEnd:
        if (!in->empty() && ((*in)[0] != '\r' || (in->size() >= 2 && (*in)[1] != '\n'))) {
          return Fail(400, StatusCode::kInvalidArgument, "chunk data is not followed by CRLF (a wrong chunk size?)");
        }
        if (in->size() < 2) return ParseResult::kNeedMore;
        in->erase(0, 2);
        state_ = State::kChunkSize;
        break;
      default:
        return Fail(500, StatusCode::kInternal, "request parser in an unexpected state");
    }
  }
}

// "HEX[;ext]": the next chunk's size, refused as soon as it would pass max_body_bytes.
// kNeedMore: go on parsing.
ParseResult RequestParser::ChunkSizeLine(std::string_view line) {
  size_t digits = 0;
  int64_t size = 0;
  while (digits < line.size() && HexValue(line[digits]) >= 0) {
    if (digits == 15) return Fail(400, StatusCode::kInvalidArgument, "a chunk size has more than 15 hex digits");
    size = size * 16 + HexValue(line[digits++]);
  }
  std::string_view ext = line.substr(digits);
  while (!ext.empty() && (ext.front() == ' ' || ext.front() == '\t')) ext.remove_prefix(1);
  if (digits == 0 || (!ext.empty() && ext.front() != ';') ||
      !std::all_of(ext.begin(), ext.end(), [](char c) { return IsFieldValueByte(static_cast<unsigned char>(c)); })) {
    return Fail(400, StatusCode::kInvalidArgument, "the chunk size line " + Quote(line) + " is not HEX[;ext]");
  }
  if (size > limits_.max_body_bytes - static_cast<int64_t>(request_.body.size())) {
    return Fail(413, StatusCode::kResourceExhausted,
                "the chunked request body exceeds the limit of " + std::to_string(limits_.max_body_bytes) + " bytes (" +
                    std::to_string(request_.body.size()) + " bytes so far, then a chunk of " + std::to_string(size) +
                    ")");
  }
  chunk_left_ = size;
  state_ = size == 0 ? State::kTrailer : State::kChunkData;
  return ParseResult::kNeedMore;
}

// A trailer field (checked, then dropped) or the empty line that ends the request.
ParseResult RequestParser::TrailerLine(std::string_view line) {
  if (line.empty()) {
    state_ = State::kDone;
    return ParseResult::kDone;
  }
  trailer_bytes_ += static_cast<int64_t>(line.size()) + 2;
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon)) ||
      !std::all_of(line.begin(), line.end(), [](char c) { return IsFieldValueByte(static_cast<unsigned char>(c)); })) {
    return Fail(400, StatusCode::kInvalidArgument, "the trailer line " + Quote(line) + " is not NAME: VALUE");
  }
  return ParseResult::kNeedMore;
}

Result<std::string> ParseHostHeader(std::string_view value) {
  std::string_view host, rest;
  if (value.starts_with('[')) {
    const size_t close = value.find(']');
    if (close == std::string_view::npos) return InvalidArgumentError("an IPv6 literal without ']'");
    host = value.substr(1, close - 1);
    rest = value.substr(close + 1);
    in6_addr addr{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &addr) != 1) {
      return InvalidArgumentError("'" + std::string(host) + "' is not an IPv6 address");
    }
  } else {
    const size_t colon = value.find(':');
    host = value.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : value.substr(colon);
    if (host.empty()) return InvalidArgumentError("the host is empty");
    for (char c : host) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.' && c != '_' && c != '~') {
        return InvalidArgumentError("a host name has only letters, digits and '-._~'");
      }
    }
  }
  if (!rest.empty()) {
    if (rest[0] != ':') return InvalidArgumentError("only ':PORT' may follow the host");
    const std::string_view port = rest.substr(1);
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (!port.empty() && std::stoi(std::string(port)) > 65535)) {
      return InvalidArgumentError("the port must be a number up to 65535");
    }
  }
  return std::string(host);
}

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      const int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return InvalidArgumentError("'%' must be followed by two hex digits in " + Quote(text));
      }
      if (hi == 0 && lo == 0) return InvalidArgumentError("an escaped NUL (%00) in " + Quote(text));
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t start = 0; start <= query.size();) {
    const size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view part = query.substr(start, amp - start);
    start = amp + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    RECTRAIN_ASSIGN_OR_RETURN(std::string key, PercentDecode(part.substr(0, eq), true));
    std::string value;
    if (eq != std::string_view::npos) {
      RECTRAIN_ASSIGN_OR_RETURN(value, PercentDecode(part.substr(eq + 1), true));
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

}  // namespace rectrain::http
