// ExportParquet (`rectrain data convert --to parquet`): every input format written as Parquet
// reads back, with the returned config, into the same batches as the input bit for bit (labels,
// dense floats, every id of multi-valued fields, group keys); the column types; parts of a
// target size in row order; the reader's bad-row rules; the type decided by the first row group.
#include "rectrain/data/parquet_export.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "rectrain/data/generator.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::TempDir;

// Exports `config`'s files to `out`, reads them back with the returned config and compares the
// batches with those of the input (in file order, and shuffled: the same rows either way).
ParquetExportInfo RoundTrip(const DataConfig& config, const std::string& out, ParquetExportOptions o = {}) {
  auto info = ExportParquet(config, o, out);
  EXPECT_TRUE(info.ok()) << info.status().ToString();
  if (!info.ok()) return {};
  DataConfig back = info->read_back;
  back.cache = CacheMode::kOff;
  for (const bool shuffle : {false, true}) {
    ReadOptions ro;
    ro.batch_size = 100;
    ro.shuffle = shuffle;
    ro.seed = 5;
    auto want = ReadAll(config, ro);
    EXPECT_TRUE(want.ok()) << want.status().ToString();
    auto got = ReadAll(back, ro);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!want.ok() || !got.ok()) return *info;
    EXPECT_EQ(info->rows, static_cast<int64_t>(want->labels.size()));
    if (shuffle) continue;  // the shuffle order depends on the units (chunks vs row groups)
    test_util::ExpectSameBatches(*got, *want);
  }
  return *info;
}

std::vector<std::string> Types(const ParquetExportInfo& info) {
  std::vector<std::string> out;
  for (const std::string& c : info.columns) out.push_back(c.substr(0, c.find(" (")));
  return out;
}

