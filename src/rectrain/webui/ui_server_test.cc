// Tests for what the web UI adds to the server: include_params on /api/runs, step ranges on
// metrics, groups by parent/tag, the log tail (and its workspace confinement), ServeUi itself,
// and that `rectrain runs --json` (track/runs_report.h) prints the REST API's shapes.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "rectrain/http/server.h"
#include "rectrain/track/runs_report.h"
#include "rectrain/webui/internal/api_test_util.h"
#include "rectrain/webui/tracking_api.h"
#include "rectrain/webui/ui_server.h"

namespace rectrain::webui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class UiApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_ui_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ws" / "logs");
    fs::create_directories(dir_ / "static");
    std::ofstream(dir_ / "static" / "index.html") << "<html>rectrain ui</html>";
    auto store = track::TrackingStore::Open((dir_ / "ws" / "rectrain.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
    track::RunInfo parent;
    parent.name = "study-driver";
    ASSERT_TRUE(store_->StartRun(parent).ok());  // id 1
    for (int i = 0; i < 3; ++i) {
      track::RunInfo info;
      info.name = "trial" + std::to_string(i);
      info.parent_id = 1;
      info.tags = {i == 0 ? "baseline" : "sweep"};
      info.params = {{"lr", std::to_string(i)}, {"seed", "7"}, {"model", "deepfm"}};
      auto id = store_->StartRun(info);  // ids 2, 3, 4
      ASSERT_TRUE(id.ok());
      for (int step = 0; step < 100; ++step) {
        std::pair<std::string, double> m[] = {{"loss", 1.0 / (step + 1)}};
        ASSERT_TRUE(store_->LogMetrics(*id, step, m).ok());
      }
      std::pair<std::string, double> fin[] = {{"auc", 0.7 + 0.1 * i}};
      ASSERT_TRUE(store_->SetFinal(*id, fin).ok());
    }
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  void StartServer(TrackingApiOptions api = {}) {
    http::ServerOptions opts;
    opts.static_dir = (dir_ / "static").string();
    opts.routes = TrackingApiRoutes(store_.get(), api);
    auto s = http::Server::Start(opts, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
  }
  json GetJson(const std::string& path, int want_status = 200) {
    return GetApiJson(server_->port(), path, want_status);
  }

  fs::path dir_;
  std::unique_ptr<track::TrackingStore> store_;
  std::unique_ptr<http::Server> server_;
};

TEST_F(UiApiTest, IncludeParams) {
  StartServer();
  json all = GetJson("/api/runs?sort=id&order=asc&include_params=all");
  ASSERT_EQ(all["runs"].size(), 4u);
  EXPECT_EQ(all["runs"][0]["params"], json::object());  // the driver has none
  EXPECT_EQ(all["runs"][3]["params"], json({{"lr", "2"}, {"model", "deepfm"}, {"seed", "7"}}));
  json some = GetJson("/api/runs?sort=id&order=asc&include_params=lr,missing");
  EXPECT_EQ(some["runs"][1]["params"], json({{"lr", "0"}}));
  EXPECT_FALSE(GetJson("/api/runs")["runs"][0].contains("params"));
}

TEST_F(UiApiTest, MetricsStepRange) {
  StartServer();
  json m = GetJson("/api/runs/2/metrics?key=loss&min_step=10&max_step=19&max_points=0");
  ASSERT_EQ(m["series"][0]["points"].size(), 10u);
  EXPECT_EQ(m["series"][0]["total_points"], 10);
  EXPECT_EQ(m["series"][0]["points"][0][0], 10);
  EXPECT_EQ(m["series"][0]["points"][9][0], 19);
  json reduced = GetJson("/api/runs/2/metrics?key=loss&min_step=0&max_step=99&max_points=20");
  EXPECT_EQ(reduced["series"][0]["downsampled"], true);
  EXPECT_LE(reduced["series"][0]["points"].size(), 20u);
  json bad = GetJson("/api/runs/2/metrics?min_step=5&max_step=4", 400);
  EXPECT_EQ(bad["error"]["message"], "min_step 5 > max_step 4");
  json bad2 = GetJson("/api/runs/2/metrics?min_step=x", 400);
  EXPECT_EQ(bad2["error"]["message"], "query parameter 'min_step' must be an integer, got 'x'");
}

TEST_F(UiApiTest, GroupsByParentAndTag) {
  StartServer();
  json parents = GetJson("/api/groups?by=parent");
  ASSERT_EQ(parents["groups"].size(), 1u);
  EXPECT_EQ(parents["groups"][0]["group_id"], "1");
  EXPECT_EQ(parents["groups"][0]["runs"], 3);
  EXPECT_EQ(parents["groups"][0]["running"], 3);
  json tags = GetJson("/api/groups?by=tag");
  ASSERT_EQ(tags["groups"].size(), 2u);
  std::map<std::string, int> counts;
  for (auto& g : tags["groups"]) counts[g["group_id"]] = g["runs"];
  EXPECT_EQ(counts, (std::map<std::string, int>{{"baseline", 1}, {"sweep", 2}}));
  EXPECT_EQ(GetJson("/api/groups?by=group")["groups"].size(), 0u);
  EXPECT_EQ(GetJson("/api/groups?by=color", 400)["error"]["message"],
            "query parameter 'by' must be group, parent or tag, got 'color'");
}

TEST_F(UiApiTest, LogTailConfinedToWorkspace) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i) + "\n";
  std::ofstream(dir_ / "ws" / "logs" / "train.log") << text;
  std::ofstream(dir_ / "outside.log") << "secret\n";
  fs::create_symlink(dir_ / "outside.log", dir_ / "ws" / "logs" / "sneaky.log");
  ASSERT_TRUE(store_->AddArtifact(2, "log", (dir_ / "ws" / "logs" / "train.log").string()).ok());
  ASSERT_TRUE(store_->AddArtifact(3, "log", (dir_ / "outside.log").string()).ok());
  ASSERT_TRUE(store_->AddArtifact(4, "log", (dir_ / "ws" / "logs" / "sneaky.log").string()).ok());
  TrackingApiOptions opts;
  opts.artifact_root = (dir_ / "ws").string();
  StartServer(opts);

  json full = GetJson("/api/runs/2/log");
  EXPECT_EQ(full["text"], text);
  EXPECT_EQ(full["truncated"], false);
  EXPECT_EQ(full["size_bytes"], static_cast<int64_t>(text.size()));
  // The last 20 bytes are "7\nline 198\nline 199\n"; the partial first line is dropped.
  json tail = GetJson("/api/runs/2/log?max_bytes=20");
  EXPECT_EQ(tail["text"], std::string("line 198\nline 199\n"));
  EXPECT_EQ(tail["truncated"], true);

  const std::string root = fs::canonical(dir_ / "ws").string();
  EXPECT_EQ(GetJson("/api/runs/3/log", 403)["error"]["message"],
            "log " + (dir_ / "outside.log").string() + " is outside the workspace " + root);
  EXPECT_EQ(GetJson("/api/runs/4/log", 403)["error"]["message"],
            "log " + (dir_ / "ws" / "logs" / "sneaky.log").string() +
                " is outside the workspace " + root);
  EXPECT_EQ(GetJson("/api/runs/1/log", 404)["error"]["message"], "run 1 has no log artifact");
  EXPECT_EQ(GetJson("/api/runs/99/log", 404)["error"]["message"], "run 99 not found");
  EXPECT_EQ(GetJson("/api/runs/2/log?max_bytes=0", 400)["error"]["message"],
            "max_bytes must be in 1..1048576, got 0");
}

