// Tests for http::Server with a real loopback client: given routes, auth, Host check, static
// files and traversal refusal, limits, and /metrics parsed back. (The tracking API's routes:
// webui/tracking_api_test.cc; hostile clients: server_hardening_test.cc.)
#include "rectrain/http/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace rectrain::http {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_http_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "static" / "sub");
    std::ofstream(dir_ / "static" / "index.html") << "<html>rectrain</html>";
    std::ofstream(dir_ / "static" / "sub" / "app.js") << "console.log(1)";
    std::ofstream(dir_ / "secret.txt") << "top secret";
    fs::create_symlink(dir_ / "secret.txt", dir_ / "static" / "link.txt");
    samples_ = *registry_.GetCounter("rectrain_train_samples_total", "Samples.",
                                     {{"run", "a\"b\\c\nd"}});
    samples_->Increment(123);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  // Serves the static directory and GET /private (a route given to the server: protected by
  // the token when there is one).
  void StartServer(ServerOptions opts = {}) {
    if (opts.static_dir.empty()) opts.static_dir = (dir_ / "static").string();
    opts.routes.push_back({"GET", "/private", [](const RouteRequest&) { return RouteReply{200, "{}"}; }});
    auto s = Server::Start(opts, &registry_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
  }
  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(5, 0);
    return c;
  }
  json GetJson(const std::string& path, int want_status = 200) {
    auto c = Client();
    auto res = c.Get(path.c_str());
    EXPECT_TRUE(res) << path;
    if (!res) return {};
    EXPECT_EQ(res->status, want_status) << path << " -> " << res->body;
    return json::parse(res->body);
  }

  fs::path dir_;
  prometheus::MetricsRegistry registry_;
  prometheus::Counter* samples_ = nullptr;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, StatusTable) {
  EXPECT_EQ(HttpStatusForCode(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kDataLoss), 500);
  EXPECT_EQ(ErrorJson(InternalError("a \"b\"\n")),
            R"({"error":{"code":"INTERNAL","message":"a \"b\"\n"}})");
}

TEST_F(ServerTest, StaticFilesAndTraversalRefusal) {
  StartServer();
  auto c = Client();
  auto index = c.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->body, "<html>rectrain</html>");
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  auto js = c.Get("/sub/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->body, "console.log(1)");
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  auto missing = c.Get("/nope.css");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  for (const char* path : {"/../secret.txt", "/%2e%2e/secret.txt", "/sub/../../secret.txt",
                           "/sub/%2E%2E/%2E%2E/secret.txt", "/link.txt", "/..%5Csecret.txt"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 403) << path << " -> " << res->body;
    EXPECT_EQ(res->body.find("top secret"), std::string::npos) << path;
  }
}

