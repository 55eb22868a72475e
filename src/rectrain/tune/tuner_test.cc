// tune::RunStudy's loop in process: a fake launcher whose trials are not processes (at launch
// they write what a trainer leaves behind: evals.jsonl, a checkpoint, summary.json) and a
// clock whose waits take no time. The study must search, promote (relaunch with --resume),
// fail a diverging trial without failing the study, stop every trial on a signal, and resume.
#include "rectrain/tune/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

namespace rectrain::tune {
namespace {
namespace fs = std::filesystem;

class FakeClock final : public StudyClock {
 public:
  double Now() const override { return now_; }
  void Sleep(double seconds) const override {
    now_ += seconds;
    if (on_sleep) on_sleep();
  }
  std::function<void()> on_sleep;

 private:
  mutable double now_ = 0;
};

// A trial that "runs" for a few polls, then exits with `exit_code`; a signal ends it at once
// with 143, as rectrain train does after its checkpoint, and is counted in `*signals`.
class FakeProcess final : public TrialProcess {
 public:
  FakeProcess(int exit_code, int* signals) : exit_code_(exit_code), signals_(signals) {}
  pid_t pid() const override { return 0; }
  std::optional<ExitInfo> Poll() override {
    if (--polls_left_ > 0) return std::nullopt;
    return ExitInfo{.exit_code = exit_code_};
  }
  void Signal(int sig) override {
    ++*signals_;
    exit_code_ = 128 + sig;
    polls_left_ = 0;
  }

 private:
  int exit_code_;
  int* signals_;
  int polls_left_ = 3;
};

std::string SetValue(const std::vector<std::string>& argv, const std::string& key) {
  for (const std::string& a : argv) {
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  }
  return "";
}

// The metric at `step` for learning rate `lr`: best at 0.01, a little better with every step.
double Auc(double lr, int64_t step) { return 0.7 - 0.05 * std::abs(std::log10(lr) + 2) + 0.0001 * static_cast<double>(step); }

// Trains instantly: the evaluations every 10 steps up to the budget, a checkpoint, summary.json.
// optimizer.lr 0.5 diverges (exit 7, as rectrain train does). A trial's lr and steps are kept in
// its directory (fake_state), so a resumed launch (--resume: no sets) continues it.
class FakeLauncher final : public Launcher {
 public:
  Result<std::unique_ptr<TrialProcess>> Start(const LaunchRequest& r) override {
    launches.push_back(r);
    const bool resume = std::find(r.argv.begin(), r.argv.end(), "--resume") != r.argv.end();
    double lr = 0;
    int64_t done = 0;
    if (resume) {
      std::ifstream(r.dir + "/fake_state") >> lr >> done;
    } else {
      lr = std::stod(SetValue(r.argv, "optimizer.lr"));
    }
    if (lr >= 0.5) {
      std::ofstream(r.dir + "/summary.json") << R"({"status": "failed", "error": "training diverged: the loss is nan"})";
      return std::unique_ptr<TrialProcess>(std::make_unique<FakeProcess>(7, &signals));
    }
    const int64_t budget = std::stoll(SetValue(r.argv, "train.max_steps"));
    std::ofstream evals(r.dir + "/evals.jsonl", std::ios::app);
    for (; done + 10 <= budget; done += 10) evals << "{\"step\": " << done + 10 << ", \"epoch\": 0, \"auc\": " << Auc(lr, done + 10) << "}\n";
    std::ofstream(r.dir + "/fake_state") << lr << " " << done;
    fs::create_directories(r.dir + "/checkpoints/step-" + std::to_string(done));
    std::ofstream(r.dir + "/summary.json") << "{\"status\": \"completed\", \"train\": {\"steps\": " << done
                                           << ", \"epochs\": 1}, \"valid\": {\"auc\": " << Auc(lr, done) << "}}";
    return std::unique_ptr<TrialProcess>(std::make_unique<FakeProcess>(0, &signals));
  }
  std::string Describe(const LaunchRequest& r) const override { return "fake " + r.dir; }

  std::vector<LaunchRequest> launches;
  int signals = 0;  // signals the tuner sent to trials
};

StudySpec Spec() {
  auto s = ParseStudy("name: fake\nbase: {model: {type: lr}}\nmetric: valid.auc\nnum_samples: 5\ndata_cache: false\n"
                      "space:\n  optimizer.lr: {grid: [0.001, 0.01, 0.5, 0.1, 0.03]}\n"
                      "searcher: {type: grid}\n"
                      "scheduler: {type: asha, budget: steps, grace: 10, reduction: 3, max: 90}\n"
                      "trial_threads: 1\ntotal_threads: 2\n",
                      "");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TunerOptions Options(const std::string& dir, FakeLauncher* launcher, const FakeClock* clock) {
  TunerOptions o;
  o.study_dir = dir;
  o.rectrain_exe = "/nonexistent/rectrain";  // never run: the launcher is fake
  o.check = [](const std::vector<std::string>&) -> Result<TrialConfigInfo> {
    return TrialConfigInfo{.resolved_yaml = "model: {type: lr}\n", .has_valid = true, .eval_every_steps = 10};
  };
  o.launcher = launcher;
  o.clock = clock;
  return o;
}

TEST(Tuner, TheStudyLoopSearchesPromotesAndFailsADivergingTrialAlone) {
  const std::string dir = ::testing::TempDir() + "/tuner_loop";
  fs::remove_all(dir);
  StudySpec spec = Spec();
  FakeLauncher launcher;
  FakeClock clock;
  auto r = RunStudy(spec, Options(dir, &launcher, &clock));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->trials.size(), 5u);
  EXPECT_EQ(r->trials[2].state, TrialState::kFailed);
  EXPECT_NE(r->trials[2].reason.find("training diverged"), std::string::npos) << r->trials[2].reason;
  ASSERT_GE(r->best, 0);
  EXPECT_EQ(r->trials[static_cast<size_t>(r->best)].params[0].second, "0.01");
  EXPECT_GE(r->trials[static_cast<size_t>(r->best)].budget, 30);  // promoted past the first rung
  int resumes = 0;
  for (const LaunchRequest& l : launcher.launches) {
    resumes += std::count(l.argv.begin(), l.argv.end(), "--resume") > 0 ? 1 : 0;
  }
  EXPECT_GT(resumes, 0);
  EXPECT_EQ(r->launches, static_cast<int64_t>(launcher.launches.size()));
  EXPECT_TRUE(fs::exists(r->best_config_path));
  EXPECT_GT(clock.Now(), 0);  // the loop waited on the fake clock, not the real one
}

TEST(Tuner, ASignalStopsEveryTrialAndTheStudyResumes) {
  const std::string dir = ::testing::TempDir() + "/tuner_stop";
  fs::remove_all(dir);
  StudySpec spec = Spec();
  FakeLauncher launcher;
  FakeClock clock;
  std::atomic<int> stop{0};
  clock.on_sleep = [&] {
    if (launcher.launches.size() >= 3) stop.store(SIGTERM);
  };
  TunerOptions o = Options(dir, &launcher, &clock);
  o.stop_signal = &stop;
  auto r = RunStudy(spec, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_GT(launcher.signals, 0);  // the running trials got SIGTERM

  FakeLauncher again;
  FakeClock clock2;
  TunerOptions resume = Options(dir, &again, &clock2);
  resume.resume = true;
  auto done = RunStudy(spec, resume);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_FALSE(done->interrupted);
  EXPECT_EQ(done->trials.size(), 5u);
  for (const TrialResult& t : done->trials) EXPECT_NE(t.state, TrialState::kRunning) << t.id;
}

}  // namespace
}  // namespace rectrain::tune
