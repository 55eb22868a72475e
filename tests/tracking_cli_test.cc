// End-to-end tests of run tracking and monitoring through the `rectrain` binary: `rectrain
// train` records finished / failed / stopped runs in the tracking store, `rectrain runs` reads
// them back, /metrics is scraped (plain HTTP GET) while a run trains, and `rectrain ui` serves
// the REST API. The real-Prometheus variant is prometheus_train_test.cc (label slow).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/http_util.h"
#include "tests/test_util.h"

#ifndef RECTRAIN_BINARY
#error "RECTRAIN_BINARY must name the rectrain executable"
#endif

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using testing::HttpGet;
using testing::ReadAll;

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

class TrackingCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("tracking_cli"));
    store_ = new std::string(*dir_ + "/ws/.rectrain/tracking.db");
    setenv("RECTRAIN_TRACKING_STORE", store_->c_str(), 1);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete store_;
  }
  // `env`: "NAME=value" assignments for the command's environment, if any.
  static CmdResult Run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::string cmd = env.empty() ? "" : "env ";
    for (const auto& e : env) cmd += Quote(e) + " ";
    cmd += Quote(RECTRAIN_BINARY);
    for (const auto& a : args) cmd += " " + Quote(a);
    const std::string out = *dir_ + "/stdout", err = *dir_ + "/stderr";
    cmd += " >" + Quote(out) + " 2>" + Quote(err) + " </dev/null";
    const int rc = std::system(cmd.c_str());
    CmdResult r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = ReadAll(out);
    r.err = ReadAll(err);
    return r;
  }
  static std::string Config(const std::string& name, const std::string& train, const std::string& extra = "",
                            const std::string& train_section = "{log_every_steps: 4}") {
    const std::string valid = testing::Generate(*dir_, "valid.tsv", 1000, 2);
    const std::string path = *dir_ + "/" + name + ".yaml";
    testing::WriteAll(path, "threads: 1\ndata:\n  train: " + train + "\n  valid: " + valid +
                                "\n  batch_size: 256\n"
                                "model: {type: deepfm, embedding_dim: 4, hidden: [16]}\n"
                                "train: " + train_section + "\n" + extra);
    return path;
  }
  // The run named `name` in `rectrain runs list --json`, or null.
  static nlohmann::json FindRun(const std::string& name) {
    CmdResult r = Run({"runs", "list", "--json", "--limit", "1000"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return nullptr;
    for (const auto& run : j["runs"]) {
      if (run["name"] == name) return run;
    }
    return nullptr;
  }
  // Starts `rectrain ARGS` in the background with stderr to `err_path`.
  static pid_t Spawn(const std::vector<std::string>& args, const std::string& err_path,
                     const std::string& out_path = "/dev/null") {
    const pid_t pid = fork();
    if (pid == 0) {
      FILE* e = freopen(err_path.c_str(), "w", stderr);
      FILE* o = freopen(out_path.c_str(), "w", stdout);
      (void)e;
      (void)o;
      std::vector<char*> argv{const_cast<char*>(RECTRAIN_BINARY)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(RECTRAIN_BINARY, argv.data());
      _exit(127);
    }
    return pid;
  }
  // Waits until `path` matches `re`; returns the first group ("" on timeout).
  // Gives up early once `pid` (if > 0) has exited.
  static std::string WaitFor(const std::string& path, const std::regex& re, double seconds, pid_t pid = 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::smatch m;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = ReadAll(path);
      if (std::regex_search(text, m, re)) return m[1];
      if (pid > 0 && kill(pid, 0) != 0) return "";
      if (pid > 0) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }
  static std::string* dir_;
  static std::string* store_;
};
std::string* TrackingCliTest::dir_ = nullptr;
std::string* TrackingCliTest::store_ = nullptr;

TEST_F(TrackingCliTest, FinishedRunIsRecordedWithMetricsDataAndArtifacts) {
  const std::string train = testing::Generate(*dir_, "train.tsv", 4000, 1);
  const std::string config = Config("ok", train, "tracking: {tags: [smoke], group: g1}\n");
  const std::string run = *dir_ + "/run_ok";
  CmdResult r = Run({"train", config, "--run-dir", run, "--tag", "cli", "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tracking: run "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" in " + *store_ + "\n"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("metrics: http://127\\.0\\.0\\.1:[0-9]+/metrics\n"))) << r.err;

  nlohmann::json listed = FindRun("run_ok");
  ASSERT_FALSE(listed.is_null());
  EXPECT_EQ(listed["status"], "finished");
  EXPECT_EQ(listed["group_id"], "g1");
  EXPECT_EQ(listed["tags"], nlohmann::json({"cli", "smoke"}));
  EXPECT_GT(listed["final_metrics"]["val/auc"].get<double>(), 0.0);
  EXPECT_LT(listed["final_metrics"]["val/auc"].get<double>(), 1.0);
  EXPECT_GT(listed["final_metrics"]["train/samples_per_s"].get<double>(), 0);
  EXPECT_EQ(listed["final_metrics"]["train/steps"], 16);
  EXPECT_EQ(listed["git_commit"], "");  // the config's directory is not in a git tree

  r = Run({"runs", "show", std::to_string(listed["id"].get<int64_t>()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto detail = nlohmann::json::parse(r.out);
  EXPECT_NE(detail["config_yaml"].get<std::string>().find("type: deepfm"), std::string::npos);
  EXPECT_EQ(detail["params"]["model.type"], "deepfm");
  ASSERT_EQ(detail["data_files"].size(), 2u);
  for (const auto& f : detail["data_files"]) {
    EXPECT_GT(f["size_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(f["fingerprint"].get<std::string>().substr(0, 3), "v1:");
  }
  std::map<std::string, std::string> artifacts;
  for (const auto& a : detail["artifacts"]) artifacts[a["kind"]] = a["path"];
  EXPECT_EQ(artifacts["log"], run + "/train.log");
  EXPECT_EQ(artifacts["model"], run + "/model");
  EXPECT_EQ(artifacts["summary"], run + "/summary.json");
  EXPECT_EQ(artifacts["checkpoint"], run + "/checkpoints/step-16");
  std::map<std::string, int64_t> counts;
  for (const auto& k : detail["metric_keys"]) counts[k["key"]] = k["count"];
  EXPECT_EQ(counts["train/loss"], 4);  // steps 4, 8, 12, 16
  EXPECT_EQ(counts["train/auc"], 4);
  EXPECT_EQ(counts["system/rss_bytes"], 4);
  EXPECT_EQ(counts["val/auc"], 1);
  EXPECT_EQ(counts["val/logloss"], 1);

  // The table view and the CSV export name the run too.
  r = Run({"runs", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run_ok"), std::string::npos) << r.out;
  r = Run({"runs", "export", "--tag", "smoke"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",run_ok,finished,"), std::string::npos) << r.out;
}

TEST_F(TrackingCliTest, BadDataMarksTheRunFailed) {
  const std::string bad = *dir_ + "/bad.tsv";
  std::string text = ReadAll(testing::Generate(*dir_, "train.tsv", 4000, 1)).substr(0, 20000);
  text = text.substr(0, text.rfind('\n') + 1) + "not a row\n";
  testing::WriteAll(bad, text);
  const std::string config = Config("bad", bad);
  CmdResult r = Run({"train", config, "--run-dir", *dir_ + "/run_bad", "--quiet"});
  ASSERT_NE(r.exit_code, 0);
  nlohmann::json listed = FindRun("run_bad");
  ASSERT_FALSE(listed.is_null()) << r.err;
  EXPECT_EQ(listed["status"], "failed");
  // The store keeps the trainer's error (the same text the CLI printed).
  const std::string first_line = r.err.substr(0, r.err.find('\n'));
  const std::string message = listed["status_message"];
  EXPECT_NE(message.find("bad.tsv"), std::string::npos) << message;
  EXPECT_NE(first_line.find(message.substr(message.find(": ") + 2, 40)), std::string::npos)
      << first_line << " vs " << message;
  r = Run({"runs", "list", "--status", "failed", "--json"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"run_bad\""), std::string::npos);
}

TEST_F(TrackingCliTest, SigtermMarksTheRunStoppedAndMetricsAreScrapedWhileTraining) {
  const std::string big = testing::Generate(*dir_, "big.tsv", 60000, 3);
  const std::string config = Config("sig", big, "", "{log_every_steps: 4, epochs: 20}");
  const std::string run = *dir_ + "/run_sig";
  const std::string err = *dir_ + "/sig.err";
  const pid_t pid = Spawn({"train", config, "--run-dir", run, "--no-progress"}, err);
  ASSERT_GT(pid, 0);
  const std::string port = WaitFor(err, std::regex("metrics: http://127\\.0\\.0\\.1:([0-9]+)/metrics"), 60, pid);
  ASSERT_FALSE(port.empty()) << ReadAll(err);
  const std::string id = WaitFor(err, std::regex("tracking: run ([0-9]+) in"), 5);
  ASSERT_FALSE(id.empty()) << ReadAll(err);

  // Scrape until the trainer has reported samples (it refreshes every second and at log lines).
  const std::string run_label = "{run=\"" + id + "\"}";
  std::string text;
  double samples = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (samples <= 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = HttpGet(std::stoi(port), "/metrics");
    const size_t at = text.find("rectrain_train_samples_total" + run_label + " ");
    if (at != std::string::npos) samples = std::atof(text.c_str() + at + 29 + run_label.size());
  }
  ASSERT_GT(samples, 0) << text;
  for (const std::string name :
       {"rectrain_train_steps_total", "rectrain_train_loss", "rectrain_train_samples_per_second",
        "rectrain_train_step", "rectrain_data_rows_read_total", "rectrain_data_rows_rejected_total",
        "rectrain_data_wait_seconds_total", "rectrain_data_queue_depth"}) {
    EXPECT_NE(text.find(name + run_label + " "), std::string::npos) << name << "\n" << text;
  }
  EXPECT_NE(text.find("# TYPE rectrain_train_samples_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rectrain_embedding_rows{run=\"" + id + "\",table=\""), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_embedding_oov_ratio{run=\"" + id + "\",table=\""), std::string::npos);
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(text.find("process_cpu_seconds_total "), std::string::npos);

  // While it runs, the store shows it running.
  nlohmann::json listed = FindRun("run_sig");
  ASSERT_FALSE(listed.is_null());
  EXPECT_EQ(listed["status"], "running");

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "\n"
                                 << ReadAll(err);
  EXPECT_EQ(WEXITSTATUS(status), 143) << ReadAll(err);
  listed = FindRun("run_sig");
  ASSERT_FALSE(listed.is_null());
  EXPECT_EQ(listed["status"], "stopped");
  EXPECT_EQ(listed["status_message"].get<std::string>().rfind("interrupted by SIGTERM at step ", 0), 0u)
      << listed.dump();
}

// A diverged run exports its non-finite loss (what RectrainTrainLossNaN in
// deploy/prometheus/alerts.yml fires on) and, with monitoring.linger_on_failure_s, keeps
// /metrics up that long after the error so that a scrape sees it; then exits 7 (diverged).
TEST_F(TrackingCliTest, DivergedRunExportsItsNanLossAndLingers) {
  const std::string train = testing::Generate(*dir_, "train.tsv", 4000, 1);
  const std::string config =
      Config("div", train,
             "optimizer: {type: sgd, lr: 1.0e+6}\nembedding: {optimizer: {type: sgd, lr: 1.0e+6}}\n"
             "monitoring: {linger_on_failure_s: 4}\n",
             "{log_every_steps: 4, epochs: 50}");
  const std::string err = *dir_ + "/div.err";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = Spawn({"train", config, "--run-dir", *dir_ + "/run_div", "--no-progress"}, err);
  ASSERT_GT(pid, 0);
  const std::string port = WaitFor(err, std::regex("metrics: http://127\\.0\\.0\\.1:([0-9]+)/metrics"), 60, pid);
  ASSERT_FALSE(port.empty()) << ReadAll(err);
  const std::string id = WaitFor(err, std::regex("tracking: run ([0-9]+) in"), 5);
  ASSERT_FALSE(id.empty()) << ReadAll(err);
  const std::string nan_line = "rectrain_train_loss{run=\"" + id + "\"} NaN\n";
  std::string text;
  bool saw_nan = false, saw_note = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    text = HttpGet(std::stoi(port), "/metrics");
    // Before the first step the loss is NaN too: wait for the failure note, then look.
    saw_note = saw_note || ReadAll(err).find("metrics: the run failed; serving /metrics 4 s more") != std::string::npos;
    if (saw_note && text.find(nan_line) != std::string::npos) {
      saw_nan = true;
      break;
    }
    if (waitpid(pid, nullptr, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(saw_nan) << text << "\n" << ReadAll(err);
  const size_t steps_at = text.find("rectrain_train_steps_total{run=\"" + id + "\"} ");
  ASSERT_NE(steps_at, std::string::npos) << text;
  EXPECT_GT(std::atof(text.c_str() + text.find("} ", steps_at) + 2), 0) << text;
  int status = 0;
  if (saw_nan) waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7) << ReadAll(err);
  EXPECT_GE(seconds, 4.0);
  EXPECT_NE(ReadAll(err).find("training diverged"), std::string::npos) << ReadAll(err);
  nlohmann::json listed = FindRun("run_div");
  ASSERT_FALSE(listed.is_null());
  EXPECT_EQ(listed["status"], "failed");  // recorded before the linger
}

TEST_F(TrackingCliTest, UiServesTheStoreAndRunsReportsErrors) {
  // Make sure the store exists (an earlier test may not have run in a filtered invocation).
  const std::string train = testing::Generate(*dir_, "train.tsv", 4000, 1);
  CmdResult r = Run({"train", Config("ui", train), "--run-dir", *dir_ + "/run_ui", "--quiet",
                     "--set", "tracking.run_name=for-ui", "--set", "monitoring.enabled=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string out = *dir_ + "/ui.out";
  const pid_t pid = Spawn({"ui", "--port", "0"}, *dir_ + "/ui.err", out);
  const std::string port = WaitFor(out, std::regex(" at http://127\\.0\\.0\\.1:([0-9]+)"), 30, pid);
  ASSERT_FALSE(port.empty()) << ReadAll(out) << ReadAll(*dir_ + "/ui.err");
  const std::string body = HttpGet(std::stoi(port), "/api/runs?q=for-ui");
  auto j = nlohmann::json::parse(body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << body;
  ASSERT_EQ(j["runs"].size(), 1u) << body;
  EXPECT_EQ(j["runs"][0]["status"], "finished");
  const int64_t id = j["runs"][0]["id"];
  // The log tail is served: the run directory lies in the workspace (the parent of .rectrain)?
  // Here it does not (the run is in dir_, the workspace is dir_/ws), so the server refuses.
  int code = 0;
  HttpGet(std::stoi(port), "/api/runs/" + std::to_string(id) + "/log", &code);
  EXPECT_EQ(code, 403);
  EXPECT_NE(HttpGet(std::stoi(port), "/metrics").find("rectrain_http_requests_total"), std::string::npos);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  r = Run({"runs", "show", "99999"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "rectrain runs: error: run 99999 not found");
  r = Run({"runs", "list", "--store", *dir_ + "/nowhere.db"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "rectrain runs: error: no tracking store at " + *dir_ +
                "/nowhere.db (rectrain train records runs there; pass --store PATH or --workspace "
                "DIR, or run from the workspace)");
  r = Run({"runs"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: rectrain runs VERB"), std::string::npos) << r.err;
  r = Run({"runs", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--store PATH"), std::string::npos) << r.out;
  r = Run({"ui", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--token"), std::string::npos) << r.out;
}

// `rectrain ui` reads $RECTRAIN_UI_DIR and $RECTRAIN_UI_TOKEN itself and hands them to the
// library in its options (webui::ServeUi reads no environment).
TEST_F(TrackingCliTest, UiTakesItsDirectoryAndTokenFromTheEnvironment) {
  const std::string empty = *dir_ + "/ui_empty", built = *dir_ + "/ui_built";
  fs::create_directories(empty);
  fs::create_directories(built);
  testing::WriteAll(built + "/index.html", "<html></html>");
  CmdResult r = Run({"ui", "--port", "0"}, {"RECTRAIN_UI_DIR=" + empty});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "rectrain ui: error: RECTRAIN_UI_DIR=" + empty + " has no index.html");
  r = Run({"ui", "--port", "0", "--host", "0.0.0.0"}, {"RECTRAIN_UI_DIR=" + built, "RECTRAIN_UI_TOKEN=short"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the token must be 16 to 256 characters"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rectrain