TEST_F(UiApiTest, LogTailOffWithoutArtifactRoot) {
  std::ofstream(dir_ / "ws" / "logs" / "train.log") << "hello\n";
  ASSERT_TRUE(store_->AddArtifact(2, "log", (dir_ / "ws" / "logs" / "train.log").string()).ok());
  StartServer();
  EXPECT_EQ(GetJson("/api/runs/2/log", 403)["error"]["message"],
            "log files are not served: the server has no artifact root");
}

// `rectrain runs ... --json` must print what the REST API serves.
TEST_F(UiApiTest, RunsReportJsonMatchesRestApi) {
  StartServer();
  track::RunFilter f;
  f.sort_by = "id";
  f.descending = false;
  auto list = store_->ListRuns(f);
  ASSERT_TRUE(list.ok());
  json cli = json::parse(*track::FormatRunList(*list, true));
  json api = GetJson("/api/runs?sort=id&order=asc");
  EXPECT_EQ(cli["runs"], api["runs"]);
  EXPECT_EQ(cli["total"], api["total"]);

  auto detail = store_->GetRun(3);
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(json::parse(*track::FormatRunDetail(*detail, true)), GetJson("/api/runs/3"));

  track::RunId ids[] = {2, 4};
  auto cmp = store_->CompareRuns(ids);
  ASSERT_TRUE(cmp.ok());
  EXPECT_EQ(json::parse(*track::FormatComparison(*cmp, true)), GetJson("/api/compare?ids=2,4"));
}

