// Parquet as a training input: the fixtures of tests/parquet_fixtures (written by DuckDB and
// parquet-wasm) read through OpenBatchReader, compared with the same rows as TSV
// (reader_rows.tsv, written from duckdb_snappy_v1.parquet by make_reader_fixture.mjs).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "rectrain/data/errors.h"
#include "rectrain/data/internal/test_util.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

using test_util::ReadAll;
using test_util::Rows;
using test_util::TempDir;

std::string Fixture(const std::string& name) {
  return std::string(RECTRAIN_PARQUET_FIXTURES) + "/" + name;
}

// The features both formats share. Lists are Parquet list columns or '|'-joined text.
DataConfig Config(const std::string& file, bool text) {
  DataConfig c;
  c.files = {file};
  c.schema.format = text ? DataFormat::kTsv : DataFormat::kAuto;
  c.schema.header = text;
  c.schema.label = "label";
  c.schema.dense = {"i32", "f32", "f64", "i64d"};
  c.schema.sparse = {"i64", "b", "c_low", "s_high", "seq", "tags", "c_x_b"};
  c.schema.group_key = "c_low";
  c.transforms = {{"i64d", "col(i64) | fill(-1) | clip(-5e18, 5e18)"},
                  {"c_x_b", "cross(c_low, b)"},
                  {"tags", "max_len(1)"}};
  if (text) {
    c.transforms["seq"] = "split('|')";
    c.transforms["tags"] = "split('|', 1)";
  }
  c.hash_seed = 11;
  return c;
}

// Rows i of the fixtures (see tests/parquet_fixtures/make_fixtures.mjs).
std::vector<uint64_t> SeqIds(int64_t i) {
  auto id = [](const std::string& t) { return FeatureId(4, t, 11); };
  if (i % 17 == 0 || i % 5 == 0) return {id("")};  // null or empty list: the missing id
  if (i % 9 == 0) return {id(std::to_string(i)), id(""), id(std::to_string(-i))};
  return {id(std::to_string(i)), id(std::to_string(i + 1)), id(std::to_string(i + 2))};
}

TEST(ParquetReaderTest, ValuesFollowTheFixtureFormulas) {
  ReadOptions o;
  o.batch_size = 300;
  auto rows = ReadAll(Config(Fixture("duckdb_snappy_v1.parquet"), false), o);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->labels.size(), 2200u);
  for (int64_t i = 0; i < 2200; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows->labels[i], i % 3 == 0 ? 1.0f : 0.0f);
    const float f32 = i % 11 == 0 ? 0.0f : static_cast<float>(std::log1p(std::max(0.0, (i - 2500) / 8.0)));
    EXPECT_EQ(rows->dense[i][1], f32);
    EXPECT_EQ(rows->dense[i][2], static_cast<float>(std::log1p(static_cast<double>(i) / 3.0)));
    const double i64 = i % 7 == 0 ? -1.0 : (i % 2 == 0 ? 1.0 : -1.0) * static_cast<double>(i) * 1000000007.0;
    EXPECT_EQ(rows->dense[i][3], static_cast<float>(i64));
    const auto& l = rows->lists[i];
    EXPECT_EQ(l[0], (std::vector<uint64_t>{i % 7 == 0 ? FeatureId(0, "", 11)
                                                       : FeatureId(0, std::to_string(static_cast<int64_t>(i64)), 11)}));
    const std::string b = i % 19 == 0 ? "" : (i % 3 == 1 ? "true" : "false");
    EXPECT_EQ(l[1], (std::vector<uint64_t>{FeatureId(1, b, 11)}));
    EXPECT_EQ(l[4], SeqIds(i));
    EXPECT_LE(l[5].size(), 1u);
  }
  EXPECT_EQ(rows->stats.rows_read, 2200);
  EXPECT_EQ(rows->stats.files, 1);
  // Batch::first_line is the 1-based row of the first row in the file.
  EXPECT_EQ(rows->batch_first_lines[0], 1);
  EXPECT_EQ(rows->batch_first_lines[1], 301);
}

TEST(ParquetReaderTest, SameRowsAsTsvGiveIdenticalBatches) {
  ReadOptions o;
  o.batch_size = 257;
  auto tsv = ReadAll(Config(Fixture("reader_rows.tsv"), true), o);
  ASSERT_TRUE(tsv.ok()) << tsv.status();
  for (const char* name : {"duckdb_snappy_v1.parquet", "duckdb_zstd_v2.parquet", "pqwasm_gzip_v1.parquet",
                           "pqwasm_lz4_raw_v2.parquet", "pqwasm_uncompressed_v2.parquet"}) {
    SCOPED_TRACE(name);
    auto pq = ReadAll(Config(Fixture(name), false), o);
    ASSERT_TRUE(pq.ok()) << pq.status();
    EXPECT_EQ(pq->labels, tsv->labels);
    EXPECT_EQ(pq->dense, tsv->dense);
    EXPECT_EQ(pq->lists, tsv->lists);
    EXPECT_EQ(pq->group, tsv->group);
    EXPECT_EQ(pq->batch_sizes, tsv->batch_sizes);
  }
}

