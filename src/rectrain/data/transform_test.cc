// Tests of per-feature transforms, row filters and downsampling: the spec parser, each numeric
// step against hand-computed values, and each transform applied by the reader to csv rows.
#include "rectrain/data/transform.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <limits>

#include <gtest/gtest.h>

#include "rectrain/data/errors.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::TempDir;

double Apply(const std::string& spec, double x, FeatureStats stats = {}) {
  Result<FeatureTransform> t = ParseTransform(spec);
  EXPECT_TRUE(t.ok()) << t.status();
  return ApplyNumericSteps(*t, 0, t->steps.size(), x, stats);
}

std::string ParseError(const std::string& spec) {
  Result<FeatureTransform> t = ParseTransform(spec);
  return t.ok() ? "ok" : std::string(t.status().message());
}

TEST(TransformParseTest, StepsAndArguments) {
  auto t = ParseTransform(" fill(30) | clip(0, 100) |log1p| bucketize(1, 2.5, 10) ");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->steps.size(), 4u);
  EXPECT_EQ(t->steps[0].op, StepOp::kFill);
  EXPECT_EQ(t->steps[0].args, (std::vector<double>{30}));
  EXPECT_EQ(t->steps[1].args, (std::vector<double>{0, 100}));
  EXPECT_EQ(t->steps[3].args, (std::vector<double>{1, 2.5, 10}));
  auto s = ParseTransform("split('|', 5) | hash(1000)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->steps[0].sep, "|");
  EXPECT_EQ(s->steps[0].args, (std::vector<double>{5}));
  auto c = ParseTransform("cross(user, \"movie\")");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->steps[0].names, (std::vector<std::string>{"user", "movie"}));
}

TEST(TransformParseTest, Errors) {
  EXPECT_EQ(ParseError("log1"), "unknown transform step \"log1\"; did you mean log1p?");
  EXPECT_EQ(ParseError("frobnicate"), "unknown transform step \"frobnicate\"");
  EXPECT_EQ(ParseError("clip(1)"), "step clip takes 2 argument(s), got 1");
  EXPECT_EQ(ParseError("clip(5, 1)"), "step clip: lower bound 5 exceeds upper bound 1");
  EXPECT_EQ(ParseError("fill(x)"), "step fill: \"x\" is not a finite number");
  EXPECT_EQ(ParseError("log1p | col(a)"), "step col(...) must come first");
  EXPECT_EQ(ParseError("bucketize(1, 1)"), "step bucketize: boundaries must be strictly ascending");
  EXPECT_EQ(ParseError("split('||')"), "step split: the separator must be one character, got \"||\"");
  EXPECT_EQ(ParseError("quantiles(1)"), "step quantiles: expected an integer >= 2, got 1");
  EXPECT_EQ(ParseError("hash(0)"), "step hash: expected an integer >= 1, got 0");
  EXPECT_EQ(ParseError("standardize | quantiles(4)"),
            "at most one stats step (standardize, quantiles) per feature");
  EXPECT_EQ(ParseError("log1p | | clip(0,1)"), "empty step in \"log1p | | clip(0,1)\"");
  EXPECT_EQ(ParseError("log1p(1"), "step \"log1p(1\": missing ')'");
}

