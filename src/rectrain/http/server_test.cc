// Tests for http::Server with a real loopback client: REST routes, auth, Host check, static
// files and traversal refusal, limits, and /metrics parsed back.
#include "rectrain/http/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/http_util.h"

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
    auto store = track::TrackingStore::Open((dir_ / "t.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
    for (int i = 0; i < 3; ++i) {
      track::RunInfo info;
      info.name = "run" + std::to_string(i);
      info.group_id = "study";
      info.params = {{"lr", std::to_string(i)}, {"seed", "1"}};
      auto id = store_->StartRun(info);
      ASSERT_TRUE(id.ok());
      for (int step = 0; step < 50; ++step) {
        std::pair<std::string, double> m[] = {{"loss", step == 20 ? 9.0 : 1.0}};
        ASSERT_TRUE(store_->LogMetrics(*id, step, m).ok());
      }
      const double aucs[] = {0.7, 0.8, 0.9};
      std::pair<std::string, double> fin[] = {{"auc", aucs[i]}};
      ASSERT_TRUE(store_->SetFinal(*id, fin).ok());
      if (i < 2) {
        ASSERT_TRUE(store_->FinishRun(*id, track::RunStatus::kFinished).ok());
      }
    }
    samples_ = *registry_.GetCounter("rectrain_train_samples_total", "Samples.",
                                     {{"run", "a\"b\\c\nd"}});
    samples_->Increment(123);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  void StartServer(ServerOptions opts = {}) {
    if (opts.static_dir.empty()) opts.static_dir = (dir_ / "static").string();
    auto s = Server::Start(opts, &registry_, store_.get());
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
  std::unique_ptr<track::TrackingStore> store_;
  prometheus::MetricsRegistry registry_;
  prometheus::Counter* samples_ = nullptr;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, RunsListDetailMetricsCompareGroups) {
  StartServer();
  json list = GetJson("/api/runs?status=finished&sort=metric:auc&order=asc&limit=1&offset=1");
  EXPECT_EQ(list["total"], 2);
  ASSERT_EQ(list["runs"].size(), 1u);
  EXPECT_EQ(list["runs"][0]["name"], "run1");
  EXPECT_EQ(list["runs"][0]["final_metrics"]["auc"], 0.8);
  EXPECT_EQ(GetJson("/api/runs?param=lr%3D2")["runs"][0]["name"], "run2");
  EXPECT_EQ(GetJson("/api/runs?metric=auc%3E%3D0.8")["total"], 2);
  EXPECT_EQ(GetJson("/api/runs?q=RUN1")["total"], 1);

  json detail = GetJson("/api/runs/1");
  EXPECT_EQ(detail["name"], "run0");
  EXPECT_EQ(detail["params"]["lr"], "0");
  EXPECT_EQ(detail["metric_keys"][0]["count"], 50);
  EXPECT_EQ(detail["end_time"].is_number(), true);
  EXPECT_TRUE(GetJson("/api/runs/3")["end_time"].is_null());

  json m = GetJson("/api/runs/1/metrics?key=loss&max_points=10");
  ASSERT_EQ(m["series"].size(), 1u);
  EXPECT_EQ(m["series"][0]["total_points"], 50);
  EXPECT_EQ(m["series"][0]["downsampled"], true);
  EXPECT_LE(m["series"][0]["points"].size(), 10u);
  bool spike = false;
  for (auto& p : m["series"][0]["points"]) spike = spike || (p[0] == 20 && p[1] == 9.0);
  EXPECT_TRUE(spike);
  EXPECT_EQ(GetJson("/api/runs/1/metrics")["series"][0]["points"].size(), 50u);

  json cmp = GetJson("/api/compare?ids=1,3");
  ASSERT_EQ(cmp["differing_params"].size(), 1u);  // seed is equal, lr differs
  EXPECT_EQ(cmp["differing_params"][0]["key"], "lr");
  EXPECT_EQ(cmp["differing_params"][0]["values"], json({"0", "2"}));
  EXPECT_EQ(cmp["final_metrics"][0]["key"], "auc");

  json groups = GetJson("/api/groups");
  EXPECT_EQ(groups["groups"][0]["group_id"], "study");
  EXPECT_EQ(groups["groups"][0]["finished"], 2);

  auto c = Client();
  auto csv = c.Get("/api/runs.csv?sort=id&order=asc");
  ASSERT_TRUE(csv);
  EXPECT_EQ(csv->get_header_value("Content-Type"), "text/csv");
  EXPECT_TRUE(csv->body.starts_with("id,name,status,start_time,end_time,host,group_id,tags,"
                                    "param:lr,param:seed,metric:auc\r\n1,run0,finished,"));
  auto mcsv = c.Get("/api/runs/2/metrics.csv");
  ASSERT_TRUE(mcsv);
  EXPECT_TRUE(mcsv->body.starts_with("key,step,value,wall_time\r\nloss,0,1,"));

  auto del = c.Delete("/api/runs/2");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(GetJson("/api/runs")["total"], 2);
}

TEST_F(ServerTest, ErrorsMapToStatusAndJson) {
  StartServer();
  EXPECT_EQ(GetJson("/api/runs/999", 404),
            json::parse(R"({"error":{"code":"NOT_FOUND","message":"run 999 not found"}})"));
  EXPECT_EQ(GetJson("/api/runs?limit=abc", 400)["error"]["message"],
            "query parameter 'limit' must be an integer, got 'abc'");
  EXPECT_EQ(GetJson("/api/runs?status=done", 400)["error"]["message"],
            "unknown run status 'done'; expected running, finished, failed or stopped");
  EXPECT_EQ(GetJson("/api/runs?sort=x", 400)["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(GetJson("/api/compare?ids=1,x", 400)["error"]["message"],
            "query parameter 'ids' must be comma-separated run ids, got '1,x'");
  EXPECT_EQ(GetJson("/api/nope", 404)["error"]["message"], "no API route GET /api/nope");
  auto c = Client();
  auto res = c.Post("/api/runs", "{}", "application/json");  // no POST routes
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET");
  EXPECT_EQ(json::parse(res->body)["error"]["message"], "POST is not allowed on /api/runs (allowed: GET)");
  auto nope = c.Post("/api/nope", "{}", "application/json");
  ASSERT_TRUE(nope);
  EXPECT_EQ(nope->status, 404);
  EXPECT_EQ(json::parse(nope->body)["error"]["message"], "no API route POST /api/nope");
}

// Issue 26 item 5: the documented filters gave 400 unless '=' was percent-encoded.
TEST_F(ServerTest, DocumentedFiltersWorkUnencoded) {
  StartServer();
  auto get = [&](const std::string& target) {
    testing::RawHttpConnection c(server_->port());
    c.Send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    auto r = c.Read();
    EXPECT_EQ(r.status, 200) << target << " -> " << r.body;
    return json::parse(r.body, nullptr, false);
  };
  EXPECT_EQ(get("/api/runs?metric=auc>=0.8")["total"], 2);
  EXPECT_EQ(get("/api/runs?metric=auc>0.75&metric=auc<=0.8")["total"], 1);
  EXPECT_EQ(get("/api/runs?param=lr=2")["runs"][0]["name"], "run2");
  EXPECT_EQ(get("/api/runs?param=lr=2&param=seed=1")["total"], 1);
  EXPECT_EQ(get("/api/runs?q=run+1")["total"], 0);  // '+' is a space in a query
  EXPECT_EQ(get("/api/runs.csv?metric=auc>=0.9&sort=id").is_discarded(), true);  // CSV, not JSON
}

// Issue 26 item 7: /api/compare?ids=1,1 answered with null in the first column.
TEST_F(ServerTest, CompareRefusesARunListedTwice) {
  StartServer();
  EXPECT_EQ(GetJson("/api/compare?ids=1,1", 400)["error"]["message"],
            "run 1 is listed twice; compare distinct runs");
  EXPECT_EQ(GetJson("/api/compare?ids=3,1,3", 400)["error"]["message"],
            "run 3 is listed twice; compare distinct runs");
}

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
  EXPECT_EQ(Server::Start(open, &registry_, store_.get()).status(),
            InvalidArgumentError("a token is required to bind to non-loopback address 0.0.0.0 "
                                 "(anyone who can reach the port could read and delete runs)"));
  open.token = "short";
  EXPECT_EQ(Server::Start(open, &registry_, store_.get()).status(), CheckToken("short"));

  ServerOptions opts;
  opts.host = "0.0.0.0";
  opts.token = "0123456789abcdef0123";
  StartServer(opts);
  auto c = Client();
  for (const char* path : {"/api/runs", "/metrics"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << path;
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  }
  auto wrong = c.Get("/api/runs", {{"Authorization", "Bearer 0123456789abcdef0124"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto bearer = c.Get("/api/runs", {{"Authorization", "Bearer 0123456789abcdef0123"}});
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
  auto res = c.Get("/api/runs", {{"Host", "evil.example:80"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(json::parse(res->body)["error"]["message"],
            "Host header 'evil.example:80' is not a loopback name; start the server with a "
            "token to serve other names");
  auto ok = c.Get("/api/runs", {{"Host", "localhost:1234"}});
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
  auto big = c.Post("/api/runs", std::string(5000, 'x'), "text/plain");
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

TEST_F(ServerTest, NoStoreAttached) {
  auto s = Server::Start({}, nullptr, nullptr);
  ASSERT_TRUE(s.ok());
  httplib::Client c("127.0.0.1", (*s)->port());
  auto res = c.Get("/api/runs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"]["message"],
            "no tracking store is attached to this server");
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