// Without crosses, splits and filters a row group is evaluated a column at a time, and a
// dictionary-encoded column once per dictionary entry (hashed once per distinct string, then
// mapped by index). Its batches must equal the TSV rows' and the row-by-row Parquet path's
// (forced here by a filter that keeps every row), nulls and list<string> / list<int64> included,
// for every fixture (both writers, dictionary pages with PLAIN fallback, data pages v1 and v2).
TEST(ParquetReaderTest, DictionaryPathGivesTheIdsOfPerRowHashing) {
  auto columnar_config = [](const std::string& file, bool text) {
    DataConfig c = Config(file, text);
    c.schema.sparse = {"i64", "b", "c_low", "s_high", "seq", "tags"};
    c.transforms.erase("c_x_b");
    return c;
  };
  ReadOptions o;
  o.batch_size = 257;
  o.chunk_bytes = 256 * 700;  // 700-row slices: several slices share a row group's dictionary
  auto tsv = ReadAll(columnar_config(Fixture("reader_rows.tsv"), true), o);
  ASSERT_TRUE(tsv.ok()) << tsv.status();
  ASSERT_EQ(tsv->labels.size(), 2200u);
  for (const char* writer : {"duckdb", "pqwasm"}) {
    for (const char* codec : {"uncompressed", "snappy", "gzip", "zstd", "lz4_raw"}) {
      for (const char* ver : {"v1", "v2"}) {
        const std::string name = std::string(writer) + "_" + codec + "_" + ver + ".parquet";
        SCOPED_TRACE(name);
        DataConfig c = columnar_config(Fixture(name), false);
        auto columnar = ReadAll(c, o);
        ASSERT_TRUE(columnar.ok()) << columnar.status();
        c.filters = {"i32 not null"};  // keeps every row; forces the row-by-row path
        auto per_row = ReadAll(c, o);
        ASSERT_TRUE(per_row.ok()) << per_row.status();
        EXPECT_EQ(columnar->labels, tsv->labels);
        EXPECT_EQ(columnar->dense, tsv->dense);
        EXPECT_EQ(columnar->lists, tsv->lists);
        EXPECT_EQ(columnar->group, tsv->group);
        EXPECT_EQ(columnar->lists, per_row->lists);
        EXPECT_EQ(columnar->dense, per_row->dense);
        EXPECT_EQ(columnar->group, per_row->group);
      }
    }
  }
}

// A feature that is bad for some dictionary entries: the rows that use them are rejected (named
// in the error), the others keep their ids.
TEST(ParquetReaderTest, BadDictionaryEntriesRejectOnlyTheRowsUsingThem) {
  DataConfig c = Config(Fixture("pqwasm_snappy_v1.parquet"), false);
  c.schema.sparse = {"c_low"};
  c.transforms.erase("c_x_b");
  c.transforms.erase("tags");
  c.transforms["c_low"] = "clip(0, 10)";  // numeric steps: "cat_1" is not a number
  auto strict = ReadAll(c, ReadOptions());
  EXPECT_EQ(strict.status().message().rfind(Fixture("pqwasm_snappy_v1.parquet") + ": row 2: ", 0), 0u)
      << strict.status();
  EXPECT_NE(strict.status().message().find("c_low"), std::string::npos) << strict.status();
  c.max_bad_rows = 10000;
  auto counted = ReadAll(c, ReadOptions());
  ASSERT_TRUE(counted.ok()) << counted.status();
  int64_t nulls = 0;
  for (int64_t i = 0; i < 2200; ++i) nulls += i % 13 == 0;
  EXPECT_EQ(counted->stats.rows_read, nulls);  // a null c_low is the missing id, not bad
  EXPECT_EQ(counted->stats.rows_rejected, 2200 - nulls);
  for (const auto& row : counted->lists) {
    EXPECT_EQ(row[0], (std::vector<uint64_t>{FeatureId(0, "", 11)}));
  }

  // A null label is bad (the dictionary's null entry), a present one is fine.
  DataConfig l = Config(Fixture("pqwasm_snappy_v1.parquet"), false);
  l.schema.label = "f32";
  l.schema.dense = {"i32", "f64"};
  l.transforms = {{"f32", "binarize(0)"}, {"c_x_b", "cross(c_low, b)"}, {"tags", "max_len(1)"}};
  l.schema.sparse = {"i64", "c_low", "tags"};
  l.transforms.erase("c_x_b");
  l.max_bad_rows = 10000;
  auto labels = ReadAll(l, ReadOptions());
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->stats.rows_rejected, 200);  // f32 is null for i % 11 == 0
  EXPECT_EQ(labels->stats.rows_read, 2000);
  EXPECT_EQ(labels->labels, std::vector<float>(2000, 0.0f));  // (i - 2500) / 8 < 0
}