TEST(TransformApplyTest, EachNumericStep) {
  EXPECT_EQ(Apply("clip(0, 10)", -3), 0);
  EXPECT_EQ(Apply("clip(0, 10)", 30), 10);
  EXPECT_EQ(Apply("log1p", 3), std::log1p(3.0));
  EXPECT_EQ(Apply("log1p", -5), 0);
  EXPECT_EQ(Apply("standardize", 7, FeatureStats{5, 2, {}}), 1);
  EXPECT_EQ(Apply("bucketize(0, 10, 100)", -1), 0);
  EXPECT_EQ(Apply("bucketize(0, 10, 100)", 0), 1);  // a value equal to a boundary goes above it
  EXPECT_EQ(Apply("bucketize(0, 10, 100)", 50), 2);
  EXPECT_EQ(Apply("bucketize(0, 10, 100)", 1e9), 3);
  EXPECT_EQ(Apply("quantiles(4)", 2.5, FeatureStats{0, 1, {1, 2, 3}}), 2);
  // 2021-03-04 05:06:07 UTC was a Thursday.
  EXPECT_EQ(Apply("hour_of_day", 1614834367), 5);
  EXPECT_EQ(Apply("day_of_week", 1614834367), 4);
  EXPECT_EQ(Apply("day_of_week", 0), 4);           // 1970-01-01: Thursday
  EXPECT_EQ(Apply("day_of_week", -86400), 3);      // before the epoch
  EXPECT_EQ(Apply("hour_of_day", -1), 23);
  EXPECT_EQ(Apply("binarize(8)", 8), 1);
  EXPECT_EQ(Apply("binarize(8)", 7.9), 0);
  EXPECT_EQ(Apply("clip(0, 100) | log1p", 1e6), std::log1p(100.0));
}

TEST(TransformApplyTest, Calibration) {
  // logit' = logit + log(rate) equals p / (p + (1 - p) / rate).
  for (double p : {0.01, 0.3, 0.5, 0.9}) {
    for (double rate : {0.05, 0.25, 1.0}) {
      const double logit = std::log(p / (1 - p));
      const double q = 1 / (1 + std::exp(-CalibrateLogit(logit, rate)));
      EXPECT_NEAR(q, CalibrateProbability(p, rate), 1e-12) << p << " " << rate;
    }
  }
  EXPECT_NEAR(CalibrateProbability(0.5, 0.25), 0.2, 1e-12);
}

TEST(RowFilterTest, Parse) {
  auto a = ParseRowFilter("label not null");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->column, "label");
  EXPECT_EQ(a->kind, RowFilter::Kind::kNotNull);
  auto b = ParseRowFilter("country in [US, 'C A', \"DE\"]");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->kind, RowFilter::Kind::kIn);
  EXPECT_EQ(b->values, (std::vector<std::string>{"C A", "DE", "US"}));
  auto c = ParseRowFilter("x not in [1]");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, RowFilter::Kind::kNotIn);
  EXPECT_EQ(ParseRowFilter("x is 3").status().message(),
            "row filter \"x is 3\": expected \"COL not null\", \"COL in [a, b]\" or \"COL not in [a, b]\"");
  EXPECT_EQ(ParseRowFilter("x in []").status().message(), "row filter \"x in []\": the list is empty");
}

// A csv config over `text` (header line first) with the given features and transforms.
DataConfig Csv(const TempDir& dir, const std::string& text, std::vector<std::string> dense,
               std::vector<std::string> sparse, std::map<std::string, std::string> transforms) {
  DataConfig c;
  c.files = {dir.Write("a.csv", text)};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.dense = std::move(dense);
  c.schema.sparse = std::move(sparse);
  c.transforms = std::move(transforms);
  c.hash_seed = 3;
  c.cache_dir = dir.Path("cache");
  return c;
}

TEST(ReaderTransformTest, DenseSteps) {
  TempDir dir;
  DataConfig c = Csv(dir, "label,a,b,c\n1,,5,-2\n0,3,200,7\n", {"a", "b", "c"}, {},
                     {{"a", "fill(30) | log1p"}, {"b", "clip(0, 100)"}, {"c", "bucketize(0, 5)"}});
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense[0], (std::vector<float>{static_cast<float>(std::log1p(30.0)), 5, 0}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{static_cast<float>(std::log1p(3.0)), 100, 2}));
}

