// RequestParser on its own: every accepted form and every refusal with its status, the limits
// at their exact edges, and that feeding the bytes one at a time (or in any split) gives what
// feeding them at once gives.
#include "rectrain/http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "rectrain/base/random.h"

namespace rectrain::http {
namespace {

struct Outcome {
  ParseResult result = ParseResult::kNeedMore;
  HttpRequest request;
  HttpError error;
  std::string rest;  // what was left in the input
};

// Feeds `bytes` in pieces of `piece` bytes (0: all at once) until the parser is done or fails.
Outcome Feed(const std::string& bytes, size_t piece = 0, ParserLimits limits = {}) {
  RequestParser parser(limits);
  Outcome out;
  std::string in;
  size_t fed = 0;
  do {
    const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - fed);
    in.append(bytes, fed, n);
    fed += n;
    out.result = parser.Parse(&in);
  } while (out.result == ParseResult::kNeedMore && fed < bytes.size());
  if (out.result == ParseResult::kDone) out.request = parser.request();
  if (out.result == ParseResult::kError) out.error = parser.error();
  out.rest = in + bytes.substr(fed);  // what the parser left, then what was not fed yet
  return out;
}

int StatusOf(const std::string& bytes, ParserLimits limits = {}) {
  Outcome o = Feed(bytes, 0, limits);
  return o.result == ParseResult::kDone ? 200 : o.result == ParseResult::kError ? o.error.status : 0;
}

TEST(RequestParserTest, AGetAndItsParts) {
  Outcome o = Feed("GET /api/runs%2Fx?metric=auc>=0.8&q=a+b HTTP/1.1\r\nHost: localhost:8080\r\n"
                  "X-Empty:\r\nX-Spaced:  a b \t\r\n\r\nNEXT");
  ASSERT_EQ(o.result, ParseResult::kDone);
  EXPECT_EQ(o.request.method, "GET");
  EXPECT_EQ(o.request.path, "/api/runs/x");
  EXPECT_EQ(o.request.query, "metric=auc>=0.8&q=a+b");
  EXPECT_EQ(o.request.minor_version, 1);
  EXPECT_TRUE(o.request.keep_alive);
  EXPECT_EQ(*o.request.Header("host"), "localhost:8080");
  EXPECT_EQ(*o.request.Header("x-empty"), "");
  EXPECT_EQ(*o.request.Header("x-spaced"), "a b");
  EXPECT_EQ(o.request.Header("x-missing"), nullptr);
  EXPECT_EQ(o.rest, "NEXT");  // a pipelined request stays
}

TEST(RequestParserTest, BodiesByLengthChunksOrNone) {
  Outcome cl = Feed("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET");
  ASSERT_EQ(cl.result, ParseResult::kDone);
  EXPECT_EQ(cl.request.body, "hello");
  EXPECT_EQ(cl.rest, "GET");
  Outcome chunked = Feed("POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
                        "5\r\nhello\r\nA;ext=1;b\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\nrest");
  ASSERT_EQ(chunked.result, ParseResult::kDone);
  EXPECT_EQ(chunked.request.body, "hello0123456789");
  EXPECT_EQ(chunked.rest, "rest");
  Outcome none = Feed("POST /v1/reload HTTP/1.1\r\nHost: h\r\n\r\n");  // done at the head (RFC 9112 6.3)
  ASSERT_EQ(none.result, ParseResult::kDone);
  EXPECT_EQ(none.request.body, "");
}

TEST(RequestParserTest, ConnectionAndVersion) {
  EXPECT_FALSE(Feed("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Feed("GET / HTTP/1.0\r\n\r\n").request.keep_alive);  // 1.0: no Host needed
  Outcome ka = Feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_TRUE(ka.request.keep_alive);
  EXPECT_EQ(ka.request.minor_version, 0);
  EXPECT_EQ(Feed("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").result, ParseResult::kDone);  // leading CRLFs
}

TEST(RequestParserTest, RefusalsAndTheirStatus) {
  const std::pair<const char*, int> cases[] = {
      {"GET / HTTP/1.1\nHost: h\n\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\n continued\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\n: v\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01" "b\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505},
      {"GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /%4 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /%00 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: localhost:80@evil.com\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: [::1]evil\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\nx", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x1\r\n\r\nx", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue-please\r\n\r\n", 417},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\nx", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", 400},
  };
  for (const auto& [bytes, status] : cases) {
    EXPECT_EQ(StatusOf(bytes), status) << ::testing::PrintToString(std::string(bytes));
  }
  // NUL inside a header value (the literal above stops at it).
  EXPECT_EQ(StatusOf(std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 31)), 400);
}

TEST(RequestParserTest, LimitsAtTheirEdges) {
  ParserLimits l;
  l.max_body_bytes = 10;
  l.max_target_bytes = 20;
  l.max_head_bytes = 100;
  l.max_headers = 3;
  const std::string host = "Host: h\r\n";
  EXPECT_EQ(StatusOf("POST / HTTP/1.1\r\n" + host + "Content-Length: 10\r\n\r\n0123456789", l), 200);
  Outcome over = Feed("POST / HTTP/1.1\r\n" + host + "Content-Length: 11\r\n\r\n", 0, l);
  EXPECT_EQ(over.error.status, 413);
  EXPECT_EQ(over.error.code, StatusCode::kResourceExhausted);
  const std::string chunked = "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(StatusOf(chunked + "5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n", l), 200);
  // The size line of the chunk that passes the limit is enough: its data is never awaited.
  Outcome chunk_over = Feed(chunked + "5\r\n01234\r\n6\r\n", 0, l);
  EXPECT_EQ(chunk_over.error.status, 413);
  EXPECT_EQ(chunk_over.error.message,
            "the chunked request body exceeds the limit of 10 bytes (5 bytes so far, then a chunk of 6)");
  EXPECT_EQ(StatusOf("GET /" + std::string(19, 'a') + " HTTP/1.1\r\n" + host + "\r\n", l), 200);
  EXPECT_EQ(StatusOf("GET /" + std::string(20, 'a') + " HTTP/1.1\r\n" + host + "\r\n", l), 414);
  // A request line that never ends is refused once it is longer than any allowed one.
  EXPECT_EQ(Feed("GET /" + std::string(100, 'a'), 0, l).error.status, 414);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n" + host + "A: 1\r\nB: 2\r\n\r\n", l), 200);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n" + host + "A: 1\r\nB: 2\r\nC: 3\r\n\r\n", l), 431);
  EXPECT_EQ(Feed("GET / HTTP/1.1\r\n" + host + "X: " + std::string(100, 'x'), 0, l).error.status, 431);
  EXPECT_EQ(StatusOf(chunked + "0\r\nX: " + std::string(100, 'x') + "\r\n\r\n", l), 431);
}

