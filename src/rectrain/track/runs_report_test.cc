// Tests for the `rectrain runs` output: exact tables (TZ=UTC, fixed clock), JSON, CSV, and the
// flag parser's error messages.
#include "rectrain/track/runs_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace rectrain::track {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RunsReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    path_ = fs::temp_directory_path() / ("rectrain_report_" + std::to_string(getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()
                                             ->current_test_info()
                                             ->name() +
                                         ".db");
    fs::remove(path_);
    TrackingStore::Options o;
    o.host = "box";
    o.now = [this] { return now_; };
    auto store = TrackingStore::Open(path_.string(), o);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
    // 2026-01-02 03:04:05 UTC
    now_ = 1767323045.0;
    Add("baseline", {"base"}, {{"lr", "0.01"}, {"model", "deepfm"}}, 0.80, true);
    now_ += 3725;  // +1h02m05s
    Add("bigger-lr", {}, {{"lr", "0.1"}, {"model", "deepfm"}}, 0.75, true);
    now_ += 60;
    Add("running", {"base", "x"}, {{"lr", "0.01"}, {"model", "dcn"}}, std::nullopt, false);
    now_ += 30;
  }
  void TearDown() override {
    store_.reset();
    fs::remove(path_);
    fs::remove(path_.string() + "-wal");
    fs::remove(path_.string() + "-shm");
  }
  void Add(std::string name, std::vector<std::string> tags, std::vector<KeyValue> params,
           std::optional<double> auc, bool finish) {
    RunInfo info;
    info.name = std::move(name);
    info.tags = std::move(tags);
    info.params = std::move(params);
    info.pid = 42;
    auto id = store_->StartRun(info);
    ASSERT_TRUE(id.ok());
    std::pair<std::string, double> m[] = {{"loss", 0.5}};
    ASSERT_TRUE(store_->LogMetrics(*id, 10, m).ok());
    if (auc) {
      std::pair<std::string, double> fin[] = {{"auc", *auc}, {"logloss", 0.44}};
      ASSERT_TRUE(store_->SetFinal(*id, fin).ok());
    }
    now_ += 125;
    if (finish) {
      ASSERT_TRUE(store_->FinishRun(*id, RunStatus::kFinished).ok());
    }
  }
  Result<std::string> Cmd(std::vector<std::string> args) {
    return RunRunsCommand(*store_, args);
  }

  fs::path path_;
  double now_ = 0;
  std::unique_ptr<TrackingStore> store_;
};