TEST(ReaderTransformTest, StandardizeAndQuantilesUseTheStatsFiles) {
  TempDir dir;
  DataConfig c = Csv(dir, "label,x,y\n0,1,1\n1,2,2\n0,3,3\n1,4,4\n", {"x", "y"}, {},
                     {{"x", "standardize"}, {"y", "quantiles(2)"}});
  // mean 2.5, population std sqrt(1.25); median boundary: the value at rank 2 of 4 = 3.
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  const double sd = std::sqrt(1.25);
  EXPECT_FLOAT_EQ(rows->dense[0][0], static_cast<float>((1 - 2.5) / sd));
  EXPECT_FLOAT_EQ(rows->dense[3][0], static_cast<float>((4 - 2.5) / sd));
  EXPECT_EQ(rows->dense[0][1], 0);
  EXPECT_EQ(rows->dense[1][1], 0);
  EXPECT_EQ(rows->dense[2][1], 1);
  EXPECT_EQ(rows->dense[3][1], 1);
  // Validation rows use the statistics of the training rows (stats_files), cached on disk.
  DataConfig v = c;
  v.files = {dir.Write("v.csv", "label,x,y\n0,2.5,100\n")};
  v.stats_files = c.files;
  auto vrows = ReadAll(v, ReadOptions());
  ASSERT_TRUE(vrows.ok()) << vrows.status();
  EXPECT_EQ(vrows->dense[0], (std::vector<float>{0, 1}));
  // A changed training file changes the statistics (the cache is keyed by fingerprints).
  dir.Write("a.csv", "label,x,y\n0,10,1\n1,12,2\n");
  vrows = ReadAll(v, ReadOptions());
  ASSERT_TRUE(vrows.ok()) << vrows.status();
  EXPECT_FLOAT_EQ(vrows->dense[0][0], static_cast<float>((2.5 - 11) / 1));
}

TEST(ReaderTransformTest, SparseSteps) {
  TempDir dir;
  DataConfig c = Csv(dir,
                     "label,ts,user,movie,genres,price\n"
                     "1,1614834367,u1,m1,a|b|c,7\n"
                     "0,,u2,,,\n",
                     {"hour"}, {"user", "um", "genres", "dow", "price", "movie"},
                     {{"hour", "col(ts) | hour_of_day"},
                      {"um", "cross(user, movie)"},
                      {"genres", "split('|', 2)"},
                      {"dow", "col(ts) | day_of_week"},
                      {"price", "bucketize(5, 10)"},
                      {"movie", "hash(10)"}});
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  auto id = [&](int f, const std::string& t) { return FeatureId(f, t, 3); };
  EXPECT_EQ(rows->dense[0], (std::vector<float>{5}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{0}));  // missing: fill 0 -> hour 0
  const auto& r0 = rows->lists[0];
  EXPECT_EQ(r0[0], (std::vector<uint64_t>{id(0, "u1")}));
  EXPECT_EQ(r0[1], (std::vector<uint64_t>{id(1, std::string("u1") + '\x1f' + "m1")}));
  EXPECT_EQ(r0[2], (std::vector<uint64_t>{id(2, "a"), id(2, "b")}));  // max_len 2
  EXPECT_EQ(r0[3], (std::vector<uint64_t>{id(3, "4")}));
  EXPECT_EQ(r0[4], (std::vector<uint64_t>{id(4, "1")}));
  EXPECT_EQ(r0[5], (std::vector<uint64_t>{id(5, "m1") % 10}));
  const auto& r1 = rows->lists[1];
  EXPECT_EQ(r1[1], (std::vector<uint64_t>{id(1, "")}));  // a missing side: the missing id
  EXPECT_EQ(r1[2], (std::vector<uint64_t>{id(2, "")}));  // empty list: one missing id
  EXPECT_EQ(r1[3], (std::vector<uint64_t>{id(3, "")}));  // numeric without fill: missing id
  EXPECT_EQ(r1[5], (std::vector<uint64_t>{id(5, "") % 10}));
}

