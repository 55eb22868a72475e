// Tests for the tracking REST API (webui/tracking_api.h) served by http::Server over loopback:
// every route, the error mapping, the documented filters unencoded, compare's refusals. (What
// the web UI adds, ServeUi and the alerts route: ui_server_test.cc.)
#include "rectrain/webui/internal/api_test_util.h"
#include "rectrain/webui/tracking_api.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/http_util.h"

namespace rectrain::webui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TrackingApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_api_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
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
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  void StartServer() {
    http::ServerOptions opts;
    opts.routes = TrackingApiRoutes(store_.get(), {});
    auto s = http::Server::Start(opts, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
  }
  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(5, 0);
    return c;
  }
  json GetJson(const std::string& path, int want_status = 200) {
    return GetApiJson(server_->port(), path, want_status);
  }

  fs::path dir_;
  std::unique_ptr<track::TrackingStore> store_;
  std::unique_ptr<http::Server> server_;
};

TEST_F(TrackingApiTest, RunsListDetailMetricsCompareGroups) {
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

TEST_F(TrackingApiTest, ErrorsMapToStatusAndJson) {
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
TEST_F(TrackingApiTest, DocumentedFiltersWorkUnencoded) {
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
TEST_F(TrackingApiTest, CompareRefusesARunListedTwice) {
  StartServer();
  EXPECT_EQ(GetJson("/api/compare?ids=1,1", 400)["error"]["message"],
            "run 1 is listed twice; compare distinct runs");
  EXPECT_EQ(GetJson("/api/compare?ids=3,1,3", 400)["error"]["message"],
            "run 3 is listed twice; compare distinct runs");
}

}  // namespace
}  // namespace rectrain::webui