TEST_F(UiApiTest, ServeUiServesUntilAskedToStop) {
  std::promise<int> stop;
  UiOptions o;
  o.wait_for_stop = [f = stop.get_future().share()] { return f.get(); };
  o.store_path = (dir_ / "ws" / "rectrain.db").string();
  o.port = 0;
  o.static_dir = (dir_ / "static").string();
  std::ostringstream out;
  o.out = &out;
  std::string url;
  std::mutex mu;
  std::condition_variable cv;
  o.on_ready = [&](const std::string& u) {
    std::lock_guard l(mu);
    url = u;
    cv.notify_all();
  };
  Status result = InternalError("not finished");
  std::thread t([&] { result = ServeUi(o); });
  {
    std::unique_lock l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return !url.empty(); }));
  }
  ASSERT_TRUE(url.starts_with("http://127.0.0.1:")) << url;
  std::string hostport = url.substr(7, url.size() - 8);  // without "http://" and the final '/'
  int port = std::stoi(hostport.substr(hostport.find(':') + 1));
  httplib::Client c("127.0.0.1", port);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->body, "<html>rectrain ui</html>");
  auto runs = c.Get("/api/runs");
  ASSERT_TRUE(runs);
  EXPECT_EQ(json::parse(runs->body)["total"], 4);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("process_resident_memory_bytes"), std::string::npos);
  stop.set_value(SIGTERM);  // what `rectrain ui`'s signal watcher returns on SIGTERM
  t.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_NE(out.str().find("rectrain ui: serving " + o.store_path + " at " + url + "\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("SIGTERM received, stopping"), std::string::npos);
  EXPECT_FALSE(c.Get("/healthz"));  // stopped
}

// A stand-in Alertmanager (GET /api/v2/alerts) on a free loopback port, answering `body` with
// `status`; it records each request's path and filter parameter.
class FakeAlertmanager {
 public:
  FakeAlertmanager(std::string prefix, int status, std::string body)
      : prefix_(std::move(prefix)), status_(status), body_(std::move(body)) {
    server_.Get(prefix_ + "/api/v2/alerts", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard l(mu_);
        filters_.push_back(req.get_param_value("filter"));
      }
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeAlertmanager() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + prefix_; }
  std::vector<std::string> filters() {
    std::lock_guard l(mu_);
    return filters_;
  }

 private:
  std::string prefix_;
  int status_;
  std::string body_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> filters_;
};

// What Alertmanager's API v2 answers: two alerts of run 2 (the filter is applied there).
const char kTwoAlerts[] = R"([
  {"labels": {"alertname": "RectrainTrainLossSpike", "severity": "warning", "run": "2", "name": "trial0"},
   "annotations": {"summary": "Training loss of run 2 (trial0) spiked to 1.5", "description": "spike"},
   "startsAt": "2025-01-02T03:04:05.000Z", "endsAt": "2025-01-02T03:10:05.000Z",
   "updatedAt": "2025-01-02T03:06:05.000Z", "fingerprint": "aa", "generatorURL": "http://prom/graph",
   "receivers": [{"name": "null"}], "status": {"state": "active", "silencedBy": [], "inhibitedBy": []}},
  {"labels": {"alertname": "RectrainTrainLossNaN", "severity": "critical", "run": "2"},
   "annotations": {"summary": "Training loss of run 2 (trial0) is NaN: training diverged"},
   "startsAt": "2025-01-02T03:05:00.000Z", "endsAt": "2025-01-02T03:11:00.000Z",
   "updatedAt": "2025-01-02T03:06:00.000Z", "fingerprint": "bb", "generatorURL": "http://prom/graph",
   "receivers": [{"name": "null"}], "status": {"state": "suppressed", "silencedBy": ["s1"], "inhibitedBy": []}}
])";