TEST(RequestParserTest, ExpectContinueIsAskedForOnceBeforeTheBody) {
  RequestParser p({});
  std::string in = "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(p.Parse(&in), ParseResult::kNeedMore);
  EXPECT_TRUE(p.ShouldSendContinue());
  p.ContinueSent();
  EXPECT_FALSE(p.ShouldSendContinue());
  in = "ok";
  EXPECT_EQ(p.Parse(&in), ParseResult::kDone);
  EXPECT_EQ(p.request().body, "ok");
  p.Reset();
  EXPECT_TRUE(p.idle());
  in = "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n";  // no body: nothing to ask for
  EXPECT_EQ(p.Parse(&in), ParseResult::kDone);
  EXPECT_FALSE(p.ShouldSendContinue());
}

// Any split of the input gives the same outcome as the whole; the parser never holds more
// than its limits, whatever the split.
TEST(RequestParserTest, PiecesOfAnySizeGiveTheSameOutcome) {
  const std::string inputs[] = {
      "GET /a?b=c HTTP/1.1\r\nHost: h\r\nX: y\r\n\r\nREST",
      "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n1234567GET",
      "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;e\r\nde\r\n0\r\nT: 1\r\n\r\nX",
      "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n",
      "GET / HTTP/1.1\r\nHost: h\rX\r\n\r\n",
      "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
  };
  for (const std::string& in : inputs) {
    const Outcome whole = Feed(in);
    for (size_t piece : {1, 2, 3, 5, 8, 13}) {
      const Outcome split = Feed(in, piece);
      EXPECT_EQ(split.result, whole.result) << in << " in pieces of " << piece;
      EXPECT_EQ(split.request.body, whole.request.body) << in;
      EXPECT_EQ(split.error.status, whole.error.status) << in;
      if (whole.result == ParseResult::kDone) {
        EXPECT_EQ(split.rest, whole.rest) << in;
      }
    }
  }
}

