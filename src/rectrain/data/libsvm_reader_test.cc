// Tests of the libsvm / libffm input formats (docs/formats/libsvm.md): how pairs map to features,
// labels -1/+1, strict errors with file:line:column and the fix, max_bad_rows, chunking.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rectrain/data/errors.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::TempDir;

const std::string kHint = std::string(errors::kMaxBadRowsHint);

float L(double x) { return static_cast<float>(std::log1p(x)); }

DataConfig Libsvm(const std::string& path, std::vector<std::string> dense = {}) {
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kLibsvm;
  c.schema.dense = std::move(dense);
  c.hash_seed = 3;
  return c;
}

DataConfig Libffm(const std::string& path, std::vector<std::string> dense,
                  std::vector<std::string> sparse) {
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kLibffm;
  c.schema.dense = std::move(dense);
  c.schema.sparse = std::move(sparse);
  c.hash_seed = 3;
  return c;
}

TEST(LibsvmTest, GoldenLibsvm) {
  TempDir dir;
  // Labels 1, 0, -1 (-> 0), +1 (-> 1); index 2 is dense; every other index goes to the bag
  // "features". Tabs, repeated blanks, CRLF, a comment, leading zeros, unsorted indices, a row
  // with no categorical pair (the missing id) and a row without the dense index (fill 0).
  const std::string path = dir.Write("a.svm",
                                     "1 2:3 17:1 5:1\n"
                                     "0\t2:0.5  007:1 # a comment\r\n"
                                     "-1 2:7\n"
                                     "+1 9:1.0 4:1e0");
  ReadOptions opt;
  opt.batch_size = 3;
  auto rows = ReadAll(Libsvm(path, {"2"}), opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{1, 0, 0, 1}));
  ASSERT_EQ(rows->dense.size(), 4u);
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(3)}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{L(0.5)}));
  EXPECT_EQ(rows->dense[2], (std::vector<float>{L(7)}));
  EXPECT_EQ(rows->dense[3], (std::vector<float>{0.0f}));
  auto id = [](const char* index) { return FeatureId(0, index, 3); };
  using Ids = std::vector<std::vector<uint64_t>>;
  EXPECT_EQ(rows->lists[0], (Ids{{id("17"), id("5")}}));
  EXPECT_EQ(rows->lists[1], (Ids{{id("7")}}));
  EXPECT_EQ(rows->lists[2], (Ids{{id("")}}));  // no categorical pair: the missing id
  EXPECT_EQ(rows->lists[3], (Ids{{id("9"), id("4")}}));
  EXPECT_EQ(rows->stats.rows_read, 4);

  auto reader = OpenBatchReader(Libsvm(path, {"2"}), opt);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->dense_names(), (std::vector<std::string>{"2"}));
  EXPECT_EQ((*reader)->sparse_names(), (std::vector<std::string>{"features"}));
}

TEST(LibsvmTest, BagNameAndDenseRangeAndTransforms) {
  TempDir dir;
  const std::string path = dir.Write("a.svm", "1 1:4 2:9 3:16 40:1\n0 3:1 41:1 42:1 43:1\n");
  DataConfig c = Libsvm(path, {"1..3"});
  c.schema.sparse = {"ids"};
  c.transforms = {{"3", "fill(4) | bucketize(5, 10)"}, {"ids", "split(',') | max_len(2)"}};
  // split() makes no sense without text to split; a list column takes max_len only.
  EXPECT_FALSE(OpenBatchReader(c, {}).ok());
  c.transforms = {{"3", "fill(4) | bucketize(5, 10)"}, {"ids", "max_len(2)"}};
  auto rows = ReadAll(c, {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(4), L(9), 2.0f}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{0.0f, 0.0f, 0.0f}));
  using Ids = std::vector<std::vector<uint64_t>>;
  EXPECT_EQ(rows->lists[0], (Ids{{FeatureId(0, "40", 3)}}));
  EXPECT_EQ(rows->lists[1], (Ids{{FeatureId(0, "41", 3), FeatureId(0, "42", 3)}}));
}

