// The compact-protocol writer against the reader beside it, and the metadata structs through both.
#include "rectrain/io/parquet/internal/thrift_compact.h"

#include <gtest/gtest.h>

#include <string>

#include "rectrain/io/parquet/internal/metadata.h"

namespace rectrain::io::parquet::internal {
namespace {

const uint8_t* U(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(ThriftWriter, EveryTypeReadsBack) {
  std::string bytes;
  ThriftWriter w(&bytes);
  w.BeginStruct();
  w.FieldI32(1, -7);
  w.FieldI64(2, int64_t{1} << 62);
  w.FieldBool(3, true);
  w.FieldBool(4, false);
  w.FieldBinary(20, std::string("a\0b", 3));  // delta 16: the long field header
  w.FieldList(21, TType::kI32, 20);           // 20 elements: the long list header
  for (int i = 0; i < 20; ++i) w.ListI32(i - 10);
  w.FieldStruct(5);  // a field id below the previous one: written in full
  w.FieldI32(32767, INT32_MIN);
  w.EndStruct();
  w.EndStruct();
  EXPECT_EQ(w.depth(), 0);

  ThriftReader r(U(bytes), static_cast<int64_t>(bytes.size()));
  ASSERT_TRUE(r.BeginStruct().ok());
  TType t;
  int16_t id;
  int32_t i32;
  int64_t i64;
  bool b;
  std::string s;
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  ASSERT_EQ(id, 1);
  ASSERT_TRUE(r.ReadI32(t, &i32).ok());
  EXPECT_EQ(i32, -7);
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  ASSERT_TRUE(r.ReadI64(t, &i64).ok());
  EXPECT_EQ(i64, int64_t{1} << 62);
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  ASSERT_TRUE(r.ReadBool(t, &b).ok());
  EXPECT_TRUE(b);
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  ASSERT_TRUE(r.ReadBool(t, &b).ok());
  EXPECT_FALSE(b);
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(id, 20);
  ASSERT_TRUE(r.ReadString(t, &s).ok());
  EXPECT_EQ(s, std::string("a\0b", 3));
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(id, 21);
  TType et;
  int64_t n;
  ASSERT_TRUE(r.ReadListHeader(t, &et, &n).ok());
  ASSERT_EQ(n, 20);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(r.ReadListI32(et, &i32).ok());
    EXPECT_EQ(i32, i - 10);
  }
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(id, 5);
  ASSERT_EQ(t, TType::kStruct);
  ASSERT_TRUE(r.BeginStruct().ok());
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(id, 32767);
  ASSERT_TRUE(r.ReadI32(t, &i32).ok());
  EXPECT_EQ(i32, INT32_MIN);
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(t, TType::kStop);
  r.EndStruct();
  ASSERT_TRUE(r.ReadFieldHeader(&t, &id).ok());
  EXPECT_EQ(t, TType::kStop);
  EXPECT_EQ(r.remaining(), 0);
}

TEST(ThriftWriter, FileMetaDataRoundTrip) {
  FileMetaData m;
  m.version = 2;
  SchemaElement root;
  root.name = "schema";
  root.num_children = 1;
  SchemaElement leaf;
  leaf.name = "c";
  leaf.type = kTByteArray;
  leaf.repetition_type = kOptional;
  leaf.converted_type = kCUtf8;
  leaf.logical_type = kLString;
  m.schema = {root, leaf};
  m.num_rows = 3;
  RowGroup g;
  g.num_rows = 3;
  g.total_byte_size = 99;
  g.file_offset = 4;
  g.ordinal = 0;
  ColumnChunk c;
  c.file_offset = 4;
  c.meta_data.type = kTByteArray;
  c.meta_data.encodings = {kPlain, kRle, kRleDictionary};
  c.meta_data.path_in_schema = {"c"};
  c.meta_data.codec = kZstd;
  c.meta_data.num_values = 3;
  c.meta_data.total_uncompressed_size = 50;
  c.meta_data.total_compressed_size = 40;
  c.meta_data.data_page_offset = 20;
  c.meta_data.dictionary_page_offset = 4;
  c.meta_data.statistics = Statistics{1, "zz", "aa"};
  g.columns = {c};
  m.row_groups = {g};
  m.created_by = "rectrain test";
  m.key_value_metadata = {{"k", "v"}};
  m.type_defined_order = true;

  std::string bytes;
  ThriftWriter w(&bytes);
  WriteFileMetaData(m, w);
  ThriftReader r(U(bytes), static_cast<int64_t>(bytes.size()));
  FileMetaData back;
  ASSERT_TRUE(ReadFileMetaData(r, &back).ok());
  EXPECT_EQ(r.remaining(), 0);
  EXPECT_EQ(back.version, 2);
  ASSERT_EQ(back.schema.size(), 2u);
  EXPECT_EQ(back.schema[1].name, "c");
  EXPECT_EQ(back.schema[1].logical_type, kLString);
  EXPECT_EQ(back.schema[1].converted_type, kCUtf8);
  ASSERT_EQ(back.row_groups.size(), 1u);
  const ColumnMetaData& cm = back.row_groups[0].columns[0].meta_data;
  EXPECT_EQ(cm.encodings, (std::vector<int32_t>{kPlain, kRle, kRleDictionary}));
  EXPECT_EQ(cm.dictionary_page_offset, 4);
  EXPECT_EQ(cm.data_page_offset, 20);
  ASSERT_TRUE(cm.statistics.has_value());
  EXPECT_EQ(cm.statistics->null_count, 1);
  EXPECT_EQ(cm.statistics->min_value, "aa");
  EXPECT_EQ(cm.statistics->max_value, "zz");
  EXPECT_EQ(back.row_groups[0].total_byte_size, 99);
  EXPECT_EQ(back.row_groups[0].ordinal, 0);
  EXPECT_EQ(back.row_groups[0].columns[0].file_offset, 4);
  EXPECT_EQ(back.created_by, "rectrain test");
  EXPECT_EQ(back.key_value_metadata, m.key_value_metadata);
  EXPECT_TRUE(back.type_defined_order);

  PageHeader h;
  h.type = kDataPage;
  h.uncompressed_page_size = 10;
  h.compressed_page_size = 8;
  h.data_page_header = DataPageHeader{5, kRleDictionary, kRle, kRle};
  bytes.clear();
  WritePageHeader(h, w);
  ThriftReader pr(U(bytes), static_cast<int64_t>(bytes.size()));
  PageHeader hb;
  ASSERT_TRUE(ReadPageHeader(pr, &hb).ok());
  ASSERT_TRUE(hb.data_page_header.has_value());
  EXPECT_EQ(hb.data_page_header->num_values, 5);
  EXPECT_EQ(hb.data_page_header->encoding, kRleDictionary);
  EXPECT_EQ(hb.compressed_page_size, 8);
}

}  // namespace
}  // namespace rectrain::io::parquet::internal
