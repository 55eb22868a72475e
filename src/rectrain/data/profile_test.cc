#include "rectrain/data/profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace rectrain::data {
namespace {

namespace fs = std::filesystem;

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("profile_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

SchemaConfig Csv(std::string label = "label") {
  SchemaConfig s;
  s.format = DataFormat::kCsv;
  s.delimiter = ',';
  s.header = true;
  s.label = std::move(label);
  return s;
}

// `rectrain data stats` over many files: 1,500 small files profiled on 2 threads give the same
// profile as one thread, per-file rows in (sorted) path order, and progress ending at (n, n).
TEST_F(ProfileTest, ThousandsOfFilesInParallel) {
  std::vector<std::string> files;
  const int n = 1500;
  for (int i = 0; i < n; ++i) {
    std::string text = "label,x,c\n";
    for (int r = 0; r <= i % 3; ++r) {
      text += std::to_string((i + r) % 2) + "," + std::to_string(i) + ",k" + std::to_string(i % 97) + "\n";
    }
    char name[32];
    std::snprintf(name, sizeof name, "f%04d.csv", i);  // inputs are sorted by path
    files.push_back(Write(name, text));
  }
  SchemaConfig s = Csv();
  std::vector<std::pair<int64_t, int64_t>> calls;
  auto two = ProfileFiles(files, s, {}, 2, [&](int64_t done, int64_t total) { calls.push_back({done, total}); });
  ASSERT_TRUE(two.ok()) << two.status();
  auto one = ProfileFiles(files, s, {}, 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(two->rows, n / 3 * (1 + 2 + 3));
  EXPECT_EQ(two->rows, one->rows);
  ASSERT_EQ(two->files.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(two->files[i].path, files[i]);
    EXPECT_EQ(two->files[i].rows, 1 + i % 3) << files[i];
  }
  ASSERT_EQ(two->columns.size(), one->columns.size());
  for (size_t c = 0; c < two->columns.size(); ++c) {
    EXPECT_EQ(two->columns[c].non_null, one->columns[c].non_null);
    EXPECT_EQ(two->columns[c].distinct, one->columns[c].distinct);
    EXPECT_DOUBLE_EQ(two->columns[c].Mean(), one->columns[c].Mean());
  }
  EXPECT_NEAR(static_cast<double>(two->columns[2].distinct), 97, 3);  // HyperLogLog
  // Progress calls come from the calling thread as files complete (several completions may be
  // reported by one call): non-decreasing, ending at (n, n).
  ASSERT_FALSE(calls.empty());
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  EXPECT_EQ(calls.back(), (std::pair<int64_t, int64_t>{n, n}));
}

TEST_F(ProfileTest, LibsvmAndLibffmColumns) {
  // libsvm: label (-1 -> 0), declared dense index 1, the bag of every other index; a bad pair
  // and a weighted categorical pair are bad rows.
  const std::string a = Write("a.svm", "1 1:3 17:1 5:1\n-1 1:0.5 7:1\n+1 2:1\n1 x:1\n0 3:0.5\n");
  SchemaConfig s;
  s.format = DataFormat::kLibsvm;
  s.dense = {"1"};
  auto p = ProfileFiles({a}, s, {}, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->rows, 3);
  EXPECT_EQ(p->files[0].bad_rows, 2);
  ASSERT_EQ(p->columns.size(), 3u);
  EXPECT_EQ(p->columns[0].name, "label");
  EXPECT_EQ(p->columns[1].name, "1");
  EXPECT_EQ(p->columns[1].non_null, 2);
  EXPECT_DOUBLE_EQ(p->columns[1].Mean(), 1.75);
  EXPECT_EQ(p->columns[2].name, "features");
  EXPECT_EQ(p->columns[2].non_null, 3);
  EXPECT_EQ(p->columns[2].distinct, 3);  // 17, 5, 7, 2: capped at non_null
  EXPECT_EQ(p->labeled_rows, 3);
  EXPECT_EQ(p->positive_rows, 2);
  // With a label transform the raw number is transformed (-1 stays -1: binarize(0) gives 0).
  p = ProfileFiles({a}, s, {{"label", "binarize(1)"}}, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->positive_rows, 2);

  const std::string b = Write("b.ffm", "1 0:0:5 1:10:1 2:10:1\n0 1:3:1\n1 9:1:1\n");
  SchemaConfig f;
  f.format = DataFormat::kLibffm;
  f.dense = {"0"};
  f.sparse = {"1..2"};
  p = ProfileFiles({b}, f, {}, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->rows, 2);
  EXPECT_EQ(p->files[0].bad_rows, 1);  // field 9 is not declared
  ASSERT_EQ(p->columns.size(), 4u);
  EXPECT_EQ(p->columns[3].name, "2");
  EXPECT_DOUBLE_EQ(p->columns[3].NullRatio(), 0.5);
  f.sparse.clear();
  f.dense.clear();
  p = ProfileFiles({b}, f, {}, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("format libffm: declare the fields"), std::string::npos);
}

TEST_F(ProfileTest, CsvColumnsFilesAndLabel) {
  const std::string a = Write("a.csv", "label,x,c\n1,2.5,u\n0,,v\n0,-1,u\n");
  const std::string b = Write("b.csv", "label,x,c\n1,4,\"w,z\"\nbad row\n");
  auto p = ProfileFiles({a, b}, Csv(), {}, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->rows, 4);
  ASSERT_EQ(p->files.size(), 2u);
  EXPECT_EQ(p->files[0].rows, 3);
  EXPECT_EQ(p->files[1].rows, 1);
  EXPECT_EQ(p->files[1].bad_rows, 1);
  ASSERT_EQ(p->columns.size(), 3u);
  const ColumnProfile& x = p->columns[1];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.rows, 4);
  EXPECT_EQ(x.non_null, 3);
  EXPECT_DOUBLE_EQ(x.NullRatio(), 0.25);
  EXPECT_DOUBLE_EQ(x.min, -1);
  EXPECT_DOUBLE_EQ(x.max, 4);
  EXPECT_DOUBLE_EQ(x.Mean(), 5.5 / 3);
  EXPECT_EQ(x.distinct, 3);
  const ColumnProfile& c = p->columns[2];
  EXPECT_EQ(c.numeric, 0);
  EXPECT_EQ(c.distinct, 3);  // u, v, "w,z"
  EXPECT_EQ(p->label, "label");
  EXPECT_EQ(p->labeled_rows, 4);
  EXPECT_EQ(p->positive_rows, 2);
  EXPECT_DOUBLE_EQ(p->LabelRate(), 0.5);
  // The same with one thread.
  auto p1 = ProfileFiles({a, b}, Csv(), {}, 1);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(FormatProfileJson(*p1), FormatProfileJson(*p));
}

TEST_F(ProfileTest, LabelTransformAndProgress) {
  const std::string a = Write("r.tsv", "rating\tu\n9\ta\n7\tb\n8\tc\n3\td\n");
  SchemaConfig s = Csv("rating");
  s.format = DataFormat::kTsv;
  std::vector<std::pair<int64_t, int64_t>> calls;
  auto p = ProfileFiles({a}, s, {{"rating", "binarize(8)"}}, 1,
                        [&](int64_t d, int64_t t) { calls.emplace_back(d, t); });
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->LabelRate(), 0.5);
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{1, 1}}));
}