TEST(LibsvmTest, GoldenLibffm) {
  TempDir dir;
  // Field 0 is dense, fields 1 and 2 categorical (several indices per field allowed; ids are
  // field-aware: the same index in two fields gives two ids).
  const std::string path = dir.Write("a.ffm",
                                     "1 0:0:5 1:10:1 2:10:1 1:11:1\n"
                                     "-1 2:3:1\n");
  auto rows = ReadAll(Libffm(path, {"0"}, {"1..2"}), {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(rows->dense[0], (std::vector<float>{L(5)}));
  EXPECT_EQ(rows->dense[1], (std::vector<float>{0.0f}));
  using Ids = std::vector<std::vector<uint64_t>>;
  EXPECT_EQ(rows->lists[0], (Ids{{FeatureId(0, "10", 3), FeatureId(0, "11", 3)}, {FeatureId(1, "10", 3)}}));
  EXPECT_EQ(rows->lists[1], (Ids{{FeatureId(0, "", 3)}, {FeatureId(1, "3", 3)}}));
  EXPECT_NE(FeatureId(0, "10", 3), FeatureId(1, "10", 3));
  auto reader = OpenBatchReader(Libffm(path, {"0"}, {"1..2"}), {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->sparse_names(), (std::vector<std::string>{"1", "2"}));
}

TEST(LibsvmTest, LabelTransformSeesTheNumber) {
  TempDir dir;
  const std::string path = dir.Write("a.svm", "-1 3:1\n+1 3:1\n4 3:1\n");
  DataConfig c = Libsvm(path);
  c.transforms = {{"label", "binarize(0)"}};
  auto rows = ReadAll(c, {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->labels, (std::vector<float>{0, 1, 1}));
}

std::string FirstError(const DataConfig& c, const ReadOptions& opt = {}) {
  auto rows = ReadAll(c, opt);
  if (rows.ok()) return "(no error)";
  return std::string(rows.status().message());
}

TEST(LibsvmErrorTest, EveryBadRowNamesFileLineColumnAndTheFix) {
  TempDir dir;
  struct Case {
    std::string line;
    std::string message;  // after "<path>:"
  };
  const std::vector<Case> cases = {
      {"1 abc", "1:3: expected a libsvm pair <index>:<value> (e.g. \"17:1\") with non-negative "
                "integer index and a finite value, got \"abc\""},
      {"1 3:", "1:3: expected a libsvm pair <index>:<value> (e.g. \"17:1\") with non-negative "
               "integer index and a finite value, got \"3:\""},
      {"1 -3:1", "1:3: expected a libsvm pair <index>:<value> (e.g. \"17:1\") with non-negative "
                 "integer index and a finite value, got \"-3:1\""},
      {"1 3:1 5:x", "1:7: expected a libsvm pair <index>:<value> (e.g. \"17:1\") with non-negative "
                    "integer index and a finite value, got \"5:x\""},
      {"1 3:1 5:0.5", "1:7: categorical pair \"5:0.5\" of feature features has a value other than "
                      "1, but rectrain ids carry no weight: only 1 is accepted; declare the index "
                      "in data.dense to use the value as a dense feature, or write the value as 1"},
      {"1 2:1 2:3", "1:7: dense index 2 appears twice in the line (\"2:3\"); a dense feature "
                    "takes one value per row"},
      {"1 2:abc", "1:5: field 2: expected a finite number, or an empty field for missing, got "
                  "\"abc\""},
      {"2 3:1", "1:1: field label: expected 0 or 1 (or -1 / +1), got \"2\""},
      {"", "1: field label: expected 0 or 1 (or -1 / +1), got \"\""},
  };
  for (const Case& k : cases) {
    const std::string path = dir.Write("bad.svm", k.line + "\n");
    EXPECT_EQ(FirstError(Libsvm(path, {"2"})), path + ":" + k.message + "; " + kHint) << k.line;
  }
  const std::vector<Case> ffm = {
      {"1 1:3:1 7:4:1", "1:9: field 7 in \"7:4:1\" is not declared; add \"7\" to data.sparse or "
                        "data.dense (a range such as \"0..38\" declares many fields)"},
      {"1 1:3", "1:3: expected a libffm pair <field>:<index>:<value> (e.g. \"3:17:1\") with "
                "non-negative integer field and index and a finite value, got \"1:3\""},
      {"1 1:3:2", "1:3: categorical pair \"1:3:2\" of feature 1 has a value other than 1, but "
                  "rectrain ids carry no weight: only 1 is accepted; declare the field in "
                  "data.dense to use the value as a dense feature, or write the value as 1"},
      {"1 0:1:2 0:2:2", "1:9: dense field 0 appears twice in the line (\"0:2:2\"); a dense "
                        "feature takes one value per row"},
  };
  for (const Case& k : ffm) {
    const std::string path = dir.Write("bad.ffm", k.line + "\n");
    EXPECT_EQ(FirstError(Libffm(path, {"0"}, {"1"})), path + ":" + k.message + "; " + kHint)
        << k.line;
  }
}

// Regression (text_reader_fuzzer, UBSan: signed overflow in the index scan): an index or field of
// 19+ digits is a bad pair, decided without overflowing; 18 digits is the largest index.
TEST(LibsvmErrorTest, LongIndexIsABadPair) {
  TempDir dir;
  const std::string path = dir.Write("a.svm", "1 999999999999999999:1\n1 99999999999999999999:1\n");
  EXPECT_EQ(FirstError(Libsvm(path)),
            path + ":2:3: expected a libsvm pair <index>:<value> (e.g. \"17:1\") with non-negative "
                   "integer index and a finite value, got \"99999999999999999999:1\"; " + kHint);
  const std::string ffm = dir.Write("a.ffm", "1 99999999999999999999999:1:1\n");
  EXPECT_NE(FirstError(Libffm(ffm, {}, {"1"})).find(ffm + ":1:3: expected a libffm pair"), std::string::npos);
}

TEST(LibsvmErrorTest, LineNumbersAndMaxBadRows) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += (i == 120 || i == 250) ? "1 4:0.25\n" : "0 1:1 " + std::to_string(i) + ":1\n";
  }
  const std::string path = dir.Write("a.svm", text);
  ReadOptions opt;
  opt.chunk_bytes = 97;
  opt.num_threads = 2;
  opt.batch_size = 7;
  DataConfig c = Libsvm(path);
  EXPECT_EQ(FirstError(c, opt).substr(0, path.size() + 8), path + ":121:3: ");
  c.max_bad_rows = 2;
  c.rejects_file = dir.Path("rejects.txt");
  auto rows = ReadAll(c, opt);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->stats.rows_read, 298);
  EXPECT_EQ(rows->stats.rows_rejected, 2);
  c.max_bad_rows = 1;
  const std::string msg = FirstError(c, opt);
  EXPECT_NE(msg.find("2 bad rows exceed data.max_bad_rows = 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path + ":251:3: categorical pair \"4:0.25\""), std::string::npos) << msg;
}

TEST(LibsvmTest, ChunkingAndThreadsDoNotChangeTheRows) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text += std::to_string(i % 3 == 0 ? -1 : 1) + " 1:" + std::to_string(i % 17) + " " +
            std::to_string(100 + i % 50) + ":1 " + std::to_string(7 + i % 5) + ":1\n";
  }
  const std::string path = dir.Write("a.svm", text);
  ReadOptions base;
  auto expected = ReadAll(Libsvm(path, {"1"}), base);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(expected->labels.size(), 2000u);
  for (int64_t chunk : {int64_t{13}, int64_t{4096}}) {
    ReadOptions opt;
    opt.chunk_bytes = chunk;
    opt.num_threads = 2;
    opt.batch_size = 33;
    auto rows = ReadAll(Libsvm(path, {"1"}), opt);
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_EQ(rows->labels, expected->labels);
    EXPECT_EQ(rows->dense, expected->dense);
    EXPECT_EQ(rows->lists, expected->lists);
  }
}