// A behaviour sequence shares its item feature's ids: hash_as(movie) hashes like movie, in order.
TEST(ReaderTransformTest, HashAsSharesTheItemIds) {
  TempDir dir;
  DataConfig c = Csv(dir,
                     "label,movie,history\n"
                     "1,m3,m1|m2\n"
                     "0,m1,\n",
                     {}, {"movie", "history"}, {{"history", "split('|', 20) | hash_as(movie)"}});
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  auto id = [&](int f, const std::string& t) { return FeatureId(f, t, 3); };
  EXPECT_EQ(rows->lists[0][1], (std::vector<uint64_t>{id(0, "m1"), id(0, "m2")}));  // movie's ids, in order
  EXPECT_EQ(rows->lists[1][0], (std::vector<uint64_t>{id(0, "m1")}));
  EXPECT_EQ(rows->lists[0][1][0], rows->lists[1][0][0]);  // m1 in the history = m1 as the target
  EXPECT_EQ(rows->lists[1][1], (std::vector<uint64_t>{id(0, "")}));  // an empty history: the missing id
  const std::string pre = "schema of " + dir.Path("a.csv") + ": ";
  auto err = [&](std::map<std::string, std::string> t) {
    DataConfig e = Csv(dir, "label,movie,history\n1,m1,m2\n", {}, {"movie", "history"}, std::move(t));
    return std::string(OpenBatchReader(e, ReadOptions()).status().message());
  };
  EXPECT_EQ(err({{"history", "hash_as(film)"}}),
            pre + "features.transforms.history: hash_as(film) names no other sparse feature; the sparse features are movie, history");
  EXPECT_EQ(err({{"history", "hash_as(history)"}}),
            pre + "features.transforms.history: hash_as(history) names the feature itself; the sparse features are movie, history");
  EXPECT_EQ(err({{"history", "hash_as(movie)"}, {"movie", "hash_as(history)"}}),
            pre + "features.transforms.movie: hash_as(history) names a feature that is itself hash_as(movie); hash_as does not chain: name the item feature itself");
}

