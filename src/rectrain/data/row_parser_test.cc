// RowParser: single rows parse to exactly the reader's Batch rows, with the statistics frozen
// from the reader (standardize, quantiles); row-building and error paths.
#include "rectrain/data/row_parser.h"

#include <gtest/gtest.h>

#include "rectrain/data/internal/test_util.h"

namespace rectrain::data {
namespace {

using test_util::TempDir;

// A csv with a header, dense features with stats steps, a hashed and a multi-valued sparse
// feature, a filter and downsampling (both of which serving must ignore).
DataConfig CsvConfig(const std::string& path) {
  DataConfig c;
  c.files = {path};
  c.schema.format = DataFormat::kCsv;
  c.schema.header = true;
  c.schema.dense = {"age", "price"};
  c.schema.sparse = {"city", "tags"};
  c.transforms = {{"age", "fill(30) | standardize"}, {"price", "log1p | quantiles(4)"}, {"tags", "split('|', 3)"},
                  {"city", "hash(1000)"}};
  c.cache = CacheMode::kOff;
  return c;
}

const char kCsv[] =
    "label,age,price,city,tags\n"
    "1,25,10,paris,a|b\n"
    "0,,3.5,\"new york, ny\",c\n"
    "1,61,1000,berlin,\n"
    "0,40,0,paris,a|b|c|d\n"
    "1,18,7,rome,b\n";

Result<std::unique_ptr<RowParser>> ParserFromReader(const DataConfig& c) {
  RECTRAIN_ASSIGN_OR_RETURN(auto reader, OpenBatchReader(c, {}));
  RECTRAIN_ASSIGN_OR_RETURN(RowLayout layout, reader->row_layout());
  DataConfig serving = c;
  serving.files.clear();
  return RowParser::Create(serving, layout);
}

TEST(RowParserTest, LinesParseToTheReadersRows) {
  TempDir dir;
  const DataConfig c = CsvConfig(dir.Write("d.csv", kCsv));
  auto want = test_util::ReadAll(c, {});
  ASSERT_TRUE(want.ok()) << want.status();
  auto reader = OpenBatchReader(c, {});
  ASSERT_TRUE(reader.ok());
  auto layout = (*reader)->row_layout();
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->format, DataFormat::kCsv);
  EXPECT_EQ(layout->header, (std::vector<std::string>{"label", "age", "price", "city", "tags"}));
  ASSERT_EQ(layout->stats.size(), 2u);  // age's standardize, price's quantiles
  EXPECT_NEAR(layout->stats[0].mean, (25 + 30 + 61 + 40 + 18) / 5.0, 1e-9);  // the fill counts
  auto parser = ParserFromReader(c);
  ASSERT_TRUE(parser.ok()) << parser.status();
  const std::vector<std::string> lines = {"1,25,10,paris,a|b", "0,,3.5,\"new york, ny\",c", "1,61,1000,berlin,",
                                          "0,40,0,paris,a|b|c|d", "1,18,7,rome,b"};
  Batch b;
  ASSERT_TRUE((*parser)->ParseLines(lines, "req", &b).ok());
  ASSERT_EQ(b.size, 5);
  for (int64_t r = 0; r < b.size; ++r) {
    EXPECT_EQ(b.labels[r], want->labels[r]);
    for (int j = 0; j < 2; ++j) EXPECT_EQ(b.dense[r * 2 + j], want->dense[r][j]) << r << " " << j;
    for (int f = 0; f < 2; ++f) {
      const SparseColumn& col = b.sparse[f];
      std::vector<uint64_t> ids(col.ids.begin() + col.RowBegin(r), col.ids.begin() + col.RowEnd(r));
      EXPECT_EQ(ids, want->lists[r][f]) << r << " " << f;
    }
  }
  EXPECT_EQ(b.sparse[1].RowEnd(3) - b.sparse[1].RowBegin(3), 3);  // split(.., 3)
}

TEST(RowParserTest, FrozenStatisticsReplaceTheStatsPass) {
  TempDir dir;
  DataConfig c = CsvConfig(dir.Write("d.csv", kCsv));
  auto reader = OpenBatchReader(c, {});
  ASSERT_TRUE(reader.ok());
  RowLayout layout = *(*reader)->row_layout();
  layout.stats[0].mean = 1000;  // a reader given frozen stats uses them, not data.train's
  layout.stats[0].std = 2;
  c.feature_stats = layout.stats;
  auto rows = test_util::ReadAll(c, {});
  ASSERT_TRUE(rows.ok());
  EXPECT_FLOAT_EQ(rows->dense[0][0], (25 - 1000) / 2.0f);
  c.feature_stats->pop_back();
  auto bad = OpenBatchReader(c, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("frozen feature statistics cover 1 features, but the config has 2"), std::string::npos)
      << bad.status();
}

TEST(RowParserTest, ServingIgnoresFiltersAndDownsampling) {
  TempDir dir;
  DataConfig c = CsvConfig(dir.Write("d.csv", kCsv));
  c.filters = {"city in [paris]"};
  c.negative_downsampling = 0.01;
  auto parser = ParserFromReader(c);
  ASSERT_TRUE(parser.ok()) << parser.status();
  Batch b;
  ASSERT_TRUE((*parser)->ParseLines(std::vector<std::string>{"0,1,1,rome,a", "0,2,2,oslo,b"}, "req", &b).ok());
  EXPECT_EQ(b.size, 2);
}

TEST(RowParserTest, LineFromFieldsQuotesOrRefuses) {
  TempDir dir;
  auto parser = ParserFromReader(CsvConfig(dir.Write("d.csv", kCsv)));
  ASSERT_TRUE(parser.ok());
  std::vector<std::optional<std::string_view>> f = {std::nullopt, "25", std::nullopt, "new \"york\", ny", "a|b"};
  auto line = (*parser)->LineFromFields(f);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line, "0,25,,\"new \"\"york\"\", ny\",a|b");  // label defaults to 0; csv quoting
  Batch b;
  ASSERT_TRUE((*parser)->ParseLines(std::vector<std::string>{*line}, "req", &b).ok());
  EXPECT_EQ(b.size, 1);
  EXPECT_FALSE((*parser)->LineFromFields(std::vector<std::optional<std::string_view>>(2)).ok());