TEST_F(UiApiTest, RunAlertsFromAlertmanager) {
  FakeAlertmanager am("", 200, kTwoAlerts);
  TrackingApiOptions opts;
  opts.alertmanager_url = am.url();
  StartServer(opts);
  json j = GetJson("/api/runs/2/alerts");
  EXPECT_EQ(j["run_id"], 2);
  EXPECT_EQ(j["alertmanager"], am.url());
  EXPECT_FALSE(j.contains("note"));
  ASSERT_EQ(j["alerts"].size(), 2u) << j.dump();
  // Asked for the run's label only; critical first.
  EXPECT_EQ(am.filters(), std::vector<std::string>{"run=\"2\""});
  const json& nan = j["alerts"][0];
  EXPECT_EQ(nan["name"], "RectrainTrainLossNaN");
  EXPECT_EQ(nan["severity"], "critical");
  EXPECT_EQ(nan["state"], "suppressed");
  EXPECT_EQ(nan["silenced_by"], json::array({"s1"}));
  EXPECT_EQ(nan["summary"], "Training loss of run 2 (trial0) is NaN: training diverged");
  EXPECT_EQ(nan["description"], "");
  const json& spike = j["alerts"][1];
  EXPECT_EQ(spike["name"], "RectrainTrainLossSpike");
  EXPECT_EQ(spike["state"], "active");
  EXPECT_EQ(spike["description"], "spike");
  EXPECT_EQ(spike["starts_at"], "2025-01-02T03:04:05.000Z");
  EXPECT_EQ(spike["ends_at"], "2025-01-02T03:10:05.000Z");
  EXPECT_EQ(spike["generator_url"], "http://prom/graph");
  EXPECT_EQ(spike["fingerprint"], "aa");
  EXPECT_EQ(spike["labels"]["name"], "trial0");
  EXPECT_EQ(spike["annotations"]["description"], "spike");
  // An unknown run is 404 without asking Alertmanager.
  EXPECT_EQ(GetJson("/api/runs/99/alerts", 404)["error"]["message"], "run 99 not found");
  EXPECT_EQ(am.filters().size(), 1u);
}

TEST_F(UiApiTest, RunAlertsBehindARoutePrefix) {
  FakeAlertmanager am("/alertmanager", 200, "[]");
  TrackingApiOptions opts;
  opts.alertmanager_url = am.url() + "/";  // a trailing slash is dropped
  StartServer(opts);
  json j = GetJson("/api/runs/3/alerts");
  EXPECT_EQ(j["alerts"], json::array());
  EXPECT_EQ(am.filters(), std::vector<std::string>{"run=\"3\""});
}

TEST_F(UiApiTest, RunAlertsWithoutAlertmanagerIsAnEmptyListWithANote) {
  StartServer();
  json j = GetJson("/api/runs/2/alerts");
  EXPECT_EQ(j["alerts"], json::array());
  EXPECT_TRUE(j["alertmanager"].is_null());
  EXPECT_EQ(j["note"], "no Alertmanager configured (start rectrain ui with --alertmanager URL)");
}

TEST_F(UiApiTest, RunAlertsWhenAlertmanagerFails) {
  {
    FakeAlertmanager am("", 500, "boom");
    TrackingApiOptions opts;
    opts.alertmanager_url = am.url();
    StartServer(opts);
    json j = GetJson("/api/runs/2/alerts", 503);
    EXPECT_EQ(j["error"]["code"], "UNAVAILABLE");
    EXPECT_EQ(j["error"]["message"], "Alertmanager at " + am.url() + " answered HTTP 500: boom");
  }
  {
    FakeAlertmanager am("", 200, "{\"not\": \"a list\"}");
    TrackingApiOptions opts;
    opts.alertmanager_url = am.url();
    StartServer(opts);
    EXPECT_EQ(GetJson("/api/runs/2/alerts", 503)["error"]["message"],
              "Alertmanager at " + am.url() + " did not answer /api/v2/alerts with a list of alerts");
  }
  // Nothing listens on the port: a clear error, and the server keeps serving.
  std::string closed;
  {
    FakeAlertmanager gone("", 200, "[]");
    closed = gone.url();
  }
  TrackingApiOptions opts;
  opts.alertmanager_url = closed;
  StartServer(opts);
  json j = GetJson("/api/runs/2/alerts", 503);
  EXPECT_EQ(j["error"]["code"], "UNAVAILABLE");
  EXPECT_EQ(j["error"]["message"], "cannot reach Alertmanager at " + closed +
                                       " (Connection); is it running? (rectrain ui --alertmanager URL)");
  EXPECT_EQ(GetJson("/api/runs")["total"], 4);
}

