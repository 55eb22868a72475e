// Tests for TrackingStore: round trips, queries, error paths, multi-process writers and
// stale-run reconciliation.
#include "rectrain/track/tracking_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

namespace rectrain::track {
namespace {

namespace fs = std::filesystem;

class TrackingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rectrain_track_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "rectrain.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<TrackingStore> OpenOrDie(TrackingStore::Options opts = {}) {
    auto store = TrackingStore::Open(path_, std::move(opts));
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(store).value();
  }

  fs::path dir_;
  std::string path_;
};

RunId Start(TrackingStore& s, RunInfo info) {
  auto id = s.StartRun(info);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : 0;
}

TEST_F(TrackingStoreTest, RunRoundTrip) {
  auto store = OpenOrDie();
  RunInfo info;
  info.name = "deepfm";
  info.tags = {"baseline", "criteo"};
  info.group_id = "sweep-1";
  info.git_commit = "abc123";
  info.config_yaml = "model:\n  name: deepfm\n  mlp: [400, 400]\noptim:\n  lr: 0.001\n";
  RunId id = Start(*store, info);
  ASSERT_GT(id, 0);
  std::pair<std::string, double> m1[] = {{"loss", 0.7}, {"auc", 0.6}};
  std::pair<std::string, double> m2[] = {{"loss", 0.5}};
  ASSERT_TRUE(store->LogMetrics(id, 100, m1).ok());
  ASSERT_TRUE(store->LogMetrics(id, 200, m2).ok());
  std::pair<std::string, double> fin[] = {{"best_auc", 0.8}};
  ASSERT_TRUE(store->SetFinal(id, fin).ok());
  ASSERT_TRUE(store->AddArtifact(id, "checkpoint", "/ws/ckpt/1").ok());
  ASSERT_TRUE(store->AddDataFile(id, {"/data/a.tsv", 1234, "xxh3:beef"}).ok());
  ASSERT_TRUE(store->FinishRun(id, RunStatus::kFinished).ok());

  auto d = store->GetRun(id);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->summary.name, "deepfm");
  EXPECT_EQ(d->summary.status, RunStatus::kFinished);
  EXPECT_EQ(d->summary.pid, getpid());
  EXPECT_TRUE(d->summary.end_time.has_value());
  EXPECT_EQ(d->summary.tags, (std::vector<std::string>{"baseline", "criteo"}));
  EXPECT_EQ(d->summary.group_id, "sweep-1");
  EXPECT_EQ(d->summary.git_commit, "abc123");
  EXPECT_EQ(d->config_yaml, info.config_yaml);
  EXPECT_EQ(d->params, (std::vector<KeyValue>{{"model.mlp.0", "400"},
                                              {"model.mlp.1", "400"},
                                              {"model.name", "deepfm"},
                                              {"optim.lr", "0.001"}}));
  ASSERT_EQ(d->summary.final_metrics.size(), 1u);
  EXPECT_EQ(d->summary.final_metrics[0], (MetricValue{"best_auc", 0.8}));
  ASSERT_EQ(d->artifacts.size(), 1u);
  EXPECT_EQ(d->artifacts[0].kind, "checkpoint");
  EXPECT_EQ(d->artifacts[0].path, "/ws/ckpt/1");
  ASSERT_EQ(d->data_files.size(), 1u);
  EXPECT_EQ(d->data_files[0].size_bytes, 1234);
  EXPECT_EQ(d->data_files[0].fingerprint, "xxh3:beef");
  ASSERT_EQ(d->metric_keys.size(), 2u);
  EXPECT_EQ(d->metric_keys[0].key, "auc");
  EXPECT_EQ(d->metric_keys[1].key, "loss");
  EXPECT_EQ(d->metric_keys[1].count, 2);
  EXPECT_EQ(d->metric_keys[1].first_step, 100);
  EXPECT_EQ(d->metric_keys[1].last_step, 200);
  EXPECT_EQ(d->metric_keys[1].last_value, 0.5);

  auto series = store->GetMetrics(id, "loss", 0);
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->points.size(), 2u);
  EXPECT_EQ(series->points[0].step, 100);
  EXPECT_EQ(series->points[1].value, 0.5);
  EXPECT_FALSE(series->downsampled);
}

