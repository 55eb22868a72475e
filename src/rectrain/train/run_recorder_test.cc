#include "rectrain/train/run_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>

namespace rectrain::train {
namespace {

namespace fs = std::filesystem;

class RunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_recorder_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    auto store = track::TrackingStore::Open((dir_ / "tracking.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void WriteFile(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }
  RunRecorder::Options Opts(prometheus::MetricsRegistry* reg) {
    RunRecorder::Options o;
    o.store = store_.get();
    o.registry = reg;
    o.run_dir = (dir_ / "run").string();
    o.heartbeat_s = 0;
    o.warn = [this](const std::string& m) { warnings_.push_back(m); };
    return o;
  }
  std::map<std::string, double> Finals(track::RunId id) {
    auto d = store_->GetRun(id);
    EXPECT_TRUE(d.ok()) << d.status();
    std::map<std::string, double> m;
    for (const auto& [k, v] : d->summary.final_metrics) m[k] = v;
    return m;
  }

  // A run of 20 steps: progress at 10 (Prometheus only) and 20 (a log line), an evaluation and
  // a checkpoint at 20, then the finish.
  void FeedTinyRun(RunRecorder* rec) {
    rec->OnStart(0);
    ProgressInfo p;
    p.step = 10;
    p.rows_read = 1000;
    p.rows_rejected = 2;
    p.loss = 0.5;
    p.train_auc = 0.7;
    p.samples_per_sec = 1234;
    p.learning_rate = 0.001;
    p.tables = {TableSummary{"C1", 8, 50, 4096, 50, 3, 1000, 10, 4, 8192, "error"}};
    p.log_line = false;  // Prometheus only
    rec->OnProgress(p);
    p.step = 20;
    p.loss = 0.4;
    p.log_line = true;
    rec->OnProgress(p);
    EvalMetrics e;
    e.auc = 0.75;
    e.logloss = 0.45;
    rec->OnEval(20, e);
    rec->OnCheckpoint(20, (dir_ / "run/checkpoints/step-20").string());
    TrainSummary s;
    s.status = RunOutcome::kCompleted;
    s.steps = 20;
    s.samples_per_sec = 1500;
    s.has_valid = true;
    s.valid = e;
    s.model_dir = (dir_ / "run/model").string();
    rec->Finish(s);
  }

  fs::path dir_;
  std::unique_ptr<track::TrackingStore> store_;
  std::vector<std::string> warnings_;
};

TEST_F(RunRecorderTest, RecordsAFinishedRun) {
  WriteFile(dir_ / "a.tsv", "1\t2\n");
  WriteFile(dir_ / "b.tsv", std::string(200000, 'x'));
  prometheus::MetricsRegistry reg;
  track::RunInfo info;
  info.name = "tiny";
  info.tags = {"t1", "t2"};
  info.group_id = "study-1";
  info.config_yaml = "model:\n  type: deepfm\n";
  auto rec = RunRecorder::Start(Opts(&reg), info, {(dir_ / "*.tsv").string()});
  ASSERT_TRUE(rec.ok()) << rec.status();
  const track::RunId id = *(*rec)->run_id();
  EXPECT_EQ((*rec)->run_label(), std::to_string(id));
  FeedTinyRun(rec->get());
  auto d = store_->GetRun(id);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->summary.status, track::RunStatus::kFinished);
  EXPECT_EQ(d->summary.name, "tiny");
  EXPECT_EQ(d->summary.tags, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(d->summary.group_id, "study-1");
  ASSERT_EQ(d->data_files.size(), 2u);
  EXPECT_EQ(d->data_files[0].path, (dir_ / "a.tsv").string());
  EXPECT_EQ(d->data_files[0].size_bytes, 4);
  EXPECT_EQ(d->data_files[1].size_bytes, 200000);
  EXPECT_EQ(d->data_files[0].fingerprint.substr(0, 3), "v1:");
  std::map<std::string, std::string> artifacts;
  for (const auto& a : d->artifacts) artifacts[a.kind] = a.path;
  EXPECT_EQ(artifacts["log"], (dir_ / "run/train.log").string());
  EXPECT_EQ(artifacts["checkpoint"], (dir_ / "run/checkpoints/step-20").string());
  EXPECT_EQ(artifacts["model"], (dir_ / "run/model").string());
  EXPECT_EQ(artifacts["summary"], (dir_ / "run/summary.json").string());
  // Only the log-line progress went to the store (plus the eval).
  auto loss = store_->GetMetrics(id, "train/loss", 0);
  ASSERT_TRUE(loss.ok());
  ASSERT_EQ(loss->points.size(), 1u);
  EXPECT_EQ(loss->points[0].step, 20);
  EXPECT_DOUBLE_EQ(loss->points[0].value, 0.4);
  auto auc = store_->GetMetrics(id, "val/auc", 0);
  ASSERT_EQ(auc->points.size(), 1u);
  EXPECT_DOUBLE_EQ(auc->points[0].value, 0.75);
  auto rss = store_->GetMetrics(id, "system/rss_bytes", 0);
  ASSERT_EQ(rss->points.size(), 1u);
  EXPECT_GT(rss->points[0].value, 1e6);
  auto f = Finals(id);
  EXPECT_DOUBLE_EQ(f["val/auc"], 0.75);
  EXPECT_DOUBLE_EQ(f["train/samples_per_s"], 1500);
  EXPECT_DOUBLE_EQ(f["train/loss"], 0.4);
  EXPECT_TRUE(warnings_.empty());

  const std::string text = reg.Render();
  const std::string run = "run=\"" + std::to_string(id) + "\"";
  EXPECT_NE(text.find("rectrain_train_samples_total{" + run + "} 1000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_train_loss{" + run + "} 0.4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_eval_auc{" + run + "} 0.75\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_data_rows_rejected_total{" + run + "} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_embedding_rows{" + run + ",table=\"C1\"} 50\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_embedding_oov_ratio{" + run + ",table=\"C1\"} 0.01\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("rectrain_embedding_expirations_total{" + run + ",table=\"C1\"} 4\n"), std::string::npos)
      << text;
  // The budget the alert rules compare rectrain_embedding_bytes with (deploy/prometheus/alerts.yml).
  EXPECT_NE(text.find("rectrain_embedding_budget_bytes{on_budget=\"error\"," + run + ",table=\"C1\"} 8192\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos) << text;
}

// A job's per-rank figures: Prometheus series labelled by rank, rank<r>/... metrics in the store.
TEST_F(RunRecorderTest, ExportsEveryRanksFigures) {
  prometheus::MetricsRegistry reg;
  auto rec = RunRecorder::Start(Opts(&reg), track::RunInfo{}, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  const track::RunId id = *(*rec)->run_id();
  (*rec)->OnStart(0);
  ProgressInfo p;
  p.step = 5;
  p.log_line = true;
  for (int r = 0; r < 2; ++r) {
    RankFigures f;
    f.rank = r;
    f.rows = 1000 + r;
    f.ids_owned = 300 + r;
    f.bytes_sent = 5000 + r;
    f.breakdown.exchange = 0.25 + r;
    f.breakdown.allreduce = 0.5;
    p.ranks.push_back(f);
  }
  (*rec)->OnProgress(p);
  const std::string text = reg.Render();
  const std::string run = "run=\"" + std::to_string(id) + "\"";
  // (the registry writes labels in name order)
  EXPECT_NE(text.find("rectrain_rank_bytes_sent_total{rank=\"1\"," + run + "} 5001\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_rank_embedding_rows{rank=\"0\"," + run + "} 300\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rectrain_rank_step_seconds_total{phase=\"exchange\",rank=\"1\"," + run + "} 1.25\n"),
            std::string::npos)
      << text;
  auto bytes = store_->GetMetrics(id, "rank1/bytes_sent", 0);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->points.size(), 1u);
  EXPECT_DOUBLE_EQ(bytes->points[0].value, 5001);
  auto rows = store_->GetMetrics(id, "rank0/rows", 0);
  ASSERT_TRUE(rows.ok());
  EXPECT_DOUBLE_EQ(rows->points.at(0).value, 1000);
}

TEST_F(RunRecorderTest, StoppedFailedAndAbandonedRuns) {
  track::RunInfo info;
  auto stopped = RunRecorder::Start(Opts(nullptr), info, {});
  ASSERT_TRUE(stopped.ok());
  TrainSummary s;
  s.status = RunOutcome::kInterrupted;
  s.interrupted_by = SIGTERM;
  s.steps = 7;
  (*stopped)->Finish(s);
  auto d = store_->GetRun(*(*stopped)->run_id());
  EXPECT_EQ(d->summary.status, track::RunStatus::kStopped);
  EXPECT_EQ(d->summary.status_message, "interrupted by SIGTERM at step 7");

  auto failed = RunRecorder::Start(Opts(nullptr), info, {});
  ASSERT_TRUE(failed.ok());
  (*failed)->Fail(DataLossError("bad row"));
  (*failed)->Fail(DataLossError("ignored: the run already ended"));
  d = store_->GetRun(*(*failed)->run_id());
  EXPECT_EQ(d->summary.status, track::RunStatus::kFailed);
  EXPECT_EQ(d->summary.status_message, DataLossError("bad row").ToString());

  track::RunId abandoned_id = 0;
  {
    auto abandoned = RunRecorder::Start(Opts(nullptr), info, {});
    ASSERT_TRUE(abandoned.ok());
    abandoned_id = *(*abandoned)->run_id();
  }
  d = store_->GetRun(abandoned_id);
  EXPECT_EQ(d->summary.status, track::RunStatus::kFailed);
  EXPECT_EQ(d->summary.status_message, "the trainer ended without a result");
}

TEST_F(RunRecorderTest, UnknownParentIsAnError) {
  track::RunInfo info;
  info.parent_id = 999;
  auto rec = RunRecorder::Start(Opts(nullptr), info, {});
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RunRecorderTest, HeartbeatThreadRefreshes) {
  auto opts = Opts(nullptr);
  opts.heartbeat_s = 0.05;
  track::RunInfo info;
  auto rec = RunRecorder::Start(opts, info, {});
  ASSERT_TRUE(rec.ok());
  const track::RunId id = *(*rec)->run_id();
  const double t0 = store_->GetRun(id)->summary.heartbeat_time;
  // The heartbeat moves within a few of its periods; polled with a deadline (a loaded machine
  // may delay the thread, never by seconds).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  double t = t0;
  while (t <= t0 && std::chrono::steady_clock::now() < deadline) {
    usleep(10000);
    t = store_->GetRun(id)->summary.heartbeat_time;
  }
  EXPECT_GT(t, t0);
  (*rec)->Fail(CancelledError("test"));
}

TEST(Fingerprint, ChangesWithContentAndNamesMissingFiles) {
  const fs::path p = fs::temp_directory_path() / ("rectrain_fp_" + std::to_string(getpid()));
  std::ofstream(p) << std::string(300000, 'a');
  auto a = FingerprintFile(p.string());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size_bytes, 300000);
  EXPECT_EQ(a->fingerprint.size(), 3u + 16u);
  EXPECT_EQ(FingerprintFile(p.string())->fingerprint, a->fingerprint);  // stable
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(299999);
    f.put('b');  // last byte: in the tail block
  }
  EXPECT_NE(FingerprintFile(p.string())->fingerprint, a->fingerprint);
  fs::remove(p);
  auto missing = FingerprintFile(p.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(GitCommit, OfARepositoryAndOfAPlainDirectory) {
  const fs::path d = fs::temp_directory_path() / ("rectrain_git_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  EXPECT_EQ(GitCommitOf(d.string()), "");  // not a git tree (temp dirs are not in one)
  const std::string cmd = "cd " + d.string() +
                          " && git init -q && git -c user.email=t@t -c user.name=t commit -q "
                          "--allow-empty -m x >/dev/null 2>&1";
  if (std::system(cmd.c_str()) == 0) {
    const std::string c = GitCommitOf(d.string());
    EXPECT_EQ(c.size(), 40u) << c;
  }
  EXPECT_EQ(GitCommitOf((d / "missing").string()), "");
  fs::remove_all(d);
}

}  // namespace
}  // namespace rectrain::train
