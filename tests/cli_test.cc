// End-to-end tests of the `rectrain` binary: exit codes, error messages, the train/eval/resume
// round trip and signal handling.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

#ifndef RECTRAIN_BINARY
#error "RECTRAIN_BINARY must name the rectrain executable"
#endif

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using testing::ReadAll;

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("cli"));
    // Runs are recorded in a store of the test's own (not .rectrain/ in the working directory).
    setenv("RECTRAIN_TRACKING_STORE", (*dir_ + "/tracking.db").c_str(), 1);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static CmdResult Run(const std::vector<std::string>& args) {
    std::string cmd = Quote(RECTRAIN_BINARY);
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
  // Small generated data + a small DeepFM config; returns the config path.
  static std::string SmallConfig(const std::string& name, int64_t rows, const std::string& extra = "") {
    const std::string train = testing::Generate(*dir_, "train.tsv", 4000, 1);
    const std::string valid = testing::Generate(*dir_, "valid.tsv", 1000, 2);
    const std::string big = rows > 4000 ? testing::Generate(*dir_, "big.tsv", rows, 3) : train;
    const std::string path = *dir_ + "/" + name + ".yaml";
    testing::WriteAll(path, "threads: 1\ndata:\n  train: " + big + "\n  valid: " + valid +
                                "\n  batch_size: 256\n"
                                "model: {type: deepfm, embedding_dim: 4, hidden: [16]}\n"
                                "train: {log_every_steps: 1}\n" + extra);
    return path;
  }
  static std::string* dir_;
};
std::string* CliTest::dir_ = nullptr;