  // criteo has no quoting: a tab in a value cannot be written.
  DataConfig cr;
  cr.files = {dir.Write("c.tsv", "1\t" + std::string(12, '\t') + "5" + std::string(26, '\t') + "\n")};
  cr.cache = CacheMode::kOff;
  auto criteo = ParserFromReader(cr);
  ASSERT_TRUE(criteo.ok()) << criteo.status();
  EXPECT_EQ((*criteo)->columns().size(), 40u);
  std::vector<std::optional<std::string_view>> g(40);
  g[14] = "a\tb";
  auto refused = (*criteo)->LineFromFields(g);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("field 'C1' contains the delimiter"), std::string::npos) << refused.status();
}

TEST(RowParserTest, FieldReadsOneColumnWithTheQuotingRules) {
  TempDir dir;
  auto parser = ParserFromReader(CsvConfig(dir.Write("d.csv", kCsv)));
  ASSERT_TRUE(parser.ok());
  RowParser& p = **parser;
  EXPECT_EQ(*p.Field("1,25,10,\"new \"\"york\"\", ny\",a|b", 3), "new \"york\", ny");  // unescaped
  EXPECT_EQ(*p.Field("1,25,10,\"new york, ny\",a|b", 4), "a|b");  // the quoted delimiter is no boundary
  EXPECT_EQ(*p.Field("1,,10,x,\r", 1), "");
  EXPECT_EQ(*p.Field("1,25,10,x,t\r", 4), "t");
  EXPECT_FALSE(p.Field("1,25", 3).ok());              // fewer fields
  EXPECT_FALSE(p.Field("1,25,\"10,x,y", 4).ok());     // a quote that never closes
  EXPECT_FALSE(p.Field("1,25,10,x,y", 5).ok());       // no such column
}

