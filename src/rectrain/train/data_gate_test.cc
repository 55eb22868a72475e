// Tests of the data check before training (data_gate.h): every violation of both splits in one
// report, the profile file, max_rows, and a clean config passing.
#include "rectrain/train/data_gate.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "rectrain/data/cache.h"

namespace rectrain::train {
namespace {

namespace fs = std::filesystem;

class DataGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("data_gate_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // Criteo rows with 1 dense and 1 categorical column; `positives` of `rows` labeled 1.
  std::string Rows(int rows, int positives) {
    std::string s;
    for (int i = 0; i < rows; ++i) s += (i < positives ? "1\t" : "0\t") + std::to_string(i % 7) + "\tc" + std::to_string(i % 3) + "\n";
    return s;
  }
  config::TrainConfig Config(const std::string& train, const std::string& valid) {
    config::TrainConfig c;
    c.train_files = {train};
    if (!valid.empty()) c.valid_files = {valid};
    c.data.schema.format = data::DataFormat::kCriteo;
    c.data.schema.criteo_dense = 1;
    c.data.schema.criteo_sparse = 1;
    return c;
  }
  std::string Read(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

TEST_F(DataGateTest, CleanDataPassesAndWritesTheProfile) {
  config::TrainConfig c = Config(Write("t.tsv", Rows(100, 30)), Write("v.tsv", Rows(40, 10)));
  const std::string run = (dir_ / "run").string();
  auto gate = RunDataGate(c, run, 2);
  ASSERT_TRUE(gate.ok()) << gate.status();
  EXPECT_TRUE(gate->violations.empty());
  EXPECT_TRUE(DataGateError(*gate).ok());
  EXPECT_EQ(gate->train.rows, 100);
  EXPECT_EQ(gate->valid.rows, 40);
  EXPECT_EQ(gate->profile_path, run + "/data_profile.json");
  const std::string json = Read(gate->profile_path);
  EXPECT_NE(json.find("\"max_rows\": 200000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"violations\": []"), std::string::npos) << json;
  EXPECT_NE(json.find("\"train\": {\n    \"rows\": 100,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"valid\": {\n    \"rows\": 40,"), std::string::npos) << json;
  EXPECT_EQ(DataGateSummary(*gate).rfind("data check passed: data.train 100 rows (label rate 0.3000), "
                                         "data.valid 40 rows (label rate 0.2500) in ", 0), 0u)
      << DataGateSummary(*gate);
}

TEST_F(DataGateTest, EveryViolationOfBothSplitsInOneReport) {
  // Train: constant label (all 0). Valid: constant label (all 1) and a label rate outside the
  // bounds, and too few rows.
  config::TrainConfig c = Config(Write("t.tsv", Rows(50, 0)), Write("v.tsv", Rows(5, 5)));
  c.checks.min_rows = 10;
  c.checks.has_label_rate = true;
  c.checks.label_rate_min = 0.0;
  c.checks.label_rate_max = 0.5;
  const std::string run = (dir_ / "run").string();
  auto gate = RunDataGate(c, run, 1);
  ASSERT_TRUE(gate.ok()) << gate.status();
  const Status s = DataGateError(*gate);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(s.message()),
            "data check before training failed: 4 violations (profile: " + run +
                "/data_profile.json; thresholds: checks.* in docs/config.md; skip with "
                "--skip-data-check or checks.before_train: false)\n"
                "  data.train: label: constant: all 50 labeled rows are 0 (label label); a model "
                "cannot learn from one class (check the label column and its transform, or set "
                "checks.allow_constant_label: true)\n"
                "  data.valid: rows: 5 is below checks.min_rows = 10\n"
                "  data.valid: label: constant: all 5 labeled rows are 1 (label label); a model "
                "cannot learn from one class (check the label column and its transform, or set "
                "checks.allow_constant_label: true)\n"
                "  data.valid: label rate: 1.0000 is outside checks.label_rate [0, 0.5]");
  const std::string json = Read(gate->profile_path);
  EXPECT_NE(json.find("\"violations\": [\n    \"data.train: label: constant"), std::string::npos) << json;
  c.checks.allow_constant_label = true;
  gate = RunDataGate(c, run, 1);
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(gate->violations.size(), 2u);
}

TEST_F(DataGateTest, MaxRowsBoundsTheWorkAndSkipsMinRows) {
  // Two files share max_rows = 30: 15 rows each, from the start (the positives are at the top
  // of a.tsv, so the profiled label rate is 1 there; b.tsv's first 15 rows are all 0).
  config::TrainConfig c = Config(Write("a.tsv", Rows(100, 20)), "");
  c.train_files.push_back(Write("b.tsv", Rows(100, 0)));
  c.checks.max_rows = 30;
  c.checks.min_rows = 20;
  auto gate = RunDataGate(c, (dir_ / "run").string(), 2);
  ASSERT_TRUE(gate.ok()) << gate.status();
  EXPECT_EQ(gate->train.rows, 30);
  EXPECT_TRUE(gate->train.truncated);
  EXPECT_DOUBLE_EQ(gate->train.LabelRate(), 0.5);
  EXPECT_TRUE(gate->violations.empty());
  EXPECT_FALSE(gate->has_valid);
  EXPECT_NE(DataGateSummary(*gate).find("data.train 30 rows profiled"), std::string::npos);
  c.checks.max_rows = 0;  // every row
  gate = RunDataGate(c, (dir_ / "run").string(), 2);
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(gate->train.rows, 200);
  EXPECT_FALSE(gate->train.truncated);
}

TEST_F(DataGateTest, SampleCacheInputIsProfiledFromItsRows) {
  // *.rtc files are binary cache input: they are profiled from their decoded rows (not as text,
  // which reported no rows and failed min_rows), so the checks apply to them too.
  config::TrainConfig text = Config(Write("t.tsv", Rows(300, 75)), "");
  data::DataConfig d = text.data;
  d.files = text.train_files;
  d.cache = data::CacheMode::kOff;
  const std::string rtc = (dir_ / "t.rtc").string();
  ASSERT_TRUE(data::BuildCache(d, data::ReadOptions{}, data::CacheWriteOptions{}, rtc).ok());
  config::TrainConfig c = Config(rtc, Write("v.tsv", Rows(20, 5)));
  auto gate = RunDataGate(c, (dir_ / "run").string(), 1);
  ASSERT_TRUE(gate.ok()) << gate.status();
  EXPECT_TRUE(gate->violations.empty());
  EXPECT_EQ(gate->train.rows, 300);
  EXPECT_EQ(gate->train.positive_rows, 75);
  EXPECT_EQ(gate->valid.rows, 20);
  EXPECT_NE(Read(gate->profile_path).find("\"rows\": 300"), std::string::npos) << Read(gate->profile_path);
  EXPECT_EQ(DataGateSummary(*gate).rfind("data check passed: data.train 300 rows (label rate 0.2500), "
                                         "data.valid 20 rows (label rate 0.2500)", 0), 0u)
      << DataGateSummary(*gate);
  // A violation in cache input is reported like one in text.
  c.checks.min_rows = 301;
  gate = RunDataGate(c, (dir_ / "run").string(), 1);
  ASSERT_TRUE(gate.ok()) << gate.status();
  ASSERT_EQ(gate->violations.size(), 2u);
  EXPECT_EQ(gate->violations[0], "data.train: rows: 300 is below checks.min_rows = 301");
  // Damaged cache input is an error naming the split and the file.
  c.train_files = {Write("bad.rtc", "RTC\x01binary")};
  gate = RunDataGate(c, (dir_ / "run").string(), 1);
  ASSERT_FALSE(gate.ok());
  EXPECT_NE(gate.status().ToString().find("data.train"), std::string::npos) << gate.status();
  EXPECT_NE(gate.status().ToString().find("bad.rtc"), std::string::npos) << gate.status();
}

TEST_F(DataGateTest, ProfileErrorsNameTheSplit) {
  config::TrainConfig c = Config(Write("t.tsv", Rows(10, 3)), (dir_ / "missing.tsv").string());
  auto gate = RunDataGate(c, (dir_ / "run").string(), 1);
  ASSERT_FALSE(gate.ok());
  EXPECT_NE(gate.status().message().find("data check before training: data.valid"), std::string::npos)
      << gate.status();
  EXPECT_NE(gate.status().message().find("missing.tsv"), std::string::npos) << gate.status();
}

}  // namespace
}  // namespace rectrain::train
