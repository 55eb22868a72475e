// End-to-end alerting: a deliberately diverging `rectrain train` (learning rate 1e6: the loss is
// NaN within a few steps; monitoring.linger_on_failure_s keeps /metrics up after the error) is
// scraped by Debian's real `prometheus`, configured with the shipped deploy/prometheus/
// prometheus.yml and alerts.yml (target, Alertmanager port and 1 s intervals substituted), whose
// RectrainTrainLossNaN rule fires and reaches Debian's real `prometheus-alertmanager`. Its API
// (/api/v2/alerts) must hold the alert with the run's labels, and `rectrain ui --alertmanager`
// must show it as the run's alert (GET /api/runs/{id}/alerts). Skips when prometheus or
// prometheus-alertmanager is not installed (scripts/install_deps.sh installs both).
// Labels: alerts, slow (~10-15 s).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/http_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

#ifndef RECTRAIN_BINARY
#error "RECTRAIN_BINARY must name the rectrain executable"
#endif
#ifndef RECTRAIN_SOURCE_DIR
#error "RECTRAIN_SOURCE_DIR must name the source tree"
#endif

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::FreePort;
using testing::HttpGet;
using testing::ReplaceAll;
using testing::Spawn;
using testing::Stop;
using testing::ReadAll;
using testing::WriteAll;