TEST_F(CliTest, VersionHelpAndUsage) {
  CmdResult r = Run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("rectrain ", 0), 0u) << r.out;
  r = Run({"help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: rectrain <command>"), std::string::npos);
  r = Run({"help", "train"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: rectrain train CONFIG.yaml"), std::string::npos) << r.out;
  r = Run({"train", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--set VALUE"), std::string::npos) << r.out;
  // The parser marks a repeated flag "(repeatable)"; its own help does not say it again.
  for (const std::vector<std::string>& help : {std::vector<std::string>{"train", "--help"}, {"data", "produce", "--help"}}) {
    r = Run(help);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const size_t first = line.find("repeatable");
      EXPECT_TRUE(first == std::string::npos || line.find("repeatable", first + 1) == std::string::npos) << line;
    }
  }
  r = Run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: rectrain <command>"), std::string::npos);
}

TEST_F(CliTest, UnknownCommandAndFlags) {
  CmdResult r = Run({"trian"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "rectrain: error: unknown command \"trian\"; did you mean train?");
  r = Run({"train", "x.yaml", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "rectrain train: error: unknown flag --bogus for rectrain train (see rectrain train --help)\n"
            "hint: check the flags (rectrain help) and the config keys (docs/config.md)\n");
  r = Run({"train", "x.yaml", "--run-dri", "d"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag --run-dri for rectrain train; did you mean --run-dir?"), std::string::npos) << r.err;
  r = Run({"data", "gen", "--rows", "0", "--out", *dir_ + "/x.tsv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "rectrain data gen: error: --rows must be > 0 (got 0)");
  r = Run({"data", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "rectrain data: error: unknown subcommand \"frobnicate\"; available: gen, check, stats, cache, convert, produce");
  r = Run({"train"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "rectrain train: error: rectrain train needs CONFIG.yaml (or --resume RUN_DIR)");
}

TEST_F(CliTest, MissingConfigIsNotFound) {
  CmdResult r = Run({"train", *dir_ + "/missing.yaml", "--run-dir", *dir_ + "/r0"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "rectrain train: error: cannot read config file " + *dir_ +
                       "/missing.yaml\nhint: check that the path exists (globs must match at least one file)\n");
}

TEST_F(CliTest, ConfigErrorsAreReportedTogether) {
  const std::string path = *dir_ + "/bad.yaml";
  testing::WriteAll(path,
                    "data:\n"
                    "  train: t.tsv\n"
                    "model:\n"
                    "  hiden: [64]\n"
                    "  dropout: 1.5\n"
                    "train:\n"
                    "  epochs: many\n");
  CmdResult r = Run({"train", path, "--set", "optimizer.lrr=0.1", "--run-dir", *dir_ + "/r1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "rectrain train: error: invalid configuration (4 errors):\n"
            "  model.hiden: unknown key; did you mean model.hidden? (" + path + ":4:3)\n"
            "  optimizer.lrr: unknown key; did you mean optimizer.lr? (--set optimizer.lrr=0.1)\n"
            "  model.dropout: 1.5 is out of range [0, 1) (" + path + ":5:3)\n"
            "  train.epochs: expected an integer, got \"many\" (" + path + ":7:3)\n"
            "hint: check the flags (rectrain help) and the config keys (docs/config.md)\n");
  EXPECT_FALSE(fs::exists(*dir_ + "/r1"));  // nothing is created for an invalid config
}

// A bad row stops the run with its file:line and the key that would skip it; the generic hint of
// invalid arguments ("check the flags ...") would point away from the data.
TEST_F(CliTest, ABadRowNamesItsFixWithoutTheFlagsHint) {
  const std::string bad = *dir_ + "/bad_row.tsv";
  testing::WriteAll(bad, testing::ReadAll(testing::Generate(*dir_, "train.tsv", 4000, 1)) + "1\tnot-a-number\n");
  const std::string cfg = SmallConfig("bad_row", 4000, "checks: {before_train: false}\n");
  CmdResult r = Run({"train", cfg, "--set", "data.train=" + bad, "--run-dir", *dir_ + "/bad_row_run", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad_row.tsv:4001:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("set data.max_bad_rows"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("check the flags"), std::string::npos) << r.err;
}

TEST_F(CliTest, GenTrainEvalRoundTrip) {
  CmdResult r = Run({"data", "gen", "--rows", "3000", "--out", *dir_ + "/gen.tsv", "--shape", "easy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 3000 rows"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(*dir_ + "/gen.tsv.prob"));

  const std::string config = SmallConfig("small", 0);
  const std::string run = *dir_ + "/run_rt";
  r = Run({"train", config, "--run-dir", run, "--set", "train.epochs=2", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // --quiet
  EXPECT_NE(r.out.find("run: " + run + " (completed, 32 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("valid: auc "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oracle: auc "), std::string::npos) << r.out;
  for (const char* f : {"config.yaml", "train.log", "summary.json", "model/meta.json", "model/dense.bin"}) {
    EXPECT_TRUE(fs::exists(run + "/" + f)) << f;
  }
  auto summary = nlohmann::json::parse(ReadAll(run + "/summary.json"));

  r = Run({"eval", run, "--data", *dir_ + "/valid.tsv", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"], 1000);
  EXPECT_DOUBLE_EQ(j["auc"].get<double>(), summary["valid"]["auc"].get<double>());
  EXPECT_DOUBLE_EQ(j["oracle"]["auc"].get<double>(), summary["oracle"]["auc"].get<double>());
  r = Run({"eval", run, "--data", *dir_ + "/valid.tsv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("oracle auc"), std::string::npos) << r.out;

  // A second run into the same directory is refused; eval of a directory without a model too.
  r = Run({"train", config, "--run-dir", run});
  EXPECT_EQ(r.exit_code, 8);
  EXPECT_NE(r.err.find("already holds a run; continue it with --resume " + run), std::string::npos) << r.err;
  r = Run({"eval", *dir_ + "/nowhere", "--data", *dir_ + "/valid.tsv"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no trained model in " + *dir_ + "/nowhere/model"), std::string::npos) << r.err;
  r = Run({"eval", run, "--data", *dir_ + "/nothing*.tsv"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST_F(CliTest, SigtermStopsWithCheckpointAndResumes) {
  const std::string config = SmallConfig("sig", 60000);
  const std::string run = *dir_ + "/run_sig";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string log = *dir_ + "/sig.err";
    freopen(log.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(RECTRAIN_BINARY, RECTRAIN_BINARY, "train", config.c_str(), "--run-dir", run.c_str(),
          "--no-progress", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the first logged step, then ask it to stop.
  bool started = false;
  for (int i = 0; i < 1200 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    started = ReadAll(run + "/train.log").find("step 1 |") != std::string::npos;
  }
  ASSERT_TRUE(started) << ReadAll(*dir_ + "/sig.err");
  // No handler is installed for it: a watcher thread takes it with sigwait (cli/stop_signals.h),
  // so no signal frame lands on a stack that a oneDNN JIT kernel pointed into the heap.
  const std::string proc_status = ReadAll("/proc/" + std::to_string(pid) + "/status");
  const size_t caught = proc_status.find("SigCgt:");
  ASSERT_NE(caught, std::string::npos) << proc_status;
  EXPECT_EQ((std::stoull(proc_status.substr(caught + 7), nullptr, 16) >> (SIGTERM - 1)) & 1, 0u) << proc_status;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "\n"
                                 << ReadAll(*dir_ + "/sig.err");
  EXPECT_EQ(WEXITSTATUS(status), 143) << ReadAll(*dir_ + "/sig.err");
  const std::string err = ReadAll(*dir_ + "/sig.err");
  EXPECT_NE(err.find("\nrectrain: stopping after the current step with a checkpoint, or before the first step "
                     "with nothing to save (signal again to abort at once)\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rectrain train: interrupted by SIGTERM at step "), std::string::npos) << err;
  EXPECT_NE(err.find("resume with: rectrain train --resume " + run), std::string::npos) << err;
  auto summary = nlohmann::json::parse(ReadAll(run + "/summary.json"));
  EXPECT_EQ(summary["status"], "interrupted");
  const int64_t stopped_at = summary["train"]["steps"].get<int64_t>();
  EXPECT_TRUE(fs::exists(run + "/checkpoints/step-" + std::to_string(stopped_at) + "/meta.json"));

  CmdResult r = Run({"train", "--resume", run, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  summary = nlohmann::json::parse(ReadAll(run + "/summary.json"));
  EXPECT_EQ(summary["status"], "completed");
  EXPECT_EQ(summary["train"]["rows_read"], 60000);
  EXPECT_EQ(summary["train"]["steps"], 235);  // ceil(60000 / 256)
  EXPECT_EQ(summary["train"]["session_steps"].get<int64_t>(), 235 - stopped_at);
}

// SIGTERM while the config loads: nothing has been trained, so the run stops there (exit 143)
// with nothing written — not "writing a checkpoint" after a first step. The config is a FIFO, so
// the signal lands, deterministically, while `rectrain train` is reading it.
TEST_F(CliTest, SigtermWhileTheConfigLoadsStopsWithNothingSaved) {
  const std::string text = ReadAll(SmallConfig("fifo_src", 0));
  const std::string fifo = *dir_ + "/loading.yaml", run = *dir_ + "/run_loading";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen((*dir_ + "/loading.err").c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(RECTRAIN_BINARY, RECTRAIN_BINARY, "train", fifo.c_str(), "--run-dir", run.c_str(), "--no-progress",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Opening the write end returns once `rectrain train` opened the config to read it, which it
  // does after taking SIGTERM as a stop request (cli/stop_signals.h).
  FILE* config = std::fopen(fifo.c_str(), "w");
  ASSERT_NE(config, nullptr);
  kill(pid, SIGTERM);
  std::fputs(text.c_str(), config);
  std::fclose(config);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string err = ReadAll(*dir_ + "/loading.err");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 143) << err;
  EXPECT_NE(err.find("rectrain train: stopped by SIGTERM before the first step: nothing trained, no checkpoint written"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(run + "/checkpoints")) << err;
  EXPECT_FALSE(fs::exists(run + "/summary.json")) << err;
}

}  // namespace
}  // namespace rectrain
