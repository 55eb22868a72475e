// train::RunTrainingSession in process: the run directory, the data check, the trainer and an
// observer (a fake one, in place of the tracking recorder), on one process and on two in-process
// ranks; the errors it returns before training.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <mutex>

#include "rectrain/dist/inproc.h"
#include "rectrain/train/session.h"
#include "tests/test_util.h"

namespace rectrain {
namespace {
namespace fs = std::filesystem;

// Records every hook; asks the run to stop at `stop_at_step` (0: never).
class FakeObserver : public train::TrainObserver {
 public:
  explicit FakeObserver(int64_t stop_at_step = 0, std::atomic<int>* stop = nullptr) : stop_at_(stop_at_step), stop_(stop) {}
  void OnStart(int64_t step) override { starts.push_back(step); }
  void OnProgress(const train::ProgressInfo& p) override {
    if (p.log_line) log_line_steps.push_back(p.step);
    last = p;
    if (stop_at_ > 0 && p.step >= stop_at_) stop_->store(SIGTERM);
  }
  void OnEval(int64_t step, const train::EvalMetrics& m) override {
    eval_steps.push_back(step);
    last_auc = m.auc;
  }
  void OnCheckpoint(int64_t step, const std::string& dir) override { checkpoints.emplace_back(step, dir); }

  std::vector<int64_t> starts, log_line_steps, eval_steps;
  std::vector<std::pair<int64_t, std::string>> checkpoints;
  train::ProgressInfo last;
  double last_auc = 0;

 private:
  int64_t stop_at_;
  std::atomic<int>* stop_;
};

class Session : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("session"));
    const std::string train = testing::Generate(*dir_, "train.tsv", 3000, 1);
    const std::string valid = testing::Generate(*dir_, "valid.tsv", 600, 2);
    config_ = new std::string(*dir_ + "/cfg.yaml");
    testing::WriteAll(*config_, "seed: 3\ndeterministic: true\nthreads: 1\n"
                                "data: {train: " + train + ", valid: " + valid + ", batch_size: 256}\n"
                                "model: {type: deepfm, embedding_dim: 4, hidden: [8]}\n"
                                "train: {epochs: 1, log_every_steps: 4, eval_every_steps: 6, checkpoint_every_steps: 5}\n"
                                "tracking: {enabled: false}\nmonitoring: {enabled: false}\n");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete config_;
  }
  static train::SessionOptions Options(const std::string& run_dir, train::TrainObserver* observer) {
    train::SessionOptions o;
    o.config_path = *config_;
    o.run_dir = run_dir;
    o.progress = 0;
    o.echo = false;
    o.observer = observer;
    o.size_compute_pool = SetComputePoolThreads;
    return o;
  }
  static std::string* dir_;
  static std::string* config_;
};
std::string* Session::dir_ = nullptr;
std::string* Session::config_ = nullptr;

TEST_F(Session, ATrainingRunReportsToItsObserverAndWritesItsDirectory) {
  FakeObserver observer;
  const std::string run = *dir_ + "/run";
  auto r = train::RunTrainingSession(Options(run, &observer));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->run_dir, run);
  EXPECT_EQ(r->summary.status, train::RunOutcome::kCompleted);
  EXPECT_EQ(r->summary.steps, 12);  // 3000 rows / 256
  EXPECT_EQ(observer.starts, std::vector<int64_t>{0});
  EXPECT_EQ(observer.log_line_steps, (std::vector<int64_t>{4, 8, 12}));
  EXPECT_EQ(observer.eval_steps, (std::vector<int64_t>{6, 12}));
  ASSERT_EQ(observer.checkpoints.size(), 3u);  // steps 5, 10 and the final 12
  EXPECT_EQ(observer.checkpoints.back(), std::make_pair(int64_t{12}, run + "/checkpoints/step-12"));
  EXPECT_EQ(observer.last.rows_read, 3000);
  EXPECT_DOUBLE_EQ(observer.last_auc, r->summary.valid.auc);
  for (const char* f : {"config.yaml", "train.log", "summary.json", "evals.jsonl", "data_profile.json", "model/meta.json"}) {
    EXPECT_TRUE(fs::exists(run + "/" + f)) << f;
  }
  // The same directory again needs --resume.
  auto again = train::RunTrainingSession(Options(run, nullptr));
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status();
}

TEST_F(Session, AStoppedRunResumesWhereItStopped) {
  std::atomic<int> stop{0};
  FakeObserver first(/*stop_at_step=*/7, &stop);
  const std::string run = *dir_ + "/stopped";
  train::SessionOptions o = Options(run, &first);
  o.stop_signal = &stop;
  auto r = train::RunTrainingSession(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->summary.status, train::RunOutcome::kInterrupted);
  EXPECT_EQ(r->summary.interrupted_by, SIGTERM);
  EXPECT_EQ(r->summary.steps, 8);  // the step of the report that asked, then a checkpoint
  FakeObserver second;
  train::SessionOptions resume = Options(run, &second);
  resume.config_path.clear();  // RUN_DIR/config.yaml
  resume.resume = true;
  auto done = train::RunTrainingSession(resume);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->summary.status, train::RunOutcome::kCompleted);
  EXPECT_EQ(second.starts, std::vector<int64_t>{8});
  EXPECT_EQ(done->summary.steps, 12);
}

TEST_F(Session, ErrorsBeforeTrainingComeBackAsStatuses) {
  train::SessionOptions o = Options(*dir_ + "/bad", nullptr);
  o.sets = {"model.hiden=[4]"};
  EXPECT_EQ(train::RunTrainingSession(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(*dir_ + "/bad"));
  train::SessionOptions resume = Options("", nullptr);
  resume.resume = true;
  EXPECT_EQ(train::RunTrainingSession(resume).status().code(), StatusCode::kInvalidArgument);
  train::SessionOptions tag = Options(*dir_ + "/tag", nullptr);
  tag.tags = {""};
  EXPECT_EQ(train::RunTrainingSession(tag).status().code(), StatusCode::kInvalidArgument);
}

// Two in-process ranks: the run directory is rank 0's, only rank 0's observer hears from the
// trainer, and both ranks return the same outcome.
TEST_F(Session, TheRanksOfAJobShareOneRunDirectoryAndOneOutcome) {
  const std::string run = *dir_ + "/job";
  std::vector<FakeObserver> observers(2);
  std::vector<Result<train::SessionResult>> results(2, InternalError("not run"));
  auto status = dist::RunRanks(2, [&](dist::Communicator& comm) -> Status {
    train::SessionOptions o = Options(comm.rank() == 0 ? run : *dir_ + "/ignored", &observers[static_cast<size_t>(comm.rank())]);
    o.comm = &comm;
    results[static_cast<size_t>(comm.rank())] = train::RunTrainingSession(o);
    return OkStatus();
  });
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(results[static_cast<size_t>(k)].ok()) << k << ": " << results[static_cast<size_t>(k)].status();
    EXPECT_EQ(results[static_cast<size_t>(k)]->run_dir, run);
    EXPECT_EQ(results[static_cast<size_t>(k)]->summary.steps, 12);
    EXPECT_EQ(results[static_cast<size_t>(k)]->summary.world, 2);
  }
  EXPECT_FALSE(fs::exists(*dir_ + "/ignored"));
  EXPECT_EQ(observers[0].log_line_steps, (std::vector<int64_t>{4, 8, 12}));
  EXPECT_TRUE(observers[1].starts.empty());
  EXPECT_TRUE(observers[1].log_line_steps.empty());
}

}  // namespace
}  // namespace rectrain
