// ExportTsv (`rectrain data convert --to tsv`): every input format written as TSV reads back,
// with the returned config, into the same rows bit for bit (labels, dense floats, every id of
// multi-valued fields, group keys); the hex_id step's parse and its errors; export errors.
#include "rectrain/data/tsv_export.h"

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "rectrain/data/cache.h"
#include "rectrain/data/generator.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::Rows;
using test_util::TempDir;

// Exports `config`'s rows to `out`, reads them back with the returned config and compares.
TsvExportInfo RoundTrip(const DataConfig& config, const std::string& out) {
  ReadOptions ro;
  ro.batch_size = 100;
  auto want = ReadAll(config, ro);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  auto reader = OpenBatchReader(config, ro);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto info = ExportTsv(reader->get(), out);
  EXPECT_TRUE(info.ok()) << info.status().ToString();
  if (!want.ok() || !info.ok()) return {};
  EXPECT_EQ(info->rows, static_cast<int64_t>(want->labels.size()));
  DataConfig back = info->read_back;
  back.cache = CacheMode::kOff;
  auto got = ReadAll(back, ro);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!got.ok()) return *info;
  test_util::ExpectSameBatches(*got, *want);
  return *info;
}

TEST(TsvExportTest, CriteoRoundTripIsBitExact) {
  TempDir dir;
  GenerateConfig g;
  g.out = dir.Path("train.tsv");
  g.rows = 1500;
  g.seed = 7;
  g.num_threads = 1;
  ASSERT_TRUE(GenerateDataset(g).ok());
  DataConfig c;
  c.files = {g.out};
  c.hash_seed = 11;
  c.cache = CacheMode::kOff;
  const TsvExportInfo info = RoundTrip(c, dir.Path("out.tsv"));
  EXPECT_EQ(info.multi_valued, 0);
  EXPECT_FALSE(info.has_group);
  EXPECT_EQ(info.read_back.transforms.at("I1"), "fill(0)");
  EXPECT_EQ(info.read_back.transforms.at("C1"), "hex_id");
  EXPECT_NE(info.yaml.find("  format: tsv\n  header: true\n"), std::string::npos) << info.yaml;
  EXPECT_NE(info.yaml.find("    \"C26\": \"hex_id\"\n"), std::string::npos) << info.yaml;
}

TEST(TsvExportTest, CsvWithMultiValuedGroupAndStatsRoundTrips) {
  TempDir dir;
  std::string text = "label,age,genres,user,movie\n";
  for (int i = 0; i < 400; ++i) {
    text += std::to_string(i % 3 == 0 ? 1 : 0) + "," + (i % 11 == 0 ? "" : std::to_string(18 + i % 50)) + ",";
    for (int k = 0; k < i % 4; ++k) text += (k ? "|g" : "g") + std::to_string((i + k) % 9);
    text += ",u" + std::to_string(i % 37) + ",m" + std::to_string(i % 101) + "\n";
  }
  DataConfig c;
  c.files = {dir.Write("r.csv", text)};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = ',';
  c.schema.header = true;
  c.schema.dense = {"age"};
  c.schema.sparse = {"genres", "user", "movie"};
  c.schema.group_key = "user";
  c.transforms = {{"age", "fill(30) | standardize"}, {"genres", "split('|', 3)"}, {"movie", "hash(50)"}};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  const TsvExportInfo info = RoundTrip(c, dir.Path("out.tsv"));
  EXPECT_EQ(info.multi_valued, 1);
  EXPECT_TRUE(info.has_group);
  EXPECT_EQ(info.read_back.transforms.at("genres"), "split(',') | hex_id");
  EXPECT_EQ(info.read_back.schema.group_key, "group");
  EXPECT_NE(info.yaml.find("  group_key: \"group\"\n"), std::string::npos) << info.yaml;
  // Row 2 (i = 1) has one genre, row 4 (i = 3) three, joined by ','.
  auto written = io::ReadFileToString(dir.Path("out.tsv"));
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->substr(0, written->find('\n')), "label\tage\tgenres\tuser\tmovie\tgroup");
}