TEST_F(ProfileTest, DistinctIsApproximate) {
  std::string text = "label,id\n";
  for (int i = 0; i < 50000; ++i) text += "0," + std::to_string(i % 20000) + "\n";
  auto p = ProfileFiles({Write("d.csv", text)}, Csv(), {}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->columns[1].distinct, 20000, 20000 * 0.05);  // 2^12 registers: ~1.6% error
  EXPECT_DOUBLE_EQ(p->LabelRate(), 0.0);
}

TEST_F(ProfileTest, CriteoAndErrors) {
  SchemaConfig s;
  s.format = DataFormat::kAuto;
  s.criteo_dense = 1;
  s.criteo_sparse = 1;
  auto p = ProfileFiles({Write("c.tsv", "1\t5\tab\n0\t\t\n")}, s, {}, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->columns.size(), 3u);
  EXPECT_EQ(p->columns[1].name, "I1");
  EXPECT_EQ(p->columns[2].name, "C1");
  EXPECT_DOUBLE_EQ(p->columns[2].NullRatio(), 0.5);

  auto missing = ProfileFiles({(dir_ / "nope.tsv").string()}, s, {}, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "no such file: " + (dir_ / "nope.tsv").string());
  auto differ = ProfileFiles({Write("h1.csv", "label,a\n1,2\n"), Write("h2.csv", "label,b\n1,2\n")},
                             Csv(), {}, 1);
  ASSERT_FALSE(differ.ok());
  EXPECT_EQ(differ.status().message(),
            (dir_ / "h2.csv").string() + ": its columns differ from those of " + (dir_ / "h1.csv").string());
}

