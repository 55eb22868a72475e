// rectrain/http/request_parser.h: the one HTTP/1.1 request parser of rectrain's servers. Strict
// (RFC 9112, no leniency that a proxy in front could read differently: request smuggling),
// bounded (every byte it buffers is under a limit that answers 413/414/431 as soon as it is
// passed) and incremental (bytes go in as they arrive, in pieces of any size; pipelined
// requests stay in the input for the next call). It never touches a socket, so it is unit-tested
// and fuzzed on its own (fuzz/http_request_fuzzer.cc).
//
// Refused, with the HTTP status the server answers and then closes the connection:
//   400  a malformed request line, header line or chunk; a bare LF or CR; obs-fold; a header
//        name with spaces; control characters in a value; Content-Length that is not digits, or
//        given twice; Content-Length together with Transfer-Encoding; Transfer-Encoding in
//        HTTP/1.0; an HTTP/1.1 request without Host, or Host given twice or not a valid
//        host[:port] (RFC 3986 authority without userinfo); a request target that does not
//        start with '/', or has a bad percent escape, or an escaped NUL
//   413  a body (Content-Length, or the sum of the chunks so far) over max_body_bytes
//   414  a request target over max_target_bytes
//   417  Expect with anything but 100-continue
//   431  request line + headers over max_head_bytes, or more than max_headers headers
//   501  a transfer coding other than chunked
//   505  an HTTP version other than 1.0 and 1.1
// A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 6.3): it
// is complete at the end of its headers.
//
// Thread safety: none; one parser per connection.
//
// Example:
//   RequestParser parser(limits);
//   std::string in;                       // bytes read from the socket are appended here
//   switch (parser.Parse(&in)) {          // consumes what it used from the front of `in`
//     case ParseResult::kDone:  Handle(parser.request()); parser.Reset(); break;
//     case ParseResult::kError: Answer(parser.error()); Close(); break;
//     case ParseResult::kNeedMore: if (parser.ShouldSendContinue()) ...; break;
//   }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::http {

struct ParserLimits {
  int64_t max_body_bytes = 1 << 20;   // Content-Length, or the decoded chunks together
  int64_t max_head_bytes = 16 << 10;  // request line + header lines, line ends included
  int64_t max_target_bytes = 8 << 10;  // the request target (path and query)
  int max_headers = 100;
};

struct HttpRequest {
  std::string method;    // a token, case-sensitive ("GET", "POST", ...)
  std::string target;    // as sent: "/api/runs?metric=auc>=0.8"
  std::string path;      // percent-decoded path of the target ("/api/runs")
  std::string query;     // the raw query after '?', not decoded ("" if none)
  int minor_version = 1;  // HTTP/1.<minor_version>: 0 or 1
  // Header fields in order; names lower-cased, values without leading/trailing whitespace.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;       // decoded (chunks joined)
  bool keep_alive = true;  // HTTP/1.1 without "Connection: close", or 1.0 with keep-alive
  bool expect_continue = false;

  // The value of the first header named `lower_name`, or null.
  const std::string* Header(std::string_view lower_name) const;
};

// Why a request was refused: the HTTP status to answer, the Status code of the JSON body and a
// message that names what was wrong.
struct HttpError {
  int status = 400;
  StatusCode code = StatusCode::kInvalidArgument;
  std::string message;
};

enum class ParseResult { kNeedMore, kDone, kError };

class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits) : limits_(limits) {}

  // Consumes bytes from the front of *in: all of it while the request is incomplete (a partial
  // line stays until its end arrives), and exactly the request's bytes when it is done (what
  // follows is the next, pipelined request). kDone: request() holds it until Reset(); kError:
  // error() says why, and the connection must be closed (framing is lost). Calling Parse after
  // kDone or kError without Reset() returns the same result.
  ParseResult Parse(std::string* in);

  // True once the head of a request with "Expect: 100-continue" has been parsed and its body
  // is still awaited, until ContinueSent() is called: the server then writes
  // "HTTP/1.1 100 Continue\r\n\r\n" so the client sends the body.
  bool ShouldSendContinue() const;
  void ContinueSent() { continue_sent_ = true; }

  // True when no byte of a request has been consumed since construction or Reset() (an idle
  // keep-alive connection, as against one in the middle of a request).
  bool idle() const { return state_ == State::kHead && !started_; }
  // True once the request's head is complete (body, if any, pending or done).
  bool head_done() const { return state_ != State::kHead && state_ != State::kError; }

  HttpRequest& request() { return request_; }
  const HttpError& error() const { return error_; }
  void Reset();

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone, kError };

  ParseResult Fail(int status, StatusCode code, std::string message);
  ParseResult ParseHead(std::string* in);
  ParseResult ParseChunked(std::string* in);
  ParseResult ChunkSizeLine(std::string_view line);
  ParseResult TrailerLine(std::string_view line);
  ParseResult ApplyHead(std::string_view head);
  ParseResult ParseRequestLine(std::string_view line);
  ParseResult ParseFraming();

  ParserLimits limits_;
  State state_ = State::kHead;
  bool started_ = false;        // a byte of this request has been consumed
  size_t scanned_ = 0;          // bytes of *in already searched for the end of the head
  int64_t body_left_ = 0;       // kBody: bytes of Content-Length still to come
  int64_t chunk_left_ = 0;      // kChunkData: bytes of this chunk still to come
  int64_t trailer_bytes_ = 0;   // kTrailer: bytes of trailer lines so far
  bool continue_sent_ = false;
  HttpRequest request_;
  HttpError error_;
};

// "Host" as RFC 9110 7.2 has it: uri-host [":" port]; uri-host is an IP-literal ("[::1]"), an
// IPv4 address or a reg-name (letters, digits, "-._~", sub-delims, %XX). Returns the host
// without brackets and port ("[::1]:80" -> "::1"); InvalidArgument for anything else
// ("localhost:80@evil.com", "[::1]evil", "a:b", an empty host, a port over 65535).
Result<std::string> ParseHostHeader(std::string_view value);

// Percent-decodes `text` ("%41" -> "A"; '+' -> ' ' when `plus_is_space`, as in a query).
// InvalidArgument for a '%' not followed by two hex digits, or an escaped NUL.
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// A query string split on '&', each part on its first '=' ("metric=auc>=0.8" is key "metric",
// value "auc>=0.8"; "flag" is key "flag", value ""), keys and values percent-decoded, in order
// (keys may repeat). Empty parts are skipped. InvalidArgument for a bad escape.
Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query);

}  // namespace rectrain::http