TEST(ReaderTransformTest, MultiValuedSurvivesShuffle) {
  TempDir dir;
  std::string text = "label,g\n";
  for (int i = 0; i < 300; ++i) {
    text += std::to_string(i % 2) + ",";
    for (int k = 0; k <= i % 4; ++k) text += (k ? "|" : "") + std::to_string(i * 10 + k);
    text += "\n";
  }
  DataConfig c = Csv(dir, text, {}, {"g"}, {{"g", "split('|')"}});
  ReadOptions o;
  o.batch_size = 7;
  auto plain = ReadAll(c, o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  o.shuffle = true;
  o.shuffle_buffer_rows = 50;
  o.chunk_bytes = 256;
  o.num_threads = 2;
  auto shuffled = ReadAll(c, o);
  ASSERT_TRUE(shuffled.ok()) << shuffled.status();
  auto a = plain->lists;
  auto b = shuffled->lists;
  ASSERT_EQ(a.size(), 300u);
  EXPECT_NE(a, b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(plain->lists[3][0].size(), 4u);
}

TEST(ReaderTransformTest, LabelBinarizeFiltersAndCounts) {
  TempDir dir;
  DataConfig c = Csv(dir,
                     "rating,country,x\n"
                     "9,US,1\n"
                     ",US,2\n"
                     "3,FR,3\n"
                     "8,CA,4\n"
                     "7,US,5\n",
                     {"x"}, {}, {{"rating", "binarize(8)"}});
  c.schema.label = "rating";
  c.dense.log1p = false;
  c.filters = {"rating not null", "country in [US, CA]"};
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(rows->dense, (std::vector<std::vector<float>>{{1}, {4}, {5}}));
  EXPECT_EQ(rows->stats.rows_filtered, 2);
  EXPECT_EQ(rows->stats.rows_read, 3);
  c.filters = {"country not in [US]"};
  rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense, (std::vector<std::vector<float>>{{3}, {4}}));
  // Without the not-null filter an empty label is a bad row naming the transform.
  c.filters = {};
  auto bad = ReadAll(c, ReadOptions());
  EXPECT_EQ(bad.status().message(),
            c.files[0] + ":3:1: field rating: expected a number that \"binarize(8)\" maps to 0 or 1, "
            "got \"\"; " + std::string(errors::kMaxBadRowsHint));
}

TEST(ReaderTransformTest, NegativeDownsampling) {
  TempDir dir;
  std::string text = "label,x\n";
  for (int i = 0; i < 4000; ++i) text += std::string(i % 4 == 0 ? "1" : "0") + "," + std::to_string(i) + "\n";
  DataConfig c = Csv(dir, text, {"x"}, {}, {});
  c.negative_downsampling = 0.25;
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  int64_t pos = 0;
  for (float l : rows->labels) pos += l == 1.0f;
  EXPECT_EQ(pos, 1000);  // every positive kept
  const int64_t neg = static_cast<int64_t>(rows->labels.size()) - pos;
  EXPECT_NEAR(neg, 750, 80);  // 3000 negatives at 0.25
  EXPECT_EQ(rows->stats.rows_downsampled, 3000 - neg);
  // The same rows every time, whatever the chunking.
  ReadOptions o;
  o.chunk_bytes = 512;
  o.num_threads = 2;
  auto again = ReadAll(c, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dense, rows->dense);
  c.negative_downsampling = 0;
  EXPECT_EQ(ReadAll(c, ReadOptions()).status().message(),
            "data.negative_downsampling must be in (0, 1], got 0");
}

TEST(ReaderTransformTest, ConfigErrors) {
  TempDir dir;
  const std::string text = "label,a,b\n1,2,x\n";
  auto err = [&](std::vector<std::string> dense, std::vector<std::string> sparse,
                 std::map<std::string, std::string> t) {
    DataConfig c = Csv(dir, text, std::move(dense), std::move(sparse), std::move(t));
    return std::string(OpenBatchReader(c, ReadOptions()).status().message());
  };
  const std::string pre = "schema of " + dir.Path("a.csv") + ": ";
  EXPECT_EQ(err({"a"}, {}, {{"a", "split('|')"}}),
            pre + "features.transforms.a: step split applies to sparse features");
  EXPECT_EQ(err({"a"}, {}, {{"zz", "log1p"}}),
            pre + "features.transforms names zz, which is neither a feature (data.dense, data.sparse) nor the label");
  EXPECT_EQ(err({}, {"b"}, {{"b", "max_len(3)"}}),
            pre + "features.transforms.b: max_len needs a list: split(sep) or a Parquet list column");
  EXPECT_EQ(err({"c"}, {}, {{"c", "col(nope)"}}),
            pre + "features.transforms.c: col names column \"nope\", which is not in the header (columns: label, a, b)");
  EXPECT_EQ(err({}, {"x"}, {{"x", "cross(a, b) | log1p"}}),
            pre + "features.transforms.x: step log1p cannot follow cross(...) (only hash(n))");
  EXPECT_EQ(err({"a"}, {}, {{"a", "lg1p"}}),
            pre + "features.transforms.a: unknown transform step \"lg1p\"; did you mean log1p?");
  EXPECT_EQ(err({}, {"b"}, {{"label", "split(',')"}}),
            pre + "features.transforms.label: step split cannot transform the label (use numeric steps such as binarize(t))");
  // A sparse feature with numeric steps must see numbers.
  DataConfig c = Csv(dir, text, {}, {"b"}, {{"b", "bucketize(1)"}});
  EXPECT_EQ(ReadAll(c, ReadOptions()).status().message(),
            dir.Path("a.csv") + ":2:5: field b: expected " + std::string(errors::kExpectedNumber) +
                ", got \"x\"; " + std::string(errors::kMaxBadRowsHint));
}

}  // namespace
}  // namespace rectrain::data
