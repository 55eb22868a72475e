// End-to-end: Debian's real `prometheus` server, configured with deploy/prometheus/prometheus.yml
// (target port and a 1 s interval substituted), scrapes a running `rectrain train`; its query
// API must return the trainer's rectrain_train_samples_total (> 0) and rectrain_train_loss
// with the job/service labels of the shipped config. Skips when prometheus is not installed
// (scripts/install_deps.sh installs it). Label: slow (~10-20 s).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
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
using testing::FreePort;
using testing::HttpGet;
using testing::ReplaceAll;
using testing::Spawn;
using testing::Stop;
using testing::ReadAll;


TEST(PrometheusTrainTest, RealPrometheusScrapesARunningTrainer) {
  const fs::path prometheus = "/usr/bin/prometheus";
  if (!fs::exists(prometheus)) {
    GTEST_SKIP() << prometheus << " is not installed (apt-get install prometheus, or run "
                 << "scripts/install_deps.sh)";
  }
  const std::string cfg_text = ReadAll(std::string(RECTRAIN_SOURCE_DIR) + "/deploy/prometheus/prometheus.yml");
  ASSERT_NE(cfg_text.find("'127.0.0.1:9464'"), std::string::npos) << "deploy/prometheus/prometheus.yml";
  const std::string dir = testing::TempDir("prom_train");

  // A trainer that runs long enough: many epochs over a small file (stopped by SIGTERM below).
  const std::string train = testing::Generate(dir, "train.tsv", 20000, 1);
  const std::string config = dir + "/prom.yaml";
  testing::WriteAll(config, "threads: 1\ndata:\n  train: " + train +
                                "\n  batch_size: 128\n"
                                "model: {type: deepfm, embedding_dim: 4, hidden: [16]}\n"
                                "train: {epochs: 1000, log_every_steps: 20}\n");
  const int metrics_port = FreePort();
  const pid_t trainer =
      Spawn({RECTRAIN_BINARY, "train", config, "--run-dir", dir + "/run", "--no-progress", "--set",
             "monitoring.port=" + std::to_string(metrics_port), "--set", "tracking.store=" + dir + "/t.db"},
            dir + "/train.err");
  ASSERT_GT(trainer, 0);

  std::string cfg = ReplaceAll(cfg_text, "127.0.0.1:9464", "127.0.0.1:" + std::to_string(metrics_port));
  cfg = ReplaceAll(cfg, "scrape_interval: 5s", "scrape_interval: 1s");
  testing::WriteAll(dir + "/prometheus.yml", cfg);
  const int prom_port = FreePort();
  const pid_t prom = Spawn({prometheus.string(), "--config.file=" + dir + "/prometheus.yml",
                            "--storage.tsdb.path=" + dir + "/data",
                            "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
                           dir + "/prometheus.log");
  ASSERT_GT(prom, 0);

  std::string last;
  double samples = 0;
  nlohmann::json loss;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    last = HttpGet(prom_port, "/api/v1/query?query=rectrain_train_samples_total");
    auto j = nlohmann::json::parse(last, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].empty()) continue;
    const auto& r = j["data"]["result"][0];
    EXPECT_EQ(r["metric"]["job"], "rectrain");
    EXPECT_EQ(r["metric"]["service"], "rectrain");
    EXPECT_EQ(r["metric"]["run"], "1");  // the first run of a fresh store
    samples = std::stod(r["value"][1].get<std::string>());
    if (samples <= 0) continue;
    auto l = nlohmann::json::parse(HttpGet(prom_port, "/api/v1/query?query=rectrain_train_loss"), nullptr, false);
    if (!l.is_discarded() && !l["data"]["result"].empty()) loss = l["data"]["result"][0];
    break;
  }
  Stop(trainer);
  Stop(prom);
  EXPECT_GT(samples, 0) << "prometheus never returned rectrain_train_samples_total > 0; last answer: "
                        << last << "\ntrainer:\n" << ReadAll(dir + "/train.err")
                        << "\nprometheus log:\n" << ReadAll(dir + "/prometheus.log");
  ASSERT_FALSE(loss.is_null());
  const double v = std::stod(loss["value"][1].get<std::string>());
  EXPECT_GT(v, 0.0);
  EXPECT_LT(v, 2.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rectrain