TEST(ParquetReaderTest, RowGroupsInParallelAndShuffled) {
  DataConfig c = Config(Fixture("pqwasm_snappy_v1.parquet"), false);  // 3 row groups
  c.files = {Fixture("pqwasm_snappy_v1.parquet"), Fixture("duckdb_gzip_v2.parquet")};
  ReadOptions o;
  o.batch_size = 100;
  auto one = ReadAll(c, o);
  ASSERT_TRUE(one.ok()) << one.status();
  o.num_threads = 3;
  o.chunk_bytes = 256 * 100;  // 100-row slices of each row group
  auto three = ReadAll(c, o);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(one->lists, three->lists);
  EXPECT_EQ(one->dense, three->dense);
  EXPECT_EQ(one->labels.size(), 4400u);
  EXPECT_EQ(one->batch_first_lines, three->batch_first_lines);
  o.shuffle = true;
  o.shuffle_buffer_rows = 500;
  auto sh = ReadAll(c, o);
  ASSERT_TRUE(sh.ok()) << sh.status();
  auto a = one->lists;
  auto b = sh->lists;
  EXPECT_NE(a, b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

TEST(ParquetReaderTest, FiltersDownsamplingAndBadValues) {
  DataConfig c = Config(Fixture("duckdb_snappy_v2.parquet"), false);
  c.filters = {"c_low not null", "b in [true]"};
  auto rows = ReadAll(c, ReadOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  int64_t expected = 0;
  for (int64_t i = 0; i < 2200; ++i) expected += i % 13 != 0 && i % 19 != 0 && i % 3 == 1;
  EXPECT_EQ(static_cast<int64_t>(rows->labels.size()), expected);
  EXPECT_EQ(rows->stats.rows_filtered, 2200 - expected);

  // A label that is not 0/1 names the file, the row and the column.
  DataConfig bad = Config(Fixture("duckdb_snappy_v2.parquet"), false);
  bad.schema.label = "f64";
  bad.schema.dense = {"i32"};
  bad.transforms.erase("i64d");
  auto r = ReadAll(bad, ReadOptions());
  EXPECT_EQ(r.status().message(), Fixture("duckdb_snappy_v2.parquet") +
                                      ": row 2: field f64: expected 0 or 1, got \"0.3333333333333333\"; " +
                                      std::string(errors::kMaxBadRowsHint));
  bad.max_bad_rows = 10000;
  auto counted = ReadAll(bad, ReadOptions());
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(counted->stats.rows_read, 2);  // f64 = i / 3 is 0 or 1 only for i = 0 and 3
  EXPECT_EQ(counted->stats.rows_rejected, 2198);
}

TEST(ParquetReaderTest, SchemaErrors) {
  DataConfig c = Config(Fixture("duckdb_snappy_v1.parquet"), false);
  c.schema.dense = {"seq"};
  c.transforms.clear();
  c.schema.sparse = {};
  EXPECT_EQ(OpenBatchReader(c, ReadOptions()).status().message(),
            "schema of " + Fixture("duckdb_snappy_v1.parquet") +
                ": data.schema.dense: column \"seq\" is a list; list columns can only be sparse features");
  c.schema.dense = {"nope"};
  EXPECT_EQ(OpenBatchReader(c, ReadOptions()).status().message(),
            "schema of " + Fixture("duckdb_snappy_v1.parquet") +
                ": data.schema.dense names column \"nope\", which is not in the Parquet schema (columns: "
                "label, i32, i64, f32, ..., tags)");
  c.files = {Fixture("duckdb_snappy_v1.parquet"), Fixture("reader_rows.tsv")};
  EXPECT_EQ(OpenBatchReader(c, ReadOptions()).status().message(),
            "data.format auto: 1 of 2 files end in .parquet; read Parquet and text files in separate runs");
}

TEST(ParquetReaderTest, CorruptFileIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string src = Fixture("duckdb_snappy_v1.parquet");
  std::string bytes = io::ReadFileToString(src).value();
  const std::string path = dir.Write("bad.parquet", bytes.substr(0, bytes.size() - 10));
  DataConfig c = Config(path, false);
  auto r = OpenBatchReader(c, ReadOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message().rfind(path + ": ", 0), 0u) << r.status();
}

}  // namespace
}  // namespace rectrain::data