TEST_F(TrackingStoreTest, UnnamedRunGetsIdName) {
  auto store = OpenOrDie();
  RunId id = Start(*store, {});
  auto d = store->GetRun(id);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->summary.name, "run-" + std::to_string(id));
}

TEST_F(TrackingStoreTest, ErrorsNameTheRun) {
  auto store = OpenOrDie();
  std::pair<std::string, double> m[] = {{"loss", 1.0}};
  EXPECT_EQ(store->LogMetrics(42, 1, m), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->SetFinal(42, m), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->FinishRun(42, RunStatus::kFailed), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->DeleteRun(42), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->GetRun(42).status(), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->GetMetrics(42, "loss", 10).status(), NotFoundError("run 42 not found"));
  EXPECT_EQ(store->FinishRun(1, RunStatus::kRunning),
            InvalidArgumentError("FinishRun needs a terminal status (finished, failed, stopped)"));
  RunInfo child;
  child.parent_id = 7;
  EXPECT_EQ(store->StartRun(child).status(),
            InvalidArgumentError("starting run '': parent run 7 does not exist"));
  RunInfo bad;
  bad.config_yaml = "a: [1, 2";
  EXPECT_EQ(store->StartRun(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TrackingStoreTest, NonFiniteValuesRoundTrip) {
  auto store = OpenOrDie();
  RunId id = Start(*store, {});
  const double inf = std::numeric_limits<double>::infinity();
  std::pair<std::string, double> m[] = {{"loss", std::nan("")}, {"grad", inf}};
  ASSERT_TRUE(store->LogMetrics(id, 1, m).ok());
  auto loss = store->GetMetrics(id, "loss", 0);
  ASSERT_TRUE(loss.ok()) << loss.status();
  ASSERT_EQ(loss->points.size(), 1u);
  EXPECT_TRUE(std::isnan(loss->points[0].value));
  auto grad = store->GetMetrics(id, "grad", 0);
  ASSERT_TRUE(grad.ok());
  EXPECT_EQ(grad->points[0].value, inf);
}

TEST_F(TrackingStoreTest, ListRunsFiltersSortsAndPages) {
  double clock = 1000.0;
  TrackingStore::Options opts;
  opts.now = [&] { return clock; };
  auto store = OpenOrDie(opts);
  for (int i = 0; i < 10; ++i) {
    clock += 1.0;
    RunInfo info;
    info.name = i == 3 ? "lr_50%_odd" : "run" + std::to_string(i);
    info.params = {{"optim.lr", i % 2 == 0 ? "0.01" : "0.001"}, {"seed", std::to_string(i)}};
    if (i % 3 == 0) info.tags = {"keep"};
    info.group_id = i < 4 ? "g1" : "";
    RunId id = Start(*store, info);
    std::pair<std::string, double> fin[] = {{"auc", 0.5 + 0.01 * i}};
    if (i != 9) {
      ASSERT_TRUE(store->SetFinal(id, fin).ok());
    }
    if (i % 2 == 1) {
      ASSERT_TRUE(store->FinishRun(id, RunStatus::kFinished).ok());
    }
  }
  auto names = [](const RunList& l) {
    std::vector<std::string> out;
    for (auto& r : l.runs) out.push_back(r.name);
    return out;
  };
  RunFilter f;
  auto all = store->ListRuns(f);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->total, 10);
  EXPECT_EQ(all->runs.front().name, "run9");  // newest first by default

  f.status = RunStatus::kFinished;
  EXPECT_EQ(names(*store->ListRuns(f)),
            (std::vector<std::string>{"run9", "run7", "run5", "lr_50%_odd", "run1"}));
  f = {};
  f.tags = {"keep"};
  f.descending = false;
  EXPECT_EQ(names(*store->ListRuns(f)),
            (std::vector<std::string>{"run0", "lr_50%_odd", "run6", "run9"}));
  f = {};
  f.name_contains = "50%";  // '%' is literal, not a wildcard
  EXPECT_EQ(names(*store->ListRuns(f)), (std::vector<std::string>{"lr_50%_odd"}));
  f.name_contains = "LR_";  // case-insensitive, '_' literal
  EXPECT_EQ(names(*store->ListRuns(f)), (std::vector<std::string>{"lr_50%_odd"}));
  f = {};
  f.params = {{"optim.lr", "0.01"}};
  f.metrics = {*ParseMetricThreshold("auc>=0.54")};
  f.sort_by = "metric:auc";
  EXPECT_EQ(names(*store->ListRuns(f)), (std::vector<std::string>{"run8", "run6", "run4"}));
  f = {};
  f.group_id = "g1";
  EXPECT_EQ(store->ListRuns(f)->total, 4);
  f = {};
  f.sort_by = "metric:auc";  // run9 has no auc: sorts last in both directions
  f.limit = 3;
  EXPECT_EQ(names(*store->ListRuns(f)), (std::vector<std::string>{"run8", "run7", "run6"}));
  f.descending = false;
  f.offset = 8;
  auto page = store->ListRuns(f);
  EXPECT_EQ(page->total, 10);
  EXPECT_EQ(names(*page), (std::vector<std::string>{"run8", "run9"}));
  f = {};
  f.sort_by = "param:seed";
  f.descending = false;
  f.limit = 2;
  EXPECT_EQ(names(*store->ListRuns(f)), (std::vector<std::string>{"run0", "run1"}));

  f = {};
  f.sort_by = "bogus";
  EXPECT_EQ(store->ListRuns(f).status(),
            InvalidArgumentError("unknown sort key 'bogus'; expected id, name, status, "
                                 "start_time, end_time, metric:<key> or param:<key>"));
  f = {};
  f.limit = 0;
  EXPECT_EQ(store->ListRuns(f).status(), InvalidArgumentError("limit must be in 1..10000, got 0"));
  f = {};
  f.metrics = {{"auc", "; DROP TABLE runs; --", 1.0}};
  EXPECT_EQ(store->ListRuns(f).status(),
            InvalidArgumentError("bad metric threshold operator '; DROP TABLE runs; --'; "
                                 "expected one of < <= > >= = !="));
}

TEST_F(TrackingStoreTest, ParseMetricThreshold) {
  auto t = ParseMetricThreshold("val/auc!=0.5");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->key, "val/auc");
  EXPECT_EQ(t->op, "!=");
  EXPECT_EQ(t->value, 0.5);
  EXPECT_EQ(ParseMetricThreshold("auc>>1").status(),
            InvalidArgumentError("bad metric threshold 'auc>>1'; expected KEY OP VALUE with OP "
                                 "one of < <= > >= = !=, e.g. auc>=0.8"));
  EXPECT_FALSE(ParseMetricThreshold(">1").ok());
  EXPECT_FALSE(ParseMetricThreshold("auc>").ok());
  EXPECT_FALSE(ParseMetricThreshold("auc").ok());
}

