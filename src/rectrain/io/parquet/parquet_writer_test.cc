// The writer against our reader: every column of the independent writers' fixtures (nulls, lists,
// booleans, floats, strings, every codec) written back and read again value for value; the
// dictionary, its PLAIN fallback and pages; statistics; and every inconsistent input rejected
// with a message instead of a crash. tests/parquet_writer_duckdb_test.sh checks the same files
// with DuckDB and parquet-wasm.
#include "rectrain/io/parquet/parquet_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "parquet_test_util.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/internal/thrift_compact.h"

namespace rectrain::io::parquet {
namespace {

using testing_util::FixtureDir;
using testing_util::ReadFileBytes;

void ExpectSameColumn(const ColumnData& a, const ColumnData& b, const std::string& what) {
  EXPECT_EQ(testing_util::ColumnDifference(a, b), "") << what;
}

// Writes every row group of `src` (same row groups) and returns the bytes.
std::string Rewrite(const ParquetFile& src, const ParquetWriteOptions& o) {
  std::vector<WriteColumn> cols;
  for (const ColumnSchema& s : src.schema()) cols.push_back(WriteColumnLike(s));
  StringSink sink;
  auto w = ParquetWriter::Create(cols, o, &sink);
  EXPECT_TRUE(w.ok()) << w.status();
  for (int rg = 0; rg < src.num_row_groups(); ++rg) {
    std::vector<ColumnData> data;
    for (int c = 0; c < src.num_columns(); ++c) data.push_back(*src.ReadColumn(rg, c));
    Status s = (*w)->WriteRowGroup(data);
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->bytes_written(), static_cast<int64_t>(sink.data().size()));
  return sink.Take();
}

void ExpectSameFile(const ParquetFile& a, const ParquetFile& b) {
  ASSERT_EQ(a.num_rows(), b.num_rows());
  ASSERT_EQ(a.num_row_groups(), b.num_row_groups());
  ASSERT_EQ(a.num_columns(), b.num_columns());
  for (int c = 0; c < a.num_columns(); ++c) {
    const ColumnSchema &x = a.schema()[c], &y = b.schema()[c];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.optional, y.optional) << x.name;
    EXPECT_EQ(x.is_list, y.is_list) << x.name;
    EXPECT_EQ(x.element_optional, y.element_optional) << x.name;
    EXPECT_EQ(x.logical_type == LogicalType::kString, y.logical_type == LogicalType::kString) << x.name;
    for (int rg = 0; rg < a.num_row_groups(); ++rg) {
      ExpectSameColumn(*a.ReadColumn(rg, c), *b.ReadColumn(rg, c), x.name + " rg " + std::to_string(rg));
      // The dictionary form too (the data reader's path).
      ColumnChunkReader r(&b);
      r.set_dictionary_form(true);
      ColumnData d;
      ASSERT_TRUE(r.Read(rg, c, &d).ok());
      ExpectSameColumn(*a.ReadColumn(rg, c), d, x.name + " (dictionary form) rg " + std::to_string(rg));
    }
  }
}

struct Variant {
  Compression compression;
  bool dictionary;
  int64_t page_bytes;
  int64_t dictionary_page_bytes;
};

TEST(ParquetWriter, RewritesEveryFixtureColumn) {
  const Variant variants[] = {{Compression::kZstd, true, 1 << 20, 1 << 20},
                              {Compression::kSnappy, true, 512, 256},  // many pages, dictionary fallback
                              {Compression::kUncompressed, false, 1 << 20, 1 << 20}};
  for (const char* name : {"duckdb_zstd_v2.parquet", "pqwasm_snappy_v1.parquet", "pqwasm_gzip_v2.parquet"}) {
    auto src = ParquetFile::Open(FixtureDir() + "/" + name);
    ASSERT_TRUE(src.ok()) << src.status();
    for (const Variant& v : variants) {
      ParquetWriteOptions o;
      o.compression = v.compression;
      o.dictionary = v.dictionary;
      o.page_bytes = v.page_bytes;
      o.dictionary_page_bytes = v.dictionary_page_bytes;
      std::string bytes = Rewrite(**src, o);
      auto back = ParquetFile::OpenBuffer(name, std::vector<uint8_t>(bytes.begin(), bytes.end()));
      ASSERT_TRUE(back.ok()) << back.status();
      SCOPED_TRACE(std::string(name) + " " + std::string(CompressionName(v.compression)));
      ExpectSameFile(**src, **back);
    }
  }
}

// A string column with `distinct` values cycling over `rows` rows.
ColumnData Strings(int64_t rows, int64_t distinct, int64_t null_every = 0) {
  ColumnData d;
  d.kind = ValueKind::kBinary;
  d.num_rows = rows;
  d.offsets.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    const bool null = null_every > 0 && r % null_every == 0;
    const std::string v = null ? "" : "value-" + std::to_string(r % distinct);
    d.bytes.insert(d.bytes.end(), v.begin(), v.end());
    d.offsets.push_back(static_cast<int64_t>(d.bytes.size()));
    if (null_every > 0) d.validity.push_back(null ? 0 : 1);
  }
  return d;
}