TEST(RequestParserTest, HostQueryAndPercentHelpers) {
  EXPECT_EQ(*ParseHostHeader("LocalHost"), "LocalHost");
  EXPECT_EQ(*ParseHostHeader("[::1]:8080"), "::1");
  EXPECT_EQ(*ParseHostHeader("127.0.0.1:"), "127.0.0.1");  // an empty port is allowed
  for (const char* bad : {"", ":80", "a b", "a:b", "a:-1", "a:123456", "[::1", "[nothost]", "[::1]x", "a@b", "a/b", "a%41"}) {
    EXPECT_FALSE(ParseHostHeader(bad).ok()) << bad;
  }
  auto q = ParseQuery("metric=val/auc>=0.7&param=model.type=deepfm&flag&&x=%3D+y&=v");
  ASSERT_TRUE(q.ok());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"metric", "val/auc>=0.7"}, {"param", "model.type=deepfm"}, {"flag", ""}, {"x", "= y"}, {"", "v"}};
  EXPECT_EQ(*q, want);
  EXPECT_FALSE(ParseQuery("a=%zz").ok());
  EXPECT_EQ(*PercentDecode("a+b%2B", false), "a+b+");
  EXPECT_EQ(PercentDecode("%00", true).status().code(), StatusCode::kInvalidArgument);
}

// Random bytes and mutations of valid requests: the parser ends every one in kDone, kError
// (with a 4xx/5xx status and a message) or kNeedMore, and never keeps more than its limits.
TEST(RequestParserTest, RandomAndMutatedInputsEndCleanly) {
  Rng rng(26);
  const std::string seeds[] = {"GET /a?b=c HTTP/1.1\r\nHost: h\r\n\r\n",
                               "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
                               "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"};
  ParserLimits limits;
  limits.max_body_bytes = 64;
  limits.max_head_bytes = 256;
  limits.max_target_bytes = 64;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[rng.Below(3)];
    for (int e = 0, edits = 1 + static_cast<int>(rng.Below(4)); e < edits; ++e) {
      const size_t pos = rng.Below(s.size() + 1);
      static const char kBytes[] = {'\r', '\n', ':', ' ', '0', 'f', ';', '%', '\0', '\x80', 'G'};
      if (rng.Below(2) == 0 && pos < s.size()) {
        s[pos] = rng.Below(2) ? kBytes[rng.Below(sizeof(kBytes))] : static_cast<char>(rng.Below(256));
      } else {
        s.insert(pos, 1 + rng.Below(3), kBytes[rng.Below(sizeof(kBytes))]);
      }
    }
    const Outcome o = Feed(s, 1 + rng.Below(7), limits);
    if (o.result == ParseResult::kError) {
      ASSERT_GE(o.error.status, 400) << ::testing::PrintToString(s);
      ASSERT_FALSE(o.error.message.empty());
    }
    if (o.result == ParseResult::kDone) {
      ASSERT_LE(o.request.body.size(), 64u);
    }
  }
}

}  // namespace
}  // namespace rectrain::http