TEST(ParquetExportTest, CriteoRoundTripIsBitExact) {
  TempDir dir;
  GenerateConfig g;
  g.out = dir.Path("train.tsv");
  g.rows = 3000;
  g.seed = 7;
  g.num_threads = 1;
  ASSERT_TRUE(GenerateDataset(g).ok());
  DataConfig c;
  c.files = {g.out};
  c.hash_seed = 11;
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 1000;
  const ParquetExportInfo info = RoundTrip(c, dir.Path("out.parquet"), o);
  EXPECT_EQ(info.row_groups, 3);
  EXPECT_EQ(info.files, std::vector<std::string>{dir.Path("out.parquet")});
  const std::vector<std::string> types = Types(info);
  ASSERT_EQ(types.size(), 40u);
  EXPECT_EQ(types[0], "label INT32");
  EXPECT_EQ(types[1], "I1 INT64");
  EXPECT_EQ(types[39], "C26 STRING");
  EXPECT_NE(info.columns[39].find("RLE_DICTIONARY"), std::string::npos) << info.columns[39];
  EXPECT_NE(info.yaml.find("  format: parquet\n"), std::string::npos) << info.yaml;
  auto f = io::parquet::ParquetFile::Open(dir.Path("out.parquet"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->num_rows(), 3000);
  EXPECT_EQ((*f)->schema()[14].name, "C1");
}

TEST(ParquetExportTest, CsvKeepsEveryColumnAndItsText) {
  TempDir dir;
  // Quoted fields, an unused column, a cross, a numeric sparse feature, a split list, a group
  // key, a filter (filters and downsampling apply on read), integers with leading zeros, -0.
  std::string text = "label,age,score,genres,user,movie,note\n";
  for (int i = 0; i < 500; ++i) {
    text += std::to_string(i % 3 == 0 ? 1 : 0) + ",";
    text += (i % 11 == 0 ? std::string() : (i % 13 == 0 ? "007" : std::to_string(18 + i % 50))) + ",";
    text += (i == 5 ? std::string("-0") : std::to_string(i % 7) + "." + std::to_string(i % 10)) + ",\"";
    for (int k = 0; k < i % 4; ++k) text += (k ? "|g" : "g") + std::to_string((i + k) % 9);
    text += "\",u" + std::to_string(i % 37) + ",\"m,\"\"" + std::to_string(i % 101) + "\"\"\",n" + std::to_string(i) + "\n";
  }
  DataConfig c;
  c.files = {dir.Write("r.csv", text)};
  c.schema.format = DataFormat::kCsv;
  c.schema.delimiter = ',';
  c.schema.header = true;
  c.schema.dense = {"age", "score"};
  c.schema.sparse = {"genres", "user", "movie", "user_movie", "age_bucket"};
  c.schema.group_key = "user";
  c.transforms = {{"age", "fill(30) | standardize"}, {"genres", "split('|', 3)"}, {"movie", "hash(50)"},
                  {"user_movie", "cross(user, movie)"}, {"age_bucket", "col(age) | bucketize(20, 40)"}};
  c.filters = {"movie not null"};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 128;
  const ParquetExportInfo info = RoundTrip(c, dir.Path("out.parquet"), o);
  EXPECT_EQ(Types(info), (std::vector<std::string>{"label INT32", "age INT64", "score DOUBLE", "genres STRING",
                                                   "user STRING", "movie STRING", "note STRING"}));
  // The quoted field is unescaped, exactly as the reader takes it.
  auto f = io::parquet::ParquetFile::Open(dir.Path("out.parquet"));
  ASSERT_TRUE(f.ok());
  auto movie = (*f)->ReadColumn(0, 5);
  ASSERT_TRUE(movie.ok());
  EXPECT_EQ(movie->StringAt(0), "m,\"0\"");
}

TEST(ParquetExportTest, LibsvmAndLibffmListsRoundTrip) {
  TempDir dir;
  DataConfig s;
  s.files = {dir.Write("a.libsvm", "1 1:0.5 7:1 9:1\n0 3:1 007:1\n-1 2:1 4:1\n+1 1:3\n0\n")};
  s.schema.format = DataFormat::kLibsvm;
  s.schema.dense = {"1", "2"};
  s.cache = CacheMode::kOff;
  ParquetExportInfo info = RoundTrip(s, dir.Path("svm.parquet"));
  EXPECT_EQ(Types(info), (std::vector<std::string>{"label INT32", "1 DOUBLE", "2 INT64", "features LIST<STRING>"}));
  DataConfig f;
  f.files = {dir.Write("a.ffm", "1 0:5:1 1:3:2.5 2:7:1\n0 0:1:1 2:9:1 2:10:1\n1 1:4:1\n")};
  f.schema.format = DataFormat::kLibffm;
  f.schema.dense = {"1"};
  f.schema.sparse = {"0", "2"};
  f.transforms = {{"2", "max_len(1)"}};
  f.cache = CacheMode::kOff;
  info = RoundTrip(f, dir.Path("ffm.parquet"));
  EXPECT_EQ(Types(info), (std::vector<std::string>{"label INT32", "1 DOUBLE", "0 LIST<STRING>", "2 LIST<STRING>"}));
  // A transformed label is a number.
  s.transforms = {{"label", "binarize(0.5)"}};
  info = RoundTrip(s, dir.Path("svm2.parquet"));
  EXPECT_EQ(Types(info)[0], "label INT64");
}

TEST(ParquetExportTest, ParquetInputKeepsTypesListsAndNulls) {
  TempDir dir;
  DataConfig c;
  c.files = {std::string(RECTRAIN_PARQUET_FIXTURES) + "/duckdb_snappy_v1.parquet",
             std::string(RECTRAIN_PARQUET_FIXTURES) + "/pqwasm_zstd_v2.parquet"};
  c.schema.format = DataFormat::kParquet;
  c.schema.dense = {"i32", "f32", "f64"};
  c.schema.sparse = {"i64", "c_low", "seq", "tags"};
  c.transforms = {{"f64", "clip(-5, 5) | standardize"}, {"tags", "max_len(2)"}};
  c.cache_dir = dir.Path("cache");
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 1000;
  const ParquetExportInfo info = RoundTrip(c, dir.Path("pq.parquet"), o);
  EXPECT_EQ(info.rows, 4400);
  EXPECT_EQ(info.row_groups, 5);  // row groups span input files
  EXPECT_EQ(Types(info), (std::vector<std::string>{"label INT32", "i32 INT32", "i64 INT64", "f32 FLOAT", "f64 DOUBLE",
                                                   "b BOOLEAN", "c_low STRING", "s_high STRING", "fixed BINARY",
                                                   "seq LIST<INT64>", "tags LIST<STRING>"}));
  EXPECT_EQ(info.notes, std::vector<std::string>{
                            "fixed (written as plain BYTE_ARRAY: its UUID annotation is not kept)"});
}

TEST(ParquetExportTest, PartsOfTargetSizeKeepRowOrder) {
  TempDir dir;
  // Many small inputs, few large outputs.
  std::vector<std::string> files;
  for (int f = 0; f < 12; ++f) {
    GenerateConfig g;
    g.out = dir.Path("in/part" + std::to_string(10 + f) + ".tsv");
    std::filesystem::create_directories(dir.Path("in"));
    g.rows = 400;
    g.seed = 100 + f;
    g.num_threads = 1;
    ASSERT_TRUE(GenerateDataset(g).ok());
  }
  DataConfig c;
  c.files = {dir.Path("in/*.tsv")};
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 500;
  o.target_part_bytes = 100000;
  o.write.compression = io::parquet::Compression::kSnappy;
  const ParquetExportInfo info = RoundTrip(c, dir.Path("out"), o);
  EXPECT_EQ(info.rows, 4800);
  ASSERT_GE(info.files.size(), 2u);
  ASSERT_LT(info.files.size(), 12u);
  int64_t total = 0;
  for (size_t i = 0; i < info.files.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/part-%05d.parquet", static_cast<int>(i));
    EXPECT_EQ(info.files[i], dir.Path("out") + name);
    const int64_t size = static_cast<int64_t>(std::filesystem::file_size(info.files[i]));
    EXPECT_LE(size, o.target_part_bytes) << info.files[i];
    if (i + 1 < info.files.size()) {
      EXPECT_GT(size, o.target_part_bytes / 2) << info.files[i];
    }
    total += size;
  }
  EXPECT_EQ(total, info.bytes);
  EXPECT_EQ(info.read_back.files, std::vector<std::string>{dir.Path("out") + "/part-*.parquet"});
  // A second export into the same directory would mix old and new parts: refused.
  auto again = ExportParquet(c, o, dir.Path("out"));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already holds " + std::to_string(info.files.size()) + " part files"),
            std::string::npos)
      << again.status().ToString();
}