TEST(RowParserTest, BadLinesNameRowAndField) {
  TempDir dir;
  auto parser = ParserFromReader(CsvConfig(dir.Write("d.csv", kCsv)));
  ASSERT_TRUE(parser.ok());
  Batch b;
  Status s = (*parser)->ParseLines(std::vector<std::string>{"1,25,10,paris,a", "1,abc,10,paris,a"}, "request", &b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("request:2:"), std::string::npos) << s;
  EXPECT_NE(s.message().find("age"), std::string::npos) << s;
  s = (*parser)->ParseLines(std::vector<std::string>{"1,25,10"}, "request", &b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  s = (*parser)->ParseLines(std::vector<std::string>{"1,25,10,paris,a\n1,2,3,x,y"}, "request", &b);
  EXPECT_NE(s.message().find("line break"), std::string::npos) << s;
}

// Training rows that arrive one at a time (a stream): the filters, downsampling and group key of
// the config apply, a bad row is reported alone and adds nothing, JSON rows need their label.
TEST(RowParserTest, TrainingRowsOneAtATime) {
  TempDir dir;
  DataConfig c = CsvConfig(dir.Write("d.csv", kCsv));
  c.filters = {"city not in [oslo]"};
  c.schema.group_key = "city";
  auto reader = OpenBatchReader(c, {});
  ASSERT_TRUE(reader.ok());
  auto layout = (*reader)->row_layout();
  ASSERT_TRUE(layout.ok());
  auto parser = RowParser::Create(c, *layout, {.training = true});
  ASSERT_TRUE(parser.ok()) << parser.status();
  RowParser& p = **parser;
  p.BeginBatch(2);
  bool kept = false;
  ASSERT_TRUE(p.AddLine("1,25,10,paris,a|b", "s", 0, &kept).ok());
  EXPECT_TRUE(kept);
  ASSERT_TRUE(p.AddLine("0,40,3,oslo,c", "s", 0, &kept).ok());
  EXPECT_FALSE(kept);  // filtered
  Status bad = p.AddLine("1,abc,10,rome,a", "events/0@7", 0, &kept);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("events/0@7, column 3: field age"), std::string::npos) << bad;
  ASSERT_TRUE(p.AddLine("0,18,7,rome,b|c|d", "s", 0, &kept).ok());
  ASSERT_TRUE(p.AddLine("1,61,1,berlin,", "s", 0, &kept).ok());  // past the expected rows: grows
  EXPECT_EQ(p.rows(), 3);
  EXPECT_EQ(p.rows_filtered(), 1);
  Batch b;
  p.FinishBatch(&b);
  ASSERT_EQ(b.size, 3);
  EXPECT_EQ(b.labels, (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(b.group_keys.size(), 3u);
  EXPECT_EQ(b.sparse[1].RowEnd(1) - b.sparse[1].RowBegin(1), 3);  // the bad row left no ids behind
  auto json = p.LineFromJson(R"({"label": 1, "age": 30, "price": 2.5, "city": "paris", "tags": null})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, "1,30,2.5,paris,");
  auto unlabeled = p.LineFromJson(R"({"age": 30})");
  ASSERT_FALSE(unlabeled.ok());
  EXPECT_NE(unlabeled.status().message().find("label 'label' is missing"), std::string::npos) << unlabeled.status();
  EXPECT_FALSE(p.LineFromJson(R"({"label": 1, "size": 3})").ok());
  EXPECT_FALSE(p.LineFromJson(R"({"label": [1]})").ok());
  EXPECT_FALSE(p.LineFromJson("not json").ok());
}

TEST(RowParserTest, ParquetLayoutIsRefused) {
  RowLayout layout{.format = DataFormat::kParquet, .header = {"label"}, .stats = {}};
  auto p = RowParser::Create(DataConfig{}, layout);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("rectrain data convert --to tsv"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::data