ColumnData Int64s(std::vector<int64_t> v) {
  ColumnData d;
  d.kind = ValueKind::kInt64;
  d.num_rows = static_cast<int64_t>(v.size());
  d.int64s.assign(v.begin(), v.end());
  return d;
}

internal::FileMetaData Footer(const std::string& bytes) {
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + bytes.size() - 8 - len);
  internal::ThriftReader r(p, len);
  internal::FileMetaData m;
  EXPECT_TRUE(internal::ReadFileMetaData(r, &m).ok());
  return m;
}

struct Written {
  std::string bytes;
  std::vector<std::vector<std::string>> encodings;
  std::vector<bool> utf8;
};

Written WriteOne(const WriteColumn& c, const ColumnData& d, ParquetWriteOptions o = {}) {
  StringSink sink;
  auto w = ParquetWriter::Create({c}, o, &sink);
  EXPECT_TRUE(w.ok()) << w.status();
  Status s = (*w)->WriteRowGroup(std::vector<ColumnData>{d});
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE((*w)->Close().ok());
  return {sink.Take(), (*w)->data_page_encodings(), (*w)->utf8_columns()};
}

void ExpectReadsBack(const Written& w, const ColumnData& d) {
  auto f = ParquetFile::OpenBuffer("mem", std::vector<uint8_t>(w.bytes.begin(), w.bytes.end()));
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectSameColumn(d, *(*f)->ReadColumn(0, 0), "column");
}

TEST(ParquetWriter, DictionaryFallsBackToPlainWhenItGrowsTooLarge) {
  const ColumnData d = Strings(20000, 20000);
  ParquetWriteOptions o;
  o.dictionary_page_bytes = 4096;
  o.page_bytes = 8192;
  // All-distinct values: a dictionary is no smaller, so PLAIN from the start.
  Written w = WriteOne({.name = "s", .type = PhysicalType::kByteArray, .utf8 = true}, d, o);
  EXPECT_EQ(w.encodings[0], (std::vector<std::string>{"PLAIN"}));
  ExpectReadsBack(w, d);
  // Repeats early, new values later: dictionary pages, then PLAIN once it passes 4 KiB.
  ColumnData mixed = Strings(20000, 10);
  const ColumnData tail = Strings(20000, 20000);
  mixed.offsets.resize(10001);
  mixed.bytes.resize(static_cast<size_t>(mixed.offsets.back()));
  for (int64_t r = 10000; r < 20000; ++r) {
    const std::string_view v = tail.StringAt(r);
    mixed.bytes.insert(mixed.bytes.end(), v.begin(), v.end());
    mixed.offsets.push_back(static_cast<int64_t>(mixed.bytes.size()));
  }
  w = WriteOne({.name = "s", .type = PhysicalType::kByteArray, .utf8 = true}, mixed, o);
  EXPECT_EQ(w.encodings[0], (std::vector<std::string>{"RLE_DICTIONARY", "PLAIN"}));
  ExpectReadsBack(w, mixed);
  const internal::FileMetaData m = Footer(w.bytes);
  ASSERT_EQ(m.row_groups.size(), 1u);
  const internal::ColumnMetaData& cm = m.row_groups[0].columns[0].meta_data;
  EXPECT_TRUE(cm.dictionary_page_offset.has_value());
  EXPECT_EQ(cm.encodings, (std::vector<int32_t>{internal::kPlain, internal::kRle, internal::kRleDictionary}));
}

TEST(ParquetWriter, StatisticsAndSchema) {
  Written w = WriteOne({.name = "x"}, Int64s({5, -3, 9, 0}));
  internal::FileMetaData m = Footer(w.bytes);
  EXPECT_TRUE(m.type_defined_order);
  EXPECT_EQ(m.num_rows, 4);
  const internal::Statistics& st = *m.row_groups[0].columns[0].meta_data.statistics;
  int64_t lo, hi;
  std::memcpy(&lo, st.min_value->data(), 8);
  std::memcpy(&hi, st.max_value->data(), 8);
  EXPECT_EQ(lo, -3);
  EXPECT_EQ(hi, 9);
  EXPECT_EQ(st.null_count, 0);

  const ColumnData s = Strings(10, 3, /*null_every=*/4);
  w = WriteOne({.name = "s", .type = PhysicalType::kByteArray, .utf8 = true}, s);
  m = Footer(w.bytes);
  const internal::Statistics& ss = *m.row_groups[0].columns[0].meta_data.statistics;
  EXPECT_EQ(ss.null_count, 3);
  EXPECT_EQ(ss.min_value, "value-0");
  EXPECT_EQ(ss.max_value, "value-2");
  EXPECT_EQ(m.schema[1].logical_type, internal::kLString);
  ExpectReadsBack(w, s);
}

