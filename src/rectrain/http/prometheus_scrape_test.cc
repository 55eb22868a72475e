// End-to-end: Debian's real `prometheus` scrapes our /metrics using the scrape config shipped in
// deploy/prometheus/prometheus.yml, and its query API returns our metric. Skips (with the reason)
// when the prometheus binary is not installed (scripts/install_deps.sh installs it).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rectrain/http/server.h"
#include "tests/process_util.h"

namespace rectrain::http {
namespace {

namespace fs = std::filesystem;

using testing::FreePort;
using testing::ReplaceAll;
using testing::Spawn;
using testing::Stop;

TEST(PrometheusScrapeTest, RealPrometheusScrapesOurMetrics) {
  const fs::path binary = "/usr/bin/prometheus";
  if (!fs::exists(binary)) {
    GTEST_SKIP() << binary << " is not installed (apt-get install prometheus, or run "
                 << "scripts/install_deps.sh)";
  }
  // ctest sets RECTRAIN_SOURCE_DIR; __FILE__ is relative when ccache rewrites paths (CCACHE_BASEDIR).
  const char* source_env = std::getenv("RECTRAIN_SOURCE_DIR");
  const fs::path source = source_env != nullptr
      ? fs::path(source_env)
      : fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  std::ifstream cfg_in(source / "deploy" / "prometheus" / "prometheus.yml");
  ASSERT_TRUE(cfg_in.good()) << "deploy/prometheus/prometheus.yml not found under " << source;
  std::stringstream cfg_text;
  cfg_text << cfg_in.rdbuf();
  ASSERT_NE(cfg_text.str().find("'127.0.0.1:9464'"), std::string::npos);

  prometheus::MetricsRegistry registry;
  prometheus::Gauge* probe = *registry.GetGauge("rectrain_scrape_probe", "Set by the scrape test.");
  probe->Set(42);
  ASSERT_TRUE(prometheus::RegisterProcessMetrics(registry).ok());
  auto server = Server::Start({}, &registry);
  ASSERT_TRUE(server.ok()) << server.status();

  fs::path dir = fs::temp_directory_path() / ("rectrain_prom_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string cfg = ReplaceAll(cfg_text.str(), "127.0.0.1:9464",
                               "127.0.0.1:" + std::to_string((*server)->port()));
  cfg = ReplaceAll(cfg, "scrape_interval: 5s", "scrape_interval: 1s");
  std::ofstream(dir / "prometheus.yml") << cfg;
  const int prom_port = FreePort();

  const pid_t pid = Spawn({binary.string(), "--config.file=" + (dir / "prometheus.yml").string(),
                           "--storage.tsdb.path=" + (dir / "data").string(),
                           "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
                          (dir / "prometheus.log").string());
  ASSERT_GE(pid, 0);

  httplib::Client client("127.0.0.1", prom_port);
  client.set_connection_timeout(1, 0);
  std::string last;
  bool found = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!found && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto res = client.Get("/api/v1/query?query=rectrain_scrape_probe");
    if (!res || res->status != 200) continue;
    last = res->body;
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].empty()) continue;
    EXPECT_EQ(j["data"]["result"][0]["metric"]["job"], "rectrain");
    EXPECT_EQ(j["data"]["result"][0]["metric"]["service"], "rectrain");
    EXPECT_EQ(j["data"]["result"][0]["value"][1], "42");
    found = true;
  }
  if (found) {
    auto up = client.Get("/api/v1/query?query=process_resident_memory_bytes");
    ASSERT_TRUE(up);
    auto j = nlohmann::json::parse(up->body);
    ASSERT_FALSE(j["data"]["result"].empty()) << up->body;
  }
  Stop(pid);
  std::ifstream log_in(dir / "prometheus.log");
  std::stringstream log;
  log << log_in.rdbuf();
  fs::remove_all(dir);
  EXPECT_TRUE(found) << "prometheus never returned rectrain_scrape_probe; last answer: " << last
                     << "\nprometheus log:\n" << log.str();
}

}  // namespace
}  // namespace rectrain::http