TEST_F(TrackingStoreTest, CompareShowsOnlyDifferingParams) {
  auto store = OpenOrDie();
  RunInfo a, b;
  a.params = {{"lr", "0.1"}, {"seed", "1"}, {"only_a", "x"}};
  b.params = {{"lr", "0.2"}, {"seed", "1"}};
  RunId ia = Start(*store, a), ib = Start(*store, b);
  std::pair<std::string, double> fa[] = {{"auc", 0.7}};
  std::pair<std::string, double> fb[] = {{"auc", 0.8}, {"logloss", 0.4}};
  ASSERT_TRUE(store->SetFinal(ia, fa).ok());
  ASSERT_TRUE(store->SetFinal(ib, fb).ok());
  RunId ids[] = {ib, ia};
  auto cmp = store->CompareRuns(ids);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  ASSERT_EQ(cmp->runs.size(), 2u);
  EXPECT_EQ(cmp->runs[0].id, ib);
  ASSERT_EQ(cmp->differing_params.size(), 2u);
  EXPECT_EQ(cmp->differing_params[0].key, "lr");
  EXPECT_EQ(cmp->differing_params[0].values,
            (std::vector<std::optional<std::string>>{"0.2", "0.1"}));
  EXPECT_EQ(cmp->differing_params[1].key, "only_a");
  EXPECT_EQ(cmp->differing_params[1].values,
            (std::vector<std::optional<std::string>>{std::nullopt, "x"}));
  ASSERT_EQ(cmp->final_metrics.size(), 2u);
  EXPECT_EQ(cmp->final_metrics[1].key, "logloss");
  EXPECT_EQ(cmp->final_metrics[1].values,
            (std::vector<std::optional<double>>{0.4, std::nullopt}));
  RunId missing[] = {ia, 999};
  EXPECT_EQ(store->CompareRuns(missing).status(), NotFoundError("run 999 not found"));
  EXPECT_EQ(store->CompareRuns({}).status(),
            InvalidArgumentError("compare needs 1..100 run ids, got 0"));
}