TEST_F(ProfileTest, ParquetFixture) {
  const std::string dir = RECTRAIN_PARQUET_FIXTURES;
  SchemaConfig s;
  s.format = DataFormat::kAuto;
  auto p = ProfileFiles({dir + "/duckdb_snappy_v1.parquet"}, s, {}, 1);
  if (!p.ok() && p.status().code() == StatusCode::kNotFound) GTEST_SKIP() << p.status();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->rows, 0);
  EXPECT_FALSE(p->columns.empty());
  for (const ColumnProfile& c : p->columns) EXPECT_EQ(c.rows, p->rows) << c.name;
}

// Found by fuzz/text_reader_fuzzer: a header with invalid UTF-8 made the JSON dump throw.
TEST_F(ProfileTest, JsonWithInvalidUtf8ColumnName) {
  auto p = ProfileFiles({Write("u.csv", "label,\xf5\xcf\n1,2\n")}, Csv(), {}, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string json = FormatProfileJson(*p);
  EXPECT_NE(json.find("\"name\": \"\xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << json;
}

TEST(CheckProfile, ReportsEveryViolation) {
  DataProfile p;
  p.rows = 800;
  p.label = "label";
  p.labeled_rows = 800;
  p.positive_rows = 760;
  p.files = {{"a.tsv", 800, 3}};
  ColumnProfile l{.name = "label", .rows = 800, .non_null = 800};
  ColumnProfile i1{.name = "I1", .rows = 800, .non_null = 304};
  ColumnProfile c1{.name = "C1", .rows = 800, .non_null = 400};
  p.columns = {l, i1, c1};
  DataChecks checks;
  checks.min_rows = 1000;
  checks.max_bad_rows = 0;
  checks.has_label_rate = true;
  checks.label_rate_min = 0.01;
  checks.label_rate_max = 0.9;
  checks.max_null_ratio = {{"I1", 0.5}, {"*", 0.4}, {"zz", 0.1}};
  EXPECT_EQ(CheckProfile(p, checks),
            (std::vector<std::string>{
                "rows: 800 is below checks.min_rows = 1000",
                "a.tsv: 3 rows with a wrong field count exceed checks.max_bad_rows = 0",
                "label rate: 0.9500 is outside checks.label_rate [0.01, 0.9]",
                "I1: null ratio 0.6200 exceeds checks.max_null_ratio.I1 = 0.5",
                "C1: null ratio 0.5000 exceeds checks.max_null_ratio.* = 0.4",
                "checks.max_null_ratio.zz: no such column (columns: label, I1, C1)"}));
  checks = DataChecks{};
  checks.min_rows = 800;
  checks.max_null_ratio = {{"I1", 0.62}};
  EXPECT_TRUE(CheckProfile(p, checks).empty());
}

}  // namespace
}  // namespace rectrain::data