TEST(ParquetExportTest, ParquetWithoutFeaturesIsCopiedAsItIs) {
  // Compaction without a config: every column the writer can hold, every row, in order.
  TempDir dir;
  DataConfig c;
  c.files = {std::string(RECTRAIN_PARQUET_FIXTURES) + "/pqwasm_*_v1.parquet"};
  c.schema.format = DataFormat::kParquet;
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 1000;
  o.target_part_bytes = 100000;
  auto info = ExportParquet(c, o, dir.Path("copy"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->rows, 5 * 2200);
  EXPECT_EQ(info->yaml, "data:\n  train: \"" + dir.Path("copy") + "/part-*.parquet\"\n  format: parquet\n");
  ASSERT_GE(info->files.size(), 2u);
  // The same rows as the inputs, read with the fixture's features.
  DataConfig read = c;
  read.schema.dense = {"i32", "f32", "f64"};
  read.schema.sparse = {"i64", "b", "c_low", "s_high", "fixed", "seq", "tags"};
  DataConfig back = read;
  back.files = info->read_back.files;
  ReadOptions ro;
  auto want = ReadAll(read, ro);
  auto got = ReadAll(back, ro);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status().ToString() << got.status().ToString();
  test_util::ExpectSameBatches(*got, *want);
}

TEST(ParquetExportTest, BadRowsFollowTheReadersRules) {
  TempDir dir;
  DataConfig c;
  c.files = {dir.Write("b.tsv", "label\tx\tc\n1\t2\tq\n1\tabc\tq\n0\t3\tr\n2\t4\ts\n")};
  c.schema.format = DataFormat::kTsv;
  c.schema.header = true;
  c.schema.dense = {"x"};
  c.schema.sparse = {"c"};
  c.cache = CacheMode::kOff;
  auto strict = ExportParquet(c, {}, dir.Path("s.parquet"));
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("b.tsv:3:3: field x: expected a finite number"), std::string::npos)
      << strict.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Path("s.parquet")));
  c.max_bad_rows = 2;
  c.rejects_file = dir.Path("rejects.tsv");
  const ParquetExportInfo info = RoundTrip(c, dir.Path("t.parquet"));
  EXPECT_EQ(info.rows, 2);
  EXPECT_EQ(info.rows_rejected, 2);
  c.max_bad_rows = 1;
  auto too_many = ExportParquet(c, {}, dir.Path("u.parquet"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("2 bad rows exceed data.max_bad_rows = 1"), std::string::npos)
      << too_many.status().ToString();
}

TEST(ParquetExportTest, FirstRowGroupDecidesIntegerColumns) {
  TempDir dir;
  std::string text = "label\tx\tc\n";
  for (int i = 0; i < 10; ++i) text += "1\t" + std::to_string(i) + "\tq\n";
  text += "0\t2.5\tq\n";
  DataConfig c;
  c.files = {dir.Write("n.tsv", text)};
  c.schema.format = DataFormat::kTsv;
  c.schema.header = true;
  c.schema.dense = {"x"};
  c.schema.sparse = {"c"};
  c.cache = CacheMode::kOff;
  ParquetExportOptions o;
  o.row_group_rows = 5;
  auto r = ExportParquet(c, o, dir.Path("n.parquet"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "n.tsv:12: column x: \"2.5\" is not an integer, but the column is written as INT64 (its first row "
                "group held only integers); convert with --numbers double"),
            std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Path("n.parquet")));
  // With parts, the parts already complete are removed too: a failed conversion leaves nothing.
  o.target_part_bytes = 1;
  r = ExportParquet(c, o, dir.Path("parts"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(std::filesystem::is_empty(dir.Path("parts")));
  o.target_part_bytes = 0;
  o.double_numbers = true;
  EXPECT_EQ(Types(RoundTrip(c, dir.Path("n.parquet"), o))[1], "x DOUBLE");
  o.double_numbers = false;
  o.row_group_rows = 100;  // one row group: it sees 2.5
  EXPECT_EQ(Types(RoundTrip(c, dir.Path("n2.parquet"), o))[1], "x DOUBLE");
}

}  // namespace
}  // namespace rectrain::data