TEST_F(ServerTest, TokenIsRequiredOffLoopbackAndChecked) {
  ServerOptions open;
  open.host = "0.0.0.0";
  open.unprotected_risk = "read and delete runs";
  EXPECT_EQ(Server::Start(open, &registry_).status(),
            InvalidArgumentError("a token is required to bind to non-loopback address 0.0.0.0 "
                                 "(anyone who can reach the port could read and delete runs)"));
  open.token = "short";
  EXPECT_EQ(Server::Start(open, &registry_).status(), CheckToken("short"));

  ServerOptions opts;
  opts.host = "0.0.0.0";
  opts.token = "0123456789abcdef0123";
  StartServer(opts);
  auto c = Client();
  for (const char* path : {"/private", "/metrics"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << path;
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  }
  auto wrong = c.Get("/private", {{"Authorization", "Bearer 0123456789abcdef0124"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto bearer = c.Get("/private", {{"Authorization", "Bearer 0123456789abcdef0123"}});
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200);
  auto query = c.Get("/metrics?token=0123456789abcdef0123");
  ASSERT_TRUE(query);
  EXPECT_EQ(query->status, 200);
  auto asset = c.Get("/", {{"Host", "my-box.example:8080"}});  // UI assets are public
  ASSERT_TRUE(asset);
  EXPECT_EQ(asset->status, 200);
}

TEST_F(ServerTest, LoopbackWithoutTokenRefusesForeignHostHeader) {
  StartServer();
  auto c = Client();
  auto res = c.Get("/private", {{"Host", "evil.example:80"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(json::parse(res->body)["error"]["message"],
            "Host header 'evil.example:80' is not a loopback name; start the server with a "
            "token to serve other names");
  auto ok = c.Get("/private", {{"Host", "localhost:1234"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ServerTest, BodyLimitAndRateLimit) {
  ServerOptions opts;
  opts.max_body_bytes = 1000;
  opts.rate_limit_per_s = 0.5;
  opts.rate_limit_burst = 3;
  StartServer(opts);
  auto c = Client();
  auto big = c.Post("/private", std::string(5000, 'x'), "text/plain");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"]["message"],
            "request body of 5000 bytes exceeds the limit of 1000 bytes");
  auto c2 = Client();
  int ok = 0, limited = 0;
  for (int i = 0; i < 4; ++i) {
    auto res = c2.Get("/healthz");
    ASSERT_TRUE(res);
    if (res->status == 200) ++ok;
    if (res->status == 429) {
      ++limited;
      EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    }
  }
  EXPECT_EQ(ok, 3);  // the 413 was refused by the parser, before the rate limit counted it
  EXPECT_EQ(limited, 1);
}

// Parses the text exposition back: every sample line belongs to a family announced by
// # HELP and # TYPE, and label values unescape to what was registered.
TEST_F(ServerTest, MetricsRouteParsesBack) {
  ASSERT_TRUE(prometheus::RegisterProcessMetrics(registry_).ok());
  StartServer();
  auto c = Client();
  // Both are counted before their replies go out, so /metrics (its own request not yet counted)
  // sees exactly these two even when each request is served on another worker thread.
  ASSERT_TRUE(c.Get("/healthz"));
  ASSERT_EQ(c.Get("/no-such-route")->status, 404);
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;  // "name{k=v,...}" with unescaped values -> value
  std::istringstream in(res->body);
  std::string line;
  while (std::getline(in, line)) {
    ASSERT_FALSE(line.empty());
    if (line.starts_with("# HELP ")) continue;
    if (line.starts_with("# TYPE ")) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      types[name] = type;
      continue;
    }
    size_t i = 0;
    std::string name;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') name += line[i++];
    ASSERT_TRUE(types.contains(name)) << line;
    std::string key = name;
    if (line[i] == '{') {
      key += '{';
      ++i;
      while (line[i] != '}') {
        while (line[i] != '=') key += line[i++];
        key += '=';
        ASSERT_EQ(line[++i], '"');
        ++i;
        while (line[i] != '"') {
          if (line[i] == '\\') {
            ++i;
            key += line[i] == 'n' ? '\n' : line[i];
          } else {
            key += line[i];
          }
          ++i;
        }
        ++i;
        if (line[i] == ',') key += line[i++];
      }
      key += '}';
      ++i;
    }
    ASSERT_EQ(line[i], ' ') << line;
    samples[key] = std::stod(line.substr(i + 1));
  }
  EXPECT_EQ(types["rectrain_train_samples_total"], "counter");
  EXPECT_EQ(samples["rectrain_train_samples_total{run=a\"b\\c\nd}"], 123.0);
  EXPECT_GT(samples["process_resident_memory_bytes"], 0.0);
  EXPECT_EQ(types["process_cpu_seconds_total"], "counter");
  EXPECT_EQ(samples["rectrain_http_requests_total{outcome=ok}"], 1.0);
  EXPECT_EQ(samples["rectrain_http_requests_total{outcome=404}"], 1.0);
}

// The router's own answers: a route's other methods are 405 with Allow; an unrouted path is a
// JSON 404, named an API route under /api/.
TEST_F(ServerTest, UnroutedRequestsAreJsonErrors) {
  StartServer();
  auto c = Client();
  auto post = c.Post("/private", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
  EXPECT_EQ(json::parse(post->body)["error"]["message"], "POST is not allowed on /private (allowed: GET)");
  EXPECT_EQ(GetJson("/api/nope", 404)["error"]["message"], "no API route GET /api/nope");
  auto nope = c.Post("/api/nope", "{}", "application/json");
  ASSERT_TRUE(nope);
  EXPECT_EQ(nope->status, 404);
  EXPECT_EQ(json::parse(nope->body)["error"]["message"], "no API route POST /api/nope");
}

TEST_F(ServerTest, NoRegistryAttached) {
  auto s = Server::Start({}, nullptr);
  ASSERT_TRUE(s.ok());
  httplib::Client c("127.0.0.1", (*s)->port());
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"]["message"], "no metrics registry is attached to this server");
  EXPECT_EQ((*s)->url(), "http://127.0.0.1:" + std::to_string((*s)->port()));
}

TEST(IsLoopbackHostTest, Cases) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.9.9.9"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("example.com"));
}

}  // namespace
}  // namespace rectrain::http