TEST(ParquetWriter, InvalidUtf8StaysBinary) {
  ColumnData d = Strings(3, 3);
  d.bytes[0] = static_cast<uint8_t>(0xff);
  Written w = WriteOne({.name = "s", .type = PhysicalType::kByteArray, .utf8 = true}, d);
  EXPECT_EQ(w.utf8, std::vector<bool>{false});
  auto f = ParquetFile::OpenBuffer("mem", std::vector<uint8_t>(w.bytes.begin(), w.bytes.end()));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->schema()[0].logical_type, LogicalType::kNone);
  ExpectReadsBack(w, d);
}

TEST(ParquetWriter, ListsOfEveryShape) {
  // Null list, empty list, null element, present elements; many pages of small lists.
  ColumnData d;
  d.kind = ValueKind::kBinary;
  d.is_list = true;
  d.num_rows = 3000;
  d.offsets.push_back(0);
  d.list_offsets.push_back(0);
  for (int64_t r = 0; r < d.num_rows; ++r) {
    d.list_validity.push_back(r % 7 == 0 ? 0 : 1);
    const int64_t n = r % 7 == 0 ? 0 : r % 4;
    for (int64_t k = 0; k < n; ++k) {
      const bool null = (r + k) % 5 == 0;
      const std::string v = null ? "" : "t" + std::to_string((r + k) % 13);
      d.bytes.insert(d.bytes.end(), v.begin(), v.end());
      d.offsets.push_back(static_cast<int64_t>(d.bytes.size()));
      d.validity.push_back(null ? 0 : 1);
    }
    d.list_offsets.push_back(static_cast<int64_t>(d.offsets.size()) - 1);
  }
  ParquetWriteOptions o;
  o.page_bytes = 1000;
  Written w = WriteOne({.name = "tags", .type = PhysicalType::kByteArray, .utf8 = true, .is_list = true}, d, o);
  ExpectReadsBack(w, d);
}

TEST(ParquetWriter, EmptyFileHasNoRowGroups) {
  StringSink sink;
  auto w = ParquetWriter::Create({{.name = "x"}}, {}, &sink);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ((*w)->Close().code(), StatusCode::kFailedPrecondition);
  const std::string& b = sink.data();
  auto f = ParquetFile::OpenBuffer("mem", std::vector<uint8_t>(b.begin(), b.end()));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->num_rows(), 0);
  EXPECT_EQ((*f)->num_row_groups(), 0);
}

// Each inconsistent input: InvalidArgument naming the column, nothing written past "PAR1".
TEST(ParquetWriter, RejectsInconsistentInput) {
  struct Case {
    const char* what;
    WriteColumn column;
    ColumnData data;
    const char* message;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, WriteColumn c, ColumnData d, const char* msg) {
    cases.push_back({what, std::move(c), std::move(d), msg});
  };
  const WriteColumn str{.name = "s", .type = PhysicalType::kByteArray};
  add("kind", {.name = "x"}, Strings(2, 2), "values of the wrong kind");
  ColumnData d = Strings(2, 2);
  d.offsets.back() = 1 << 20;
  add("offset past bytes", str, d, "string offsets outside the byte buffer");
  d = Strings(3, 3);
  d.offsets[1] = d.offsets[2] + 1;
  add("decreasing offsets", str, d, "string offsets decrease at slot 1");
  d = Strings(2, 2);
  d.validity = {1};
  add("validity size", str, d, "validity has 1 entries for 2 values");
  d = Int64s({1, 2, 3});
  d.num_rows = 5;
  add("rows vs values", {.name = "x"}, d, "3 values for 5 rows");
  d = Int64s({1, 2});
  d.validity = {1, 0};
  add("null in required", {.name = "x", .optional = false}, d, "a null in a required column");
  d = Int64s({1, 2});
  d.is_list = true;
  d.list_offsets = {0, 5};
  d.num_rows = 1;
  add("list offsets", {.name = "x", .is_list = true}, d, "list offsets do not cover");
  d.list_offsets = {0, 2, 1, 2};
  d.num_rows = 3;
  add("list offsets decrease", {.name = "x", .is_list = true}, d, "list offsets decrease at row 1");
  d.list_offsets = {0, 2};
  d.num_rows = 1;
  d.list_validity = {0};
  add("null list with elements", {.name = "x", .is_list = true}, d, "null list at row 0 has elements");
  d = Int64s({1});
  d.indexed = true;
  add("dictionary form", {.name = "x"}, d, "dictionary form");
  add("list as plain", {.name = "x", .is_list = true}, Int64s({1}), "a list column given plain values");
  add("no rows", {.name = "x"}, Int64s({}), "at least one row");
  for (const Case& c : cases) {
    StringSink sink;
    auto w = ParquetWriter::Create({c.column}, {}, &sink);
    ASSERT_TRUE(w.ok()) << c.what;
    Status s = (*w)->WriteRowGroup(std::vector<ColumnData>{c.data});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.what << ": " << s;
    EXPECT_NE(s.message().find("column '" + c.column.name + "'"), std::string::npos) << s;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s;
    EXPECT_EQ(sink.data(), "PAR1") << c.what;
  }
}