TEST_F(TrackingStoreTest, DeleteCascadesAndGroupsSummarise) {
  auto store = OpenOrDie();
  RunInfo info;
  info.group_id = "study";
  info.tags = {"t"};
  info.params = {{"k", "v"}};
  RunId a = Start(*store, info);
  RunId b = Start(*store, info);
  RunInfo child;
  child.parent_id = a;
  RunId c = Start(*store, child);
  std::pair<std::string, double> m[] = {{"loss", 1.0}};
  ASSERT_TRUE(store->LogMetrics(a, 1, m).ok());
  ASSERT_TRUE(store->FinishRun(b, RunStatus::kFailed, "diverged").ok());
  auto groups = store->ListGroups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].group_id, "study");
  EXPECT_EQ((*groups)[0].runs, 2);
  EXPECT_EQ((*groups)[0].running, 1);
  EXPECT_EQ((*groups)[0].failed, 1);

  ASSERT_TRUE(store->DeleteRun(a).ok());
  EXPECT_EQ(store->GetRun(a).status(), NotFoundError("run 1 not found"));
  auto d = store->GetRun(c);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->summary.parent_id.has_value());  // ON DELETE SET NULL
  RunFilter f;
  f.tags = {"t"};
  EXPECT_EQ(store->ListRuns(f)->total, 1);
  auto csv = store->ExportMetricsCsv(b);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(*csv, "key,step,value,wall_time\r\n");
}

TEST_F(TrackingStoreTest, ExportRunsCsv) {
  TrackingStore::Options opts;
  opts.now = [] { return 1700000000.5; };
  opts.host = "hostA";
  auto store = OpenOrDie(opts);
  RunInfo a;
  a.name = "a,\"quoted\"";
  a.params = {{"lr", "0.1"}};
  a.tags = {"x", "y"};
  RunId ia = Start(*store, a);
  RunInfo b;
  b.name = "b";
  b.params = {{"depth", "3"}};
  RunId ib = Start(*store, b);
  std::pair<std::string, double> fin[] = {{"auc", 0.75}};
  ASSERT_TRUE(store->SetFinal(ib, fin).ok());
  ASSERT_TRUE(store->FinishRun(ib, RunStatus::kFinished).ok());
  RunFilter f;
  f.sort_by = "id";
  f.descending = false;
  auto csv = store->ExportRunsCsv(f);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "id,name,status,start_time,end_time,host,group_id,tags,param:depth,param:lr,"
            "metric:auc\r\n" +
                std::to_string(ia) +
                ",\"a,\"\"quoted\"\"\",running,1700000000.5,,hostA,,x;y,,0.1,\r\n" +
                std::to_string(ib) +
                ",b,finished,1700000000.5,1700000000.5,hostA,,,3,,0.75\r\n");
}

