// Every numeric key of the config at both ends of its range, through `rectrain train` on a
// small generated dataset: the run completes, or stops with a clear error (an exit status and
// "error:" on stderr) — never a signal (an abort, a segfault) and never a hang (killed after
// kDeadlineSeconds). A key that one model type reads runs with that type (ContextOf in
// src/rectrain/config/key_edges_test_util.h), so the edge reaches the code that uses it. The
// keys come from the schema itself (config::TrainConfigSchema()), so a new key is tried here as
// soon as it is bound; train_config_keys_test holds every key's range against docs/config.md.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "rectrain/config/train_config.h"
#include "src/rectrain/config/key_edges_test_util.h"
#include "tests/test_util.h"

#ifndef RECTRAIN_BINARY
#error "RECTRAIN_BINARY must name the rectrain executable"
#endif

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using config::KeySpec;

constexpr int kDeadlineSeconds = 120;

struct Outcome {
  bool timed_out = false;
  int signal = 0;     // the signal that ended it, or 0
  int exit_code = -1;
  std::string err;
};

// Runs the binary with `args`, stderr to a file, and kills it at the deadline.
Outcome RunWithDeadline(const std::vector<std::string>& args, const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(err_path.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(RECTRAIN_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(RECTRAIN_BINARY, argv.data());
    _exit(127);
  }
  Outcome o;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kDeadlineSeconds);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      o.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!o.timed_out && WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  o.err = testing::ReadAll(err_path);
  return o;
}

std::vector<std::string> NumericKeys() {
  std::vector<std::string> keys;
  for (const KeySpec& k : config::TrainConfigSchema()) {
    if (k.numeric()) keys.push_back(k.path);
  }
  return keys;
}

class ConfigEdges : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("config_edges"));
    const std::string train = testing::Generate(*dir_, "train.tsv", 600, 1);
    const std::string valid = testing::Generate(*dir_, "valid.tsv", 200, 2);
    // Small and quick; each key's edge overrides what it names.
    testing::WriteAll(*dir_ + "/base.yaml", "threads: 1\ndata: {train: " + train + ", valid: " + valid +
                                                ", batch_size: 128}\n"
                                                "model: {hidden: [16], embedding_dim: 4}\n"
                                                "train: {max_steps: 3, log_every_steps: 1}\n"
                                                "tracking: {enabled: false}\nmonitoring: {enabled: false}\n");
    setenv("RECTRAIN_TRACKING_STORE", (*dir_ + "/tracking.db").c_str(), 1);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* ConfigEdges::dir_ = nullptr;

TEST_P(ConfigEdges, RunsOrStopsWithAClearError) {
  const std::string key = GetParam();
  KeySpec spec;
  for (const KeySpec& k : config::TrainConfigSchema()) {
    if (k.path == key) spec = k;
  }
  config::test_util::KeyContext context = config::test_util::ContextOf(key, *dir_);
  // What a single process ignores unless asked: /metrics and the tracking store.
  if (key.rfind("monitoring.", 0) == 0) context.sets.push_back("monitoring.enabled=true");
  if (key.rfind("tracking.", 0) == 0) context.sets.push_back("tracking.enabled=true");
  int runs = 0;
  for (const config::test_util::Edge& edge : config::test_util::RangeEdges(spec, context)) {
    if (!edge.inside) continue;  // past the range: a config error (train_config_keys_test)
    const std::string run = *dir_ + "/run_" + std::to_string(::getpid()) + "_" + std::to_string(runs++);
    std::vector<std::string> args = {"train", *dir_ + "/base.yaml", "--run-dir", run, "--no-progress"};
    for (const std::string& s : context.sets) args.insert(args.end(), {"--set", s});
    args.insert(args.end(), {"--set", key + "=" + edge.text});
    const Outcome o = RunWithDeadline(args, run + ".err");
    const std::string what = key + "=" + edge.text;
    EXPECT_FALSE(o.timed_out) << what << ": still running after " << kDeadlineSeconds << " s\n" << o.err;
    EXPECT_EQ(o.signal, 0) << what << ": ended by signal " << o.signal << "\n" << o.err;
    if (o.exit_code != 0 && !o.timed_out && o.signal == 0) {
      EXPECT_NE(o.err.find("rectrain train: error: "), std::string::npos) << what << ": exit " << o.exit_code
                                                                          << " without an error line\n" << o.err;
    }
    const size_t error_at = o.err.find("error: ");
    const std::string line = error_at == std::string::npos ? "" : o.err.substr(error_at, o.err.find('\n', error_at) - error_at);
    std::printf("%s: %s\n", what.c_str(), o.exit_code == 0 ? "ran" : line.c_str());
    fs::remove_all(run);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryNumericKey, ConfigEdges, ::testing::ValuesIn(NumericKeys()),
                         [](const ::testing::TestParamInfo<std::string>& key) {
                           std::string name = key.param;
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace rectrain