TEST(ParquetWriter, RejectsBadSchemaAndOptions) {
  StringSink sink;
  EXPECT_EQ(ParquetWriter::Create({}, {}, &sink).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParquetWriter::Create({{.name = "a"}, {.name = "a"}}, {}, &sink).status().message(),
            "parquet writer: column 'a' appears twice");
  EXPECT_EQ(ParquetWriter::Create({{.name = "a", .type = PhysicalType::kInt96}}, {}, &sink).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParquetWriter::Create({{.name = "a", .utf8 = true}}, {}, &sink).status().code(),
            StatusCode::kInvalidArgument);
  ParquetWriteOptions o;
  o.zstd_level = 99;
  EXPECT_EQ(ParquetWriter::Create({{.name = "a"}}, o, &sink).status().code(), StatusCode::kInvalidArgument);
  auto w = ParquetWriter::Create({{.name = "a"}, {.name = "b"}}, {}, &sink);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->WriteRowGroup(std::vector<ColumnData>{Int64s({1})}).message(),
            "parquet writer: a row group of 1 columns for a schema of 2");
  EXPECT_EQ((*w)->WriteRowGroup(std::vector<ColumnData>{Int64s({1}), Int64s({1, 2})}).message(),
            "parquet writer: column 'b' has 2 rows, column 'a' 1");
  EXPECT_EQ(ParseCompression("lzo").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseCompression("uncompressed"), Compression::kUncompressed);
}

// tests/golden/parquet/: the DuckDB fixture written by this writer with fixed options, one file
// per codec. Each must still read with the fixture's values, and the writer must reproduce it
// byte for byte (a change of the bytes is a format change to note in docs/formats/parquet.md).
ParquetWriteOptions GoldenOptions(Compression c) {
  ParquetWriteOptions o;
  o.compression = c;
  o.page_bytes = 4096;              // several pages per chunk
  o.dictionary_page_bytes = 1024;   // tags and c_low stay dictionary-encoded; s_high falls back
  o.created_by = "rectrain golden";
  return o;
}

TEST(ParquetWriter, GoldenFilesReadAndTheWriterReproducesThem) {
  auto fixture = ParquetFile::Open(FixtureDir() + "/duckdb_snappy_v1.parquet");
  ASSERT_TRUE(fixture.ok());
  for (Compression c : {Compression::kZstd, Compression::kSnappy, Compression::kUncompressed}) {
    const std::string path =
        std::string(RECTRAIN_GOLDEN_DIR) + "/parquet/fixture_" + std::string(CompressionName(c)) + ".parquet";
    const std::string bytes = Rewrite(**fixture, GoldenOptions(c));
    if (std::getenv("RECTRAIN_UPDATE_GOLDEN") != nullptr) {
      FILE* f = std::fopen(path.c_str(), "wb");
      ASSERT_NE(f, nullptr) << path;
      ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
      std::fclose(f);
    }
    const std::vector<uint8_t> golden = ReadFileBytes(path);
    auto g = ParquetFile::OpenBuffer(path, golden);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->created_by(), "rectrain golden");
    ExpectSameFile(**fixture, **g);
    EXPECT_TRUE(bytes == std::string(golden.begin(), golden.end()))
        << path << ": the writer's output changed (" << bytes.size() << " bytes, golden " << golden.size()
        << "); see tests/golden/parquet/README.md";
  }
}

}  // namespace
}  // namespace rectrain::io::parquet