TEST_F(TrackingStoreTest, DownsampledSeriesFromStore) {
  auto store = OpenOrDie();
  RunId id = Start(*store, {});
  for (int64_t step = 0; step < 2000; ++step) {
    std::pair<std::string, double> m[] = {{"loss", step == 1234 ? 99.0 : 1.0 / (1 + step)}};
    ASSERT_TRUE(store->LogMetrics(id, step, m).ok());
  }
  auto s = store->GetMetrics(id, "loss", 100);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->total_points, 2000);
  EXPECT_TRUE(s->downsampled);
  EXPECT_LE(s->points.size(), 100u);
  EXPECT_EQ(s->points.front().step, 0);
  EXPECT_EQ(s->points.back().step, 1999);
  bool spike = false;
  for (auto& p : s->points) spike = spike || (p.step == 1234 && p.value == 99.0);
  EXPECT_TRUE(spike);
  auto empty = store->GetMetrics(id, "nope", 100);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->total_points, 0);
}

// Eight processes write runs and metrics at the same time; every row must arrive.
TEST_F(TrackingStoreTest, ConcurrentProcessesLoseNothing) {
  { auto store = OpenOrDie(); }  // create the schema once so children only write
  constexpr int kProcs = 8, kRunsPerProc = 4, kSteps = 100;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      TrackingStore::Options opts;
      opts.busy_timeout_ms = 5;  // force the retry path under contention
      auto store = TrackingStore::Open(path_, opts);
      if (!store.ok()) _exit(10);
      for (int r = 0; r < kRunsPerProc && rc == 0; ++r) {
        RunInfo info;
        info.name = "p" + std::to_string(p) + "r" + std::to_string(r);
        info.params = {{"proc", std::to_string(p)}};
        auto id = (*store)->StartRun(info);
        if (!id.ok()) _exit(11);
        for (int step = 0; step < kSteps; ++step) {
          std::pair<std::string, double> m[] = {{"loss", 1.0 * step}, {"auc", 0.5}, {"x", 1.0}};
          if (!(*store)->LogMetrics(*id, step, m).ok()) _exit(12);
        }
        std::pair<std::string, double> fin[] = {{"auc", 0.5 + p}};
        if (!(*store)->SetFinal(*id, fin).ok()) _exit(13);
        if (!(*store)->FinishRun(*id, RunStatus::kFinished).ok()) _exit(14);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(k, &status, 0), k);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto store = OpenOrDie();
  RunFilter f;
  f.limit = 1000;
  f.status = RunStatus::kFinished;
  auto list = store->ListRuns(f);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->total, kProcs * kRunsPerProc);
  for (const RunSummary& r : list->runs) {
    auto d = store->GetRun(r.id);
    ASSERT_TRUE(d.ok());
    ASSERT_EQ(d->metric_keys.size(), 3u) << r.name;
    for (auto& k : d->metric_keys) {
      EXPECT_EQ(k.count, kSteps) << r.name << " " << k.key;
      EXPECT_EQ(k.last_step, kSteps - 1);
    }
    ASSERT_EQ(d->summary.final_metrics.size(), 1u);
  }
}