TEST(TsvExportTest, LibsvmAndCacheInputsRoundTrip) {
  TempDir dir;
  DataConfig s;
  s.files = {dir.Write("a.libsvm", "1 1:0.5 7:1 9:1\n0 3:1\n-1 2:1 4:1\n1 1:3\n")};
  s.schema.format = DataFormat::kLibsvm;
  s.schema.dense = {"1"};
  s.cache = CacheMode::kOff;
  EXPECT_EQ(RoundTrip(s, dir.Path("svm.tsv")).multi_valued, 1);

  // A .rtc cache file as input.
  GenerateConfig g;
  g.out = dir.Path("train.tsv");
  g.rows = 700;
  g.seed = 3;
  g.num_threads = 1;
  ASSERT_TRUE(GenerateDataset(g).ok());
  DataConfig c;
  c.files = {g.out};
  c.cache = CacheMode::kOff;
  auto built = BuildCache(c, ReadOptions{}, CacheWriteOptions{}, dir.Path("t.rtc"));
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  DataConfig r;
  r.files = {dir.Path("t.rtc")};
  r.cache = CacheMode::kOff;
  EXPECT_EQ(RoundTrip(r, dir.Path("rtc.tsv")).rows, 700);
}

TEST(TsvExportTest, ParquetWithListColumnsRoundTrips) {
  TempDir dir;
  DataConfig c;
  c.files = {std::string(RECTRAIN_PARQUET_FIXTURES) + "/duckdb_snappy_v1.parquet"};
  c.schema.format = DataFormat::kParquet;
  c.schema.dense = {"i32", "f32", "f64"};
  c.schema.sparse = {"i64", "c_low", "seq", "tags"};
  c.transforms = {{"f64", "clip(-5, 5) | standardize"}, {"tags", "max_len(2)"}};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  const TsvExportInfo info = RoundTrip(c, dir.Path("pq.tsv"));
  EXPECT_EQ(info.rows, 2200);
  EXPECT_EQ(info.multi_valued, 2);
  EXPECT_EQ(info.read_back.transforms.at("seq"), "split(',') | hex_id");
}

TEST(TsvExportTest, ExportErrors) {
  TempDir dir;
  DataConfig c;
  c.files = {dir.Write("a.tsv", "label\tx\tc\n1\t2\tq\n")};
  c.schema.format = DataFormat::kTsv;
  c.schema.header = true;
  c.schema.dense = {"x"};
  c.schema.sparse = {"c"};
  c.cache = CacheMode::kOff;
  auto reader = OpenBatchReader(c, ReadOptions{});
  ASSERT_TRUE(reader.ok());
  const std::string bad_out = dir.Path("no/such/dir/out.tsv");
  auto info = ExportTsv(reader->get(), bad_out);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("cannot create " + bad_out), std::string::npos) << info.status().ToString();

  // Every row filtered: nothing to write, and no file appears.
  c.filters = {"c in [zzz]"};
  reader = OpenBatchReader(c, ReadOptions{});
  ASSERT_TRUE(reader.ok());
  info = ExportTsv(reader->get(), dir.Path("empty.tsv"));
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("the input has no rows"), std::string::npos) << info.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Path("empty.tsv")));
}