TEST(LibsvmErrorTest, SchemaErrors) {
  TempDir dir;
  const std::string path = dir.Write("a.svm", "1 3:1\n");
  auto open_error = [](const DataConfig& c) {
    auto r = OpenBatchReader(c, {});
    return r.ok() ? std::string("(no error)") : std::string(r.status().message());
  };
  DataConfig c = Libsvm(path, {"age"});
  EXPECT_EQ(open_error(c), "data.dense: \"age\" is not an index: for format libsvm features are "
                           "named by their index, a non-negative integer (\"3\") or an ascending "
                           "range (\"0..12\")");
  c = Libsvm(path, {"5..2"});
  EXPECT_NE(open_error(c).find("\"5..2\" is not an index"), std::string::npos);
  c = Libsvm(path, {"0..20000000"});
  EXPECT_NE(open_error(c).find("must be <= 10000000"), std::string::npos);
  c = Libsvm(path, {"2", "1..3"});
  EXPECT_EQ(open_error(c), "column \"2\" appears twice in the declared indices");
  c = Libsvm(path);
  c.schema.sparse = {"3"};
  EXPECT_NE(open_error(c).find("libsvm has no fields: use format libffm"), std::string::npos);
  c = Libsvm(path);
  c.schema.header = true;
  EXPECT_EQ(open_error(c), "data.schema.header applies to format csv or tsv; libsvm files have no header");
  c = Libffm(path, {}, {});
  EXPECT_EQ(open_error(c), "format libffm: declare the fields in data.sparse (categorical) and/or "
                           "data.dense, e.g. data.sparse: [\"0..38\"]");
  c = Libffm(path, {"1"}, {"1"});
  EXPECT_EQ(open_error(c), "column \"1\" appears twice in the declared fields");
}

}  // namespace
}  // namespace rectrain::data