// Threads sharing one store object (the trainer thread and the HTTP server) are serialised.
TEST_F(TrackingStoreTest, ThreadsShareOneStore) {
  auto store = OpenOrDie();
  RunId id = Start(*store, {});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::pair<std::string, double> m[] = {{"k" + std::to_string(t), 1.0}};
        EXPECT_TRUE(store->LogMetrics(id, i, m).ok());
        EXPECT_TRUE(store->ListRuns({}).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  auto d = store->GetRun(id);
  ASSERT_EQ(d->metric_keys.size(), 4u);
  for (auto& k : d->metric_keys) EXPECT_EQ(k.count, 50);
}

TEST_F(TrackingStoreTest, ReconcileMarksDeadLocalProcessFailed) {
  TrackingStore::Options opts;
  opts.host = "thishost";
  pid_t kid = fork();
  ASSERT_GE(kid, 0);
  if (kid == 0) {
    auto store = TrackingStore::Open(path_, opts);
    if (!store.ok()) _exit(10);
    RunInfo info;
    info.name = "crashes";
    if (!(*store)->StartRun(info).ok()) _exit(11);
    _exit(0);  // "crash": never calls FinishRun
  }
  int status = 0;
  ASSERT_EQ(waitpid(kid, &status, 0), kid);
  ASSERT_EQ(WEXITSTATUS(status), 0);

  opts.reconcile_on_open = false;
  auto store = OpenOrDie(opts);
  RunInfo mine;
  mine.name = "alive";
  RunId alive = Start(*store, mine);
  EXPECT_EQ(store->GetRun(1)->summary.status, RunStatus::kRunning);
  auto n = store->ReconcileStaleRuns();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  auto d = store->GetRun(1);
  EXPECT_EQ(d->summary.status, RunStatus::kFailed);
  EXPECT_EQ(d->summary.status_message,
            "process " + std::to_string(kid) + " on thishost exited without finishing the run");
  EXPECT_EQ(store->GetRun(alive)->summary.status, RunStatus::kRunning);
  EXPECT_EQ(*store->ReconcileStaleRuns(), 0);
}

TEST_F(TrackingStoreTest, ReconcileUsesHeartbeatForOtherHosts) {
  double clock = 5000.0;
  TrackingStore::Options opts;
  opts.host = "here";
  opts.stale_heartbeat_s = 600;
  opts.now = [&] { return clock; };
  auto store = OpenOrDie(opts);
  RunInfo remote;
  remote.host = "far";
  remote.pid = 1;
  RunId beating = Start(*store, remote);
  RunId silent = Start(*store, remote);
  clock += 500;
  ASSERT_TRUE(store->Heartbeat(beating).ok());
  clock += 200;  // silent: 700 s without heartbeat; beating: 200 s
  EXPECT_EQ(*store->ReconcileStaleRuns(), 1);
  EXPECT_EQ(store->GetRun(beating)->summary.status, RunStatus::kRunning);
  auto d = store->GetRun(silent);
  EXPECT_EQ(d->summary.status, RunStatus::kFailed);
  EXPECT_EQ(d->summary.status_message, "no heartbeat from far for 700 s");
  // A reconciled run can still be finished by its own process.
  ASSERT_TRUE(store->FinishRun(silent, RunStatus::kFinished).ok());
  EXPECT_EQ(store->GetRun(silent)->summary.status, RunStatus::kFinished);
}

TEST_F(TrackingStoreTest, TenThousandRunsListQuickly) {
  { auto created = OpenOrDie(); }
  {
    // Bulk-load through SQL in one transaction (20,000 StartRun/SetFinal commits would dominate
    // the test's time); the rows match what StartRun and SetFinal write.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql = "BEGIN;";
    for (int i = 0; i < 10000; ++i) {
      std::string id = std::to_string(i + 1);
      sql += "INSERT INTO runs(id, name, status, start_time, heartbeat_time, host, pid) VALUES (" +
             id + ", 'run" + std::to_string(i) + "', 'finished', " + std::to_string(1000 + i) +
             ", 0, 'h', 1);";
      sql += "INSERT INTO run_params VALUES (" + id + ", 'lr', '" + std::to_string(i % 10) +
             "'), (" + id + ", 'layers', '" + std::to_string(i % 7) + "');";
      sql += "INSERT INTO run_tags VALUES (" + id + ", '" + (i % 100 == 0 ? "best" : "other") +
             "');";
      sql += "INSERT INTO final_metrics VALUES (" + id + ", 'auc', " +
             std::to_string((i * 7919 % 10000) / 10000.0) + ");";
    }
    sql += "COMMIT;";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  auto store = OpenOrDie();
  auto t0 = std::chrono::steady_clock::now();
  RunFilter f;
  f.limit = 50;
  auto page = store->ListRuns(f);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 10000);
  f.sort_by = "metric:auc";
  f.params = {{"lr", "3"}};
  f.metrics = {{"auc", ">", 0.5}};
  auto best = store->ListRuns(f);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->total, 500);
  f = {};
  f.tags = {"best"};
  f.name_contains = "run1";
  auto tagged = store->ListRuns(f);
  ASSERT_TRUE(tagged.ok());
  EXPECT_EQ(tagged->total, 11);  // run100, run1000..run1900
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("three ListRuns over 10000 runs: %.1f ms\n", ms);
  EXPECT_LT(ms, 1000.0);  // measured ~ tens of ms; generous for a shared 2-core machine
}

}  // namespace
}  // namespace rectrain::track