// Polls `probe` every 200 ms until it returns true or `seconds` pass.
bool WaitUntil(double seconds, const std::function<bool()>& probe) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(AlertsE2eTest, DivergingRunFiresTheNanAlertThroughPrometheusIntoAlertmanager) {
  const fs::path prometheus = "/usr/bin/prometheus";
  const fs::path alertmanager = "/usr/bin/prometheus-alertmanager";
  for (const fs::path& bin : {prometheus, alertmanager}) {
    if (!fs::exists(bin)) {
      GTEST_SKIP() << bin << " is not installed (apt-get install prometheus prometheus-alertmanager, or run "
                   << "scripts/install_deps.sh)";
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string src = RECTRAIN_SOURCE_DIR;
  const std::string prom_cfg = ReadAll(src + "/deploy/prometheus/prometheus.yml");
  for (const char* line : {"'127.0.0.1:9464'", "'127.0.0.1:9093'", "scrape_interval: 5s", "evaluation_interval: 15s",
                           "  - alerts.yml"}) {
    ASSERT_NE(prom_cfg.find(line), std::string::npos) << line << " not in deploy/prometheus/prometheus.yml";
  }
  const std::string dir = testing::TempDir("alerts_e2e");
  const int metrics_port = FreePort(), prom_port = FreePort(), am_port = FreePort(), ui_port = FreePort();

  // Alertmanager: one receiver that drops everything (the API still lists the alerts).
  WriteAll(dir + "/alertmanager.yml",
           "route: {receiver: blackhole, group_wait: 0s, group_interval: 1s, repeat_interval: 1h}\n"
           "receivers: [{name: blackhole}]\n");
  const pid_t am = Spawn({alertmanager.string(), "--config.file=" + dir + "/alertmanager.yml",
                          "--storage.path=" + dir + "/am", "--web.listen-address=127.0.0.1:" + std::to_string(am_port),
                          "--cluster.listen-address=", "--log.level=warn"},
                         dir + "/alertmanager.log");
  ASSERT_GT(am, 0);

  // Prometheus with the shipped config and rules (alerts.yml beside the config, as shipped).
  std::string cfg = ReplaceAll(prom_cfg, "127.0.0.1:9464", "127.0.0.1:" + std::to_string(metrics_port));
  cfg = ReplaceAll(cfg, "127.0.0.1:9093", "127.0.0.1:" + std::to_string(am_port));
  cfg = ReplaceAll(cfg, "scrape_interval: 5s", "scrape_interval: 1s");
  cfg = ReplaceAll(cfg, "evaluation_interval: 15s", "evaluation_interval: 1s");
  WriteAll(dir + "/prometheus.yml", cfg);
  fs::copy_file(src + "/deploy/prometheus/alerts.yml", dir + "/alerts.yml");
  const pid_t prom = Spawn({prometheus.string(), "--config.file=" + dir + "/prometheus.yml",
                            "--storage.tsdb.path=" + dir + "/data",
                            "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
                           dir + "/prometheus.log");
  ASSERT_GT(prom, 0);
  pid_t trainer = -1, ui = -1;
  auto logs = [&] {
    return "\n--- trainer:\n" + ReadAll(dir + "/train.err") + "\n--- prometheus:\n" + ReadAll(dir + "/prometheus.log") +
           "\n--- alertmanager:\n" + ReadAll(dir + "/alertmanager.log") + "\n--- ui:\n" + ReadAll(dir + "/ui.log");
  };
  auto cleanup = [&] {
    Stop(ui);
    Stop(trainer);
    Stop(prom);
    Stop(am);
  };

  // Both up, and Prometheus has loaded the rules, before the run starts.
  const bool ready = WaitUntil(30, [&] {
    int am_status = 0;
    HttpGet(am_port, "/-/ready", &am_status);
    const auto rules = json::parse(HttpGet(prom_port, "/api/v1/rules"), nullptr, false);
    return am_status == 200 && !rules.is_discarded() && rules["data"]["groups"].is_array() &&
           rules["data"]["groups"].dump().find("RectrainTrainLossNaN") != std::string::npos;
  });
  if (!ready) cleanup();
  ASSERT_TRUE(ready) << "prometheus/alertmanager not ready with the rules loaded" << logs();

  // The diverging run: SGD at lr 1e6 makes the loss NaN within a few steps.
  const std::string train = testing::Generate(dir, "train.tsv", 4000, 1);
  const std::string store = dir + "/ws/.rectrain/tracking.db";
  WriteAll(dir + "/diverge.yaml", "threads: 1\ndata: {train: " + train +
                                      ", batch_size: 256}\n"
                                      "model: {type: deepfm, embedding_dim: 4, hidden: [16]}\n"
                                      "optimizer: {type: sgd, lr: 1.0e+6}\n"
                                      "embedding: {optimizer: {type: sgd, lr: 1.0e+6}}\n"
                                      "train: {epochs: 100, log_every_steps: 10}\n"
                                      "monitoring: {port: " +
                                      std::to_string(metrics_port) +
                                      ", linger_on_failure_s: 10}\n"
                                      "tracking: {store: " +
                                      store + "}\n");
  const std::string run_dir = dir + "/diverged";
  trainer = Spawn({RECTRAIN_BINARY, "train", dir + "/diverge.yaml", "--run-dir", run_dir, "--no-progress"},
                  dir + "/train.err");
  ASSERT_GT(trainer, 0);
  const auto train_start = std::chrono::steady_clock::now();

  // Alertmanager receives RectrainTrainLossNaN for run 1 (the first run of a fresh store).
  json alert;
  std::string last;
  WaitUntil(60, [&] {
    last = HttpGet(am_port, "/api/v2/alerts?filter=alertname%3D%22RectrainTrainLossNaN%22");
    const json list = json::parse(last, nullptr, false);
    if (!list.is_array()) return false;
    for (const json& a : list) {
      if (a.is_object() && a.value("labels", json::object()).value("run", "") == "1") alert = a;
    }
    return !alert.is_null();
  });
  const double fire_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
  if (alert.is_null()) cleanup();
  ASSERT_FALSE(alert.is_null()) << "Alertmanager never listed RectrainTrainLossNaN for run 1; last answer: " << last
                                << logs();
  std::printf("RectrainTrainLossNaN in Alertmanager %.1f s after the trainer started\n", fire_s);
  const json& l = alert["labels"];
  EXPECT_EQ(l["severity"], "critical");
  EXPECT_EQ(l["component"], "train");
  EXPECT_EQ(l["job"], "rectrain");
  EXPECT_EQ(l["service"], "rectrain");
  EXPECT_EQ(l["instance"], "127.0.0.1:" + std::to_string(metrics_port));
  EXPECT_EQ(l["name"], "diverged");
  EXPECT_EQ(l["run_dir"], run_dir);
  EXPECT_EQ(alert["annotations"]["summary"], "Training loss of run 1 (diverged) is NaN: training diverged");
  EXPECT_NE(alert["annotations"]["description"].get<std::string>().find("--resume " + run_dir), std::string::npos)
      << alert.dump();
  EXPECT_EQ(alert["status"]["state"], "active");

  // The trainer stopped with "training diverged" (exit 7) after its linger.
  int status = 0;
  waitpid(trainer, &status, 0);
  trainer = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status << logs();

  // The run page's alerts, from the real Alertmanager.
  fs::create_directories(dir + "/static");
  WriteAll(dir + "/static/index.html", "<html>rectrain ui</html>");
  ui = Spawn({RECTRAIN_BINARY, "ui", "--store", store, "--port", std::to_string(ui_port), "--static-dir",
              dir + "/static", "--alertmanager", "http://127.0.0.1:" + std::to_string(am_port)},
             dir + "/ui.log");
  json page;
  WaitUntil(20, [&] {
    page = json::parse(HttpGet(ui_port, "/api/runs/1/alerts"), nullptr, false);
    return !page.is_discarded() && page["alerts"].is_array() && !page["alerts"].empty();
  });
  ASSERT_FALSE(page.is_discarded()) << logs();
  ASSERT_TRUE(page["alerts"].is_array() && !page["alerts"].empty()) << page.dump() << logs();
  EXPECT_EQ(page["run_id"], 1);
  EXPECT_EQ(page["alerts"][0]["name"], "RectrainTrainLossNaN");
  EXPECT_EQ(page["alerts"][0]["severity"], "critical");
  EXPECT_EQ(page["alerts"][0]["state"], "active");
  EXPECT_EQ(page["alerts"][0]["summary"], "Training loss of run 1 (diverged) is NaN: training diverged");
  const json run = json::parse(HttpGet(ui_port, "/api/runs/1"), nullptr, false);
  EXPECT_EQ(run["status"], "failed") << run.dump();

  cleanup();
  std::printf("whole test %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace rectrain