TEST(TsvExportTest, LabelAndGroupNamesStayFreeAndBadNamesAreErrors) {
  TempDir dir;
  // Features named "label" and "group": the label and group columns become "label_" / "group_".
  DataConfig c;
  c.files = {dir.Write("n.csv", "y,label,group,u\n1,3,a,u1\n0,4,b,u2\n")};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = ',';
  c.schema.header = true;
  c.schema.label = "y";
  c.schema.dense = {"label"};
  c.schema.sparse = {"group"};
  c.schema.group_key = "u";
  c.cache = CacheMode::kOff;
  const TsvExportInfo info = RoundTrip(c, dir.Path("n.tsv"));
  EXPECT_EQ(info.read_back.schema.label, "label_");
  EXPECT_EQ(info.read_back.schema.group_key, "group_");
  auto written = io::ReadFileToString(dir.Path("n.tsv"));
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->substr(0, written->find('\n')), "label_\tlabel\tgroup\tgroup_");

  // A name with a tab cannot be a TSV header field.
  DataConfig t;
  t.files = {dir.Write("t.csv", "label,a\tb\n1,3\n")};
  t.schema.format = DataFormat::kCsv;
  t.schema.delimiter = ',';
  t.schema.header = true;
  t.schema.dense = {"a\tb"};
  t.cache = CacheMode::kOff;
  auto reader = OpenBatchReader(t, ReadOptions{});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto r = ExportTsv(reader->get(), dir.Path("t.tsv"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dense feature name \"a\tb\" cannot be a TSV header field"), std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Path("t.tsv")));
}

TEST(TsvExportTest, HexIdStep) {
  TempDir dir;
  DataConfig c;
  c.files = {dir.Write("h.tsv", "label\tc\tg\n1\t00000000000000ff\tFFFFFFFFFFFFFFFF\n0\t0123456789AbCdEf\t0000000000000001\n")};
  c.schema.format = DataFormat::kTsv;
  c.schema.header = true;
  c.schema.sparse = {"c"};
  c.schema.group_key = "g";
  c.transforms = {{"c", "hex_id"}, {"g", "hex_id"}};
  c.cache = CacheMode::kOff;
  auto rows = ReadAll(c, ReadOptions{});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->ids.size(), 2u);
  EXPECT_EQ(rows->ids[0][0], 0xffu);
  EXPECT_EQ(rows->ids[1][0], 0x0123456789abcdefu);
  EXPECT_EQ(rows->group, (std::vector<uint64_t>{~uint64_t{0}, 1}));

  // A token that is not 16 hex digits: file:line:column, the field, what hex_id expects.
  DataConfig bad = c;
  bad.files = {dir.Write("b.tsv", "label\tc\tg\n1\t00000000000000ff\t0000000000000001\n1\t12345\t0000000000000001\n")};
  auto r = ReadAll(bad, ReadOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("b.tsv:3:3: field c: expected an id of 16 hex digits (features.transforms step hex_id), got \"12345\""),
            std::string::npos)
      << r.status().ToString();
  bad.files = {dir.Write("g.tsv", "label\tc\tg\n1\t00000000000000ff\tuser7\n")};
  r = ReadAll(bad, ReadOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("g.tsv:2:20: field g: expected an id of 16 hex digits"), std::string::npos)
      << r.status().ToString();

  auto open_error = [](const DataConfig& d) {
    auto rd = OpenBatchReader(d, ReadOptions{});
    return rd.ok() ? std::string("ok") : rd.status().ToString();
  };
  DataConfig d = c;
  d.transforms = {{"c", "log1p | hex_id"}};
  EXPECT_NE(open_error(d).find("features.transforms.c: hex_id takes the token as the id; it cannot be combined with numeric steps"),
            std::string::npos)
      << open_error(d);
  d.transforms = {{"c", "hex_id"}, {"g", "hash(5)"}};
  EXPECT_NE(open_error(d).find("features.transforms.g: the group key column takes only \"hex_id\""), std::string::npos)
      << open_error(d);
  d.schema.dense = {"c"};
  d.schema.sparse = {};
  d.transforms = {{"c", "hex_id"}};
  EXPECT_NE(open_error(d).find("features.transforms.c: step hex_id applies to sparse features"), std::string::npos)
      << open_error(d);
  EXPECT_NE(ParseTransform("hex_id(3)").status().ToString().find("step hex_id takes 0 argument(s), got 1"),
            std::string::npos);
}

}  // namespace
}  // namespace rectrain::data