TEST_F(UiApiTest, AlertmanagerUrls) {
  auto ok = ParseAlertmanagerUrl("http://127.0.0.1:9093");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->scheme_host_port, "http://127.0.0.1:9093");
  EXPECT_EQ(ok->prefix, "");
  ok = ParseAlertmanagerUrl("https://am.example:443/am//");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->scheme_host_port, "https://am.example:443");
  EXPECT_EQ(ok->prefix, "/am");
  EXPECT_EQ(ParseAlertmanagerUrl("127.0.0.1:9093").status(),
            InvalidArgumentError("--alertmanager must be an http:// or https:// URL such as "
                                 "http://127.0.0.1:9093, got '127.0.0.1:9093' (no scheme)"));
  EXPECT_FALSE(ParseAlertmanagerUrl("ftp://h").ok());
  EXPECT_FALSE(ParseAlertmanagerUrl("http:///x").ok());
  EXPECT_FALSE(ParseAlertmanagerUrl("http://h/x?y").ok());
  UiOptions o;
  o.store_path = (dir_ / "ws" / "rectrain.db").string();
  o.static_dir = (dir_ / "static").string();
  o.wait_for_stop = [] { return 0; };
  o.alertmanager_url = "localhost:9093";
  EXPECT_EQ(ServeUi(o).code(), StatusCode::kInvalidArgument);
}

TEST_F(UiApiTest, ServeUiErrors) {
  UiOptions o;
  o.store_path = (dir_ / "ws" / "rectrain.db").string();
  o.static_dir = (dir_ / "static").string();
  EXPECT_EQ(ServeUi(o), InvalidArgumentError("ServeUi needs a wait_for_stop"));
  o.wait_for_stop = [] { return 0; };
  o.static_dir = (dir_ / "nowhere").string();
  EXPECT_EQ(ServeUi(o), NotFoundError("UI directory " + o.static_dir + " has no index.html"));
  o.static_dir = (dir_ / "static").string();
  o.host = "0.0.0.0";
  o.token = "short";
  EXPECT_EQ(ServeUi(o), http::CheckToken("short"));
  o.token = "";
  o.port = 0;
  std::ostringstream printed;
  o.out = &printed;
  EXPECT_EQ(ServeUi(o).code(), StatusCode::kOk);  // a generated token
  EXPECT_NE(printed.str().find("generated an access token"), std::string::npos) << printed.str();
  o.token = "                ";
  EXPECT_EQ(ServeUi(o).code(), StatusCode::kInvalidArgument);
  o.store_path = "";
  EXPECT_EQ(ServeUi(o), InvalidArgumentError("ServeUi needs a store_path"));
}

// $RECTRAIN_UI_DIR reaches the library as UiOptions::env_ui_dir (read by the CLI): after an
// explicit directory, before the places searched, and an error naming the variable if it holds
// no built UI.
TEST_F(UiApiTest, UiDirFromTheEnvironmentIsAnOption) {
  const std::string built = (dir_ / "static").string(), empty = (dir_ / "ws").string();
  EXPECT_EQ(*FindUiAssets("", built), built);
  EXPECT_EQ(*FindUiAssets(built, empty), built);  // --static-dir wins
  EXPECT_EQ(FindUiAssets("", empty).status(), NotFoundError("RECTRAIN_UI_DIR=" + empty + " has no index.html"));
  UiOptions o;
  o.store_path = (dir_ / "ws" / "rectrain.db").string();
  o.wait_for_stop = [] { return 0; };
  o.env_ui_dir = empty;
  EXPECT_EQ(ServeUi(o), NotFoundError("RECTRAIN_UI_DIR=" + empty + " has no index.html"));
  o.env_ui_dir = built;
  o.port = 0;
  std::ostringstream printed;
  o.out = &printed;
  EXPECT_EQ(ServeUi(o).code(), StatusCode::kOk) << printed.str();
}

}  // namespace
}  // namespace rectrain::webui