TEST_F(RunsReportTest, ListTable) {
  auto out = Cmd({"list", "--sort", "id", "--asc"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "ID  NAME       STATUS    STARTED              DURATION  TAGS    auc   logloss\n"
            "1   baseline   finished  2026-01-02 03:04:05  2m05s     base    0.8   0.44\n"
            "2   bigger-lr  finished  2026-01-02 04:08:15  2m05s     -       0.75  0.44\n"
            "3   running    running   2026-01-02 04:11:20  0s+       base,x  -     -\n"
            "3 of 3 runs\n");
  auto filtered = Cmd({"list", "--tag=base", "--metric", "auc>=0.8", "--json"});
  ASSERT_TRUE(filtered.ok());
  json j = json::parse(*filtered);
  EXPECT_EQ(j["total"], 1);
  EXPECT_EQ(j["runs"][0]["name"], "baseline");
  EXPECT_EQ(j["runs"][0]["final_metrics"]["auc"], 0.8);
  auto paged = Cmd({"list", "--limit", "1", "--param", "model=deepfm"});
  ASSERT_TRUE(paged.ok());
  EXPECT_TRUE(paged->ends_with("1 of 2 runs\n")) << *paged;
  auto none = Cmd({"list", "--status", "failed"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "0 of 0 runs\n");
}

TEST_F(RunsReportTest, ShowTable) {
  ASSERT_TRUE(store_->AddDataFile(1, {"/data/day0.tsv", 1234, "xxh:ab"}).ok());
  auto out = Cmd({"show", "1"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "run         1\n"
            "name        baseline\n"
            "status      finished\n"
            "started     2026-01-02 03:04:05\n"
            "ended       2026-01-02 03:06:10\n"
            "duration    2m05s\n"
            "host        box (pid 42)\n"
            "group       -\n"
            "parent      -\n"
            "git commit  -\n"
            "tags        base\n"
            "\n"
            "final metrics:\n"
            "  KEY      VALUE\n"
            "  auc      0.8\n"
            "  logloss  0.44\n"
            "\n"
            "metrics:\n"
            "  KEY   POINTS  STEPS   LAST\n"
            "  loss  1       10..10  0.5\n"
            "\n"
            "params:\n"
            "  KEY    VALUE\n"
            "  lr     0.01\n"
            "  model  deepfm\n"
            "\n"
            "data files:\n"
            "  PATH            BYTES  FINGERPRINT\n"
            "  /data/day0.tsv  1234   xxh:ab\n"
            "\n"
            "artifacts:\n"
            "  (none)\n");
  auto j = Cmd({"show", "2", "--json"});
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(json::parse(*j)["params"]["lr"], "0.1");
}

TEST_F(RunsReportTest, CompareTable) {
  auto out = Cmd({"compare", "1", "3"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "RUN      1                    3\n"
            "name     baseline             running\n"
            "status   finished             running\n"
            "started  2026-01-02 03:04:05  2026-01-02 04:11:20\n"
            "\n"
            "FINAL METRIC  1     3\n"
            "auc           0.8   -\n"
            "logloss       0.44  -\n"
            "\n"
            "PARAM (differing)  1       3\n"
            "model              deepfm  dcn\n");
}

TEST_F(RunsReportTest, DeleteAndExport) {
  auto csv = Cmd({"export", "--sort=id", "--asc"});
  ASSERT_TRUE(csv.ok());
  EXPECT_TRUE(csv->starts_with("id,name,status,start_time,end_time,host,group_id,tags,"
                               "param:lr,param:model,metric:auc,metric:logloss\r\n1,baseline,"))
      << *csv;
  auto series = Cmd({"export", "--metrics", "2"});
  ASSERT_TRUE(series.ok());
  EXPECT_TRUE(series->starts_with("key,step,value,wall_time\r\nloss,10,0.5,")) << *series;

  EXPECT_EQ(Cmd({"delete", "2", "99"}).status(), NotFoundError("run 99 not found"));
  EXPECT_TRUE(store_->GetRun(2).ok());  // nothing deleted when one id is wrong
  auto del = Cmd({"delete", "2", "3"});
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(*del, "deleted run 2\ndeleted run 3\n");
  EXPECT_EQ(*Cmd({"delete", "1", "--json"}), "{\n  \"deleted\": [\n    1\n  ]\n}\n");
  EXPECT_EQ(*Cmd({"list"}), "0 of 0 runs\n");
}

TEST_F(RunsReportTest, Errors) {
  EXPECT_EQ(Cmd({"frobnicate"}).status(),
            InvalidArgumentError("unknown verb 'runs frobnicate'; expected list, show, compare, "
                                 "delete or export"));
  EXPECT_EQ(Cmd({"list", "--colour", "red"}).status(),
            InvalidArgumentError("unknown flag '--colour' for 'runs list'"));
  EXPECT_EQ(Cmd({"list", "--status"}).status(), InvalidArgumentError("--status needs a value"));
  EXPECT_EQ(Cmd({"list", "--status", "done"}).status(),
            InvalidArgumentError("unknown run status 'done'; expected running, finished, failed "
                                 "or stopped"));
  EXPECT_EQ(Cmd({"list", "--limit", "ten"}).status(),
            InvalidArgumentError("--limit needs an integer, got 'ten'"));
  EXPECT_EQ(Cmd({"list", "--param", "lr"}).status(),
            InvalidArgumentError("--param needs KEY=VALUE, got 'lr'"));
  EXPECT_EQ(Cmd({"list", "7"}).status(),
            InvalidArgumentError("'runs list' takes no positional argument, got '7'"));
  EXPECT_EQ(Cmd({"show", "1", "2"}).status(),
            InvalidArgumentError("'runs show' needs exactly one run id, got 2"));
  EXPECT_EQ(Cmd({"show", "x"}).status(), InvalidArgumentError("run id needs an integer, got 'x'"));
  EXPECT_EQ(Cmd({"show", "9"}).status(), NotFoundError("run 9 not found"));
  EXPECT_EQ(Cmd({"compare", "1"}).status(),
            InvalidArgumentError("'runs compare' needs 2..10 run ids, got 1"));
  EXPECT_EQ(Cmd({"show", "1", "--sort", "id"}).status(),
            InvalidArgumentError("unknown flag '--sort' for 'runs show'"));
  EXPECT_EQ(Cmd({"export", "--json"}).status(),
            InvalidArgumentError("unknown flag '--json' for 'runs export'"));
  EXPECT_EQ(Cmd({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Cmd({"help"})->starts_with("usage: rectrain runs VERB"));
}

TEST(RunsReportFormatTest, ManyMetricColumnsAreCapped) {
  RunList list;
  list.total = 1;
  RunSummary r;
  r.id = 5;
  r.name = "n";
  r.status = RunStatus::kFailed;
  r.start_time = 0;
  r.end_time = 7200;
  for (int i = 0; i < kMaxMetricColumns + 2; ++i) {
    r.final_metrics.emplace_back("m" + std::to_string(i), i);
  }
  list.runs.push_back(r);
  setenv("TZ", "UTC", 1);
  tzset();
  auto out = FormatRunList(list, false);
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->find("2h00m"), std::string::npos) << *out;
  EXPECT_TRUE(out->ends_with("1 of 1 runs\n(metrics not shown: m8, m9; use --json)\n")) << *out;
}

}  // namespace
}  // namespace rectrain::track
