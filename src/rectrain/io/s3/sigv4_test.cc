// SigV4 against AWS's published Signature Version 4 test suite (tests/golden/sigv4/, see its
// README for the source) and the worked example of the S3 documentation.
#include "rectrain/io/s3/sigv4.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rectrain::io::s3 {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// request.txt: "METHOD TARGET HTTP/1.1", headers ("Name:value", folded lines start with a
// space), an empty line, the body.
SignableRequest ParseRequest(const std::string& text, std::string* body) {
  SignableRequest req;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  req.method = line.substr(0, line.find(' '));
  std::string target = line.substr(line.find(' ') + 1);
  target = target.substr(0, target.rfind(" HTTP/"));
  const size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    std::string query = target.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size() && !query.empty()) {
      size_t amp = query.find('&', pos);
      if (amp == std::string::npos) amp = query.size();
      const std::string pair = query.substr(pos, amp - pos);
      const size_t eq = pair.find('=');
      req.query.emplace_back(PercentDecode(pair.substr(0, eq)),
                             eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1)));
      pos = amp + 1;
    }
  }
  while (std::getline(in, line) && !line.empty()) {
    if (line[0] == ' ' || line[0] == '\t') {
      req.headers.back().second += "\n" + line;
      continue;
    }
    const size_t colon = line.find(':');
    req.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  std::stringstream rest;
  rest << in.rdbuf();
  *body = rest.str();
  return req;
}

std::string AmzDateOf(const std::string& iso) {  // "2015-08-30T12:36:00Z" -> "20150830T123600Z"
  std::string out;
  for (char c : iso) {
    if (c != '-' && c != ':') out += c;
  }
  return out;
}

fs::path SuiteDir() {
  const char* src = std::getenv("RECTRAIN_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/golden/sigv4";
}

TEST(SigV4, PublishedTestSuite) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(SuiteDir())) {
    if (!entry.is_directory()) continue;
    const fs::path dir = entry.path();
    SCOPED_TRACE(dir.filename().string());
    const nlohmann::json ctx = nlohmann::json::parse(Slurp(dir / "context.json"));
    Credentials creds{ctx["credentials"]["access_key_id"], ctx["credentials"]["secret_access_key"],
                      ctx["credentials"].value("token", "")};
    std::string body;
    SignableRequest req = ParseRequest(Slurp(dir / "request.txt"), &body);
    req.body = body;
    SignOptions opt;
    opt.normalize_path = ctx.value("normalize", true);
    opt.sign_body = ctx.value("sign_body", false);
    opt.omit_session_token = ctx.value("omit_session_token", false);
    const Signature sig =
        SignV4(creds, ctx["region"].get<std::string>(), ctx["service"].get<std::string>(),
               AmzDateOf(ctx["timestamp"]), opt, &req);
    EXPECT_EQ(sig.canonical_request, Slurp(dir / "header-canonical-request.txt"));
    EXPECT_EQ(sig.string_to_sign, Slurp(dir / "header-string-to-sign.txt"));
    EXPECT_EQ(sig.signature, Slurp(dir / "header-signature.txt"));
    const std::string signed_request = Slurp(dir / "header-signed-request.txt");
    const size_t a = signed_request.find("Authorization:");
    ASSERT_NE(a, std::string::npos);
    const size_t e = signed_request.find('\n', a);
    EXPECT_EQ("Authorization:" + sig.authorization, signed_request.substr(a, e - a));
    ++cases;
  }
  EXPECT_GE(cases, 30) << "test vectors missing under " << SuiteDir();
}

// The "GET Object" example of the S3 documentation (Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk).
TEST(SigV4, S3DocumentationGetObjectExample) {
  Credentials creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  SignableRequest req{"GET", "/test.txt", {}, {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}}, {}};
  const Signature sig = SignV4(creds, "us-east-1", "s3", "20130524T000000Z", SignOptions{}, &req);
  EXPECT_EQ(sig.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sig.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, UriEncodeKeepsUnreservedAndOptionallySlashes) {
  EXPECT_EQ(UriEncode("a b/c~d_e.f-g", true), "a%20b/c~d_e.f-g");
  EXPECT_EQ(UriEncode("a/b=c&d", false), "a%2Fb%3Dc%26d");
  EXPECT_EQ(UriEncode("\xe1\x88\xb4", false), "%E1%88%B4");
  EXPECT_EQ(AmzDate(1440938160), "20150830T123600Z");
}

}  // namespace
}  // namespace rectrain::io::s3
