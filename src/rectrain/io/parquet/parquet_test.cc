// Conformance tests against files from independent writers (DuckDB, parquet-wasm/arrow-rs; see
// tests/parquet_fixtures/make_fixtures.mjs) comparing every value with the generating formula,
// plus exact-message error tests over small files built by a hand-written writer below.
#include "rectrain/io/parquet/parquet_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "parquet_test_util.h"

namespace rectrain::io::parquet {
namespace {

using testing_util::FixtureDir;
using testing_util::FixtureNames;
using testing_util::ReadFileBytes;

// ---- The formulas of make_fixtures.mjs (row index i) ----
constexpr int64_t kRows = 2200;

std::optional<int64_t> ExpI64(int64_t i) {
  if (i % 7 == 0) return std::nullopt;
  return (i % 2 == 0 ? 1 : -1) * i * 1000000007LL;
}
std::optional<float> ExpF32(int64_t i) {
  if (i % 11 == 0) return std::nullopt;
  return static_cast<float>((i - 2500) / 8.0);
}
std::optional<bool> ExpBool(int64_t i) {
  if (i % 19 == 0) return std::nullopt;
  return i % 3 == 1;
}
std::optional<std::string> ExpCLow(int64_t i) {
  if (i % 13 == 0) return std::nullopt;
  if (i % 50 == 7) return std::string("cat_7_\xc3\xa9\xe2\x82\xac");  // "cat_7_é€"
  return "cat_" + std::to_string(i % 50);
}
std::string ExpSHigh(int64_t i) {
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08llx",
                static_cast<unsigned long long>((i * 2654435761LL) % 4294967296LL));
  return "row-" + std::to_string(i) + "-" + hex;
}
std::optional<std::string> ExpFixed(int64_t i) {
  if (i % 23 == 0) return std::nullopt;
  std::string s(16, '\0');
  uint64_t a = static_cast<uint64_t>(i * 1000003), b = static_cast<uint64_t>(i * 7 + 1);
  for (int k = 0; k < 8; ++k) {
    s[k] = static_cast<char>(a >> (56 - 8 * k));
    s[8 + k] = static_cast<char>(b >> (56 - 8 * k));
  }
  return s;
}
std::optional<std::vector<std::optional<int64_t>>> ExpSeq(int64_t i) {
  if (i % 17 == 0) return std::nullopt;
  if (i % 5 == 0) return std::vector<std::optional<int64_t>>{};
  if (i % 9 == 0) return std::vector<std::optional<int64_t>>{i, std::nullopt, -i};
  return std::vector<std::optional<int64_t>>{i, i + 1, i + 2};
}
std::optional<std::vector<std::optional<std::string>>> ExpTags(int64_t i) {
  if (i % 19 == 0) return std::nullopt;
  std::vector<std::optional<std::string>> v;
  if (i % 4 == 0) return v;
  if (i % 6 == 0) {
    v.push_back("t" + std::to_string(i % 10));
    v.push_back(std::nullopt);
    return v;
  }
  for (int64_t k = 0; k < i % 4; ++k) v.push_back("t" + std::to_string((i + k) % 10));
  return v;
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, EveryValueMatchesTheFormula) {
  const std::string path = FixtureDir() + "/" + GetParam();
  Result<std::unique_ptr<ParquetFile>> opened = ParquetFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const ParquetFile& file = **opened;
  ASSERT_EQ(file.num_rows(), kRows);
  ASSERT_EQ(file.num_columns(), 11);
  const char* names[] = {"label", "i32", "i64", "f32", "f64", "b",
                         "c_low", "s_high", "fixed", "seq", "tags"};
  const PhysicalType types[] = {PhysicalType::kInt32, PhysicalType::kInt32, PhysicalType::kInt64,
                                PhysicalType::kFloat, PhysicalType::kDouble,
                                PhysicalType::kBoolean, PhysicalType::kByteArray,
                                PhysicalType::kByteArray, PhysicalType::kFixedLenByteArray,
                                PhysicalType::kInt64, PhysicalType::kByteArray};
  for (int c = 0; c < 11; ++c) {
    const ColumnSchema& col = file.schema()[c];
    EXPECT_EQ(col.name, names[c]);
    EXPECT_EQ(col.physical_type, types[c]) << col.name;
    EXPECT_EQ(col.is_list, c >= 9) << col.name;
    EXPECT_TRUE(col.unsupported_reason.empty()) << col.name << ": " << col.unsupported_reason;
  }
  for (int c : {6, 7, 10}) EXPECT_EQ(file.schema()[c].logical_type, LogicalType::kString);
  EXPECT_EQ(file.schema()[8].type_length, 16);
  for (int c : {2, 3, 5, 6, 8, 9, 10}) EXPECT_TRUE(file.schema()[c].optional) << names[c];
  EXPECT_TRUE(file.schema()[9].element_optional);
  EXPECT_EQ(file.FindColumn("tags").value(), 10);
  EXPECT_EQ(file.FindColumn("seq.list.element").value(), 9);
  ASSERT_GE(file.num_row_groups(), 2);

  ColumnChunkReader reader(&file);
  ColumnData d;
  int64_t row0 = 0;
  for (int rg = 0; rg < file.num_row_groups(); ++rg) {
    const int64_t n = file.row_group_num_rows(rg);
    for (int c = 0; c < 11; ++c) {
      Status st = reader.Read(rg, c, &d);
      ASSERT_TRUE(st.ok()) << st;
      ASSERT_EQ(d.num_rows, n);
      SCOPED_TRACE(std::string(names[c]) + " row group " + std::to_string(rg));
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = row0 + r;
        switch (c) {
          case 0:
            ASSERT_EQ(d.int32s[r], i % 3 == 0 ? 1 : 0) << i;
            ASSERT_FALSE(d.IsNull(r));
            break;
          case 1:
            ASSERT_EQ(d.int32s[r], (i * 1103515245LL + 12345) % 2147483648LL - 1073741824) << i;
            break;
          case 2: {
            auto e = ExpI64(i);
            ASSERT_EQ(d.IsNull(r), !e.has_value()) << i;
            ASSERT_EQ(d.int64s[r], e.value_or(0)) << i;
            break;
          }
          case 3: {
            auto e = ExpF32(i);
            ASSERT_EQ(d.IsNull(r), !e.has_value()) << i;
            ASSERT_EQ(d.floats[r], e.value_or(0.0f)) << i;
            break;
          }
          case 4:
            ASSERT_EQ(d.doubles[r], static_cast<double>(i) / 3.0) << i;
            break;
          case 5: {
            auto e = ExpBool(i);
            ASSERT_EQ(d.IsNull(r), !e.has_value()) << i;
            ASSERT_EQ(d.bools[r], e.value_or(false) ? 1 : 0) << i;
            break;
          }
          case 6: {
            auto e = ExpCLow(i);
            ASSERT_EQ(d.IsNull(r), !e.has_value()) << i;
            ASSERT_EQ(d.StringAt(r), e.value_or("")) << i;
            break;
          }
          case 7:
            ASSERT_EQ(d.StringAt(r), ExpSHigh(i)) << i;
            break;
          case 8: {
            auto e = ExpFixed(i);
            ASSERT_EQ(d.IsNull(r), !e.has_value()) << i;
            ASSERT_EQ(d.StringAt(r), e.value_or("")) << i;
            break;
          }
          case 9: {
            auto e = ExpSeq(i);
            ASSERT_EQ(d.IsNullList(r), !e.has_value()) << i;
            const int64_t b = d.list_offsets[r], len = d.list_offsets[r + 1] - b;
            ASSERT_EQ(len, e ? static_cast<int64_t>(e->size()) : 0) << i;
            for (int64_t k = 0; k < len; ++k) {
              ASSERT_EQ(d.IsNull(b + k), !(*e)[k].has_value()) << i << "[" << k << "]";
              ASSERT_EQ(d.int64s[b + k], (*e)[k].value_or(0)) << i << "[" << k << "]";
            }
            break;
          }
          case 10: {
            auto e = ExpTags(i);
            ASSERT_EQ(d.IsNullList(r), !e.has_value()) << i;
            const int64_t b = d.list_offsets[r], len = d.list_offsets[r + 1] - b;
            ASSERT_EQ(len, e ? static_cast<int64_t>(e->size()) : 0) << i;
            for (int64_t k = 0; k < len; ++k) {
              ASSERT_EQ(d.IsNull(b + k), !(*e)[k].has_value()) << i << "[" << k << "]";
              ASSERT_EQ(d.StringAt(b + k), (*e)[k].value_or("")) << i << "[" << k << "]";
            }
            break;
          }
        }
      }
      if (c == 9 || c == 10) {
        ASSERT_EQ(static_cast<int64_t>(d.list_offsets.size()), n + 1);
      } else {
        ASSERT_EQ(d.num_slots(), n);
      }
    }
    row0 += n;
  }
  EXPECT_EQ(row0, kRows);
}

TEST_P(FixtureTest, OpenBufferMatchesOpenAndRowGroupsReadIndependently) {
  const std::string path = FixtureDir() + "/" + GetParam();
  auto a = ParquetFile::Open(path);
  auto b = ParquetFile::OpenBuffer("mem", ReadFileBytes(path));
  ASSERT_TRUE(a.ok() && b.ok());
  // Read the last row group first: each chunk is independent of the others.
  for (int rg = (*a)->num_row_groups() - 1; rg >= 0; --rg) {
    for (int c : {2, 6, 10}) {
      auto x = (*a)->ReadColumn(rg, c);
      auto y = (*b)->ReadColumn(rg, c);
      ASSERT_TRUE(x.ok() && y.ok());
      EXPECT_EQ(x->int64s, y->int64s);
      EXPECT_EQ(x->bytes, y->bytes);
      EXPECT_EQ(x->offsets, y->offsets);
      EXPECT_EQ(x->validity, y->validity);
      EXPECT_EQ(x->list_offsets, y->list_offsets);
    }
  }
}

// Dictionary form (set_dictionary_form) holds the same value in every slot as the expanded read:
// every column (nulls, lists, fixed-width, PLAIN fallback pages after the dictionary) of every
// row group of every fixture.
TEST_P(FixtureTest, DictionaryFormHoldsTheSameValues) {
  const std::string path = FixtureDir() + "/" + GetParam();
  auto opened = ParquetFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const ParquetFile& file = **opened;
  ColumnChunkReader plain(&file), dict(&file);
  dict.set_dictionary_form(true);
  ColumnData a, b;
  int indexed_chunks = 0, fallback_chunks = 0, c_low_indexed = 0;
  // Read twice over so that buffers reused from a different column or mode must be reset.
  for (int pass = 0; pass < 2; ++pass) {
    for (int rg = 0; rg < file.num_row_groups(); ++rg) {
      for (int c = 0; c < file.num_columns(); ++c) {
        SCOPED_TRACE(file.schema()[c].name + " row group " + std::to_string(rg));
        ASSERT_TRUE(plain.Read(rg, c, &a).ok());
        ASSERT_TRUE(dict.Read(rg, c, &b).ok());
        ASSERT_FALSE(a.indexed);
        ASSERT_EQ(a.kind, b.kind);
        ASSERT_EQ(a.num_rows, b.num_rows);
        ASSERT_EQ(a.num_slots(), b.num_slots());
        EXPECT_EQ(a.validity, b.validity);
        EXPECT_EQ(a.list_offsets, b.list_offsets);
        EXPECT_EQ(a.list_validity, b.list_validity);
        if (!b.indexed) {
          EXPECT_EQ(b.num_entries(), b.num_slots());
          EXPECT_TRUE(b.indices.empty());
        } else {
          ++indexed_chunks;
          if (c == 6) ++c_low_indexed;
          ASSERT_EQ(static_cast<int64_t>(b.indices.size()), b.num_slots());
          ASSERT_GE(b.num_entries(), b.dictionary_size + 1);
          if (b.num_entries() > b.dictionary_size + 1) ++fallback_chunks;
        }
        for (int64_t i = 0; i < a.num_slots(); ++i) {
          const int64_t e = b.Entry(i);
          ASSERT_LT(e, b.num_entries()) << i;
          if (b.indexed) {
            ASSERT_EQ(e == 0, b.IsNull(i)) << "null slots, and only they, use entry 0";
          }
          switch (a.kind) {
            case ValueKind::kBool: ASSERT_EQ(a.bools[i], b.bools[e]) << i; break;
            case ValueKind::kInt32: ASSERT_EQ(a.int32s[i], b.int32s[e]) << i; break;
            case ValueKind::kInt64: ASSERT_EQ(a.int64s[i], b.int64s[e]) << i; break;
            case ValueKind::kFloat: ASSERT_EQ(a.floats[i], b.floats[e]) << i; break;
            case ValueKind::kDouble: ASSERT_EQ(a.doubles[i], b.doubles[e]) << i; break;
            case ValueKind::kBinary: ASSERT_EQ(a.StringAt(i), b.StringAt(i)) << i; break;
          }
        }
      }
    }
  }
  // Both writers dictionary-encode c_low (DuckDB not in its last, small row group);
  // parquet-wasm's small dictionary limit makes s_high fall back to PLAIN pages inside a chunk.
  EXPECT_GE(c_low_indexed, 2 * (file.num_row_groups() - 1));
  EXPECT_GT(indexed_chunks, c_low_indexed);
  if (GetParam().rfind("pqwasm", 0) == 0) {
    EXPECT_GT(fallback_chunks, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWriters, FixtureTest, ::testing::ValuesIn(FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param.substr(0, param_info.param.size() - 8);
                         });

// ---- A minimal writer for exact error cases ----
class ThriftWriter {
 public:
  void I32(int16_t id, int64_t v) { Field(id, 5), Varint(Zigzag(v)); }
  void I64(int16_t id, int64_t v) { Field(id, 6), Varint(Zigzag(v)); }
  void Str(int16_t id, const std::string& s) {
    Field(id, 8);
    Varint(s.size());
    out_ += s;
  }
  void BeginStruct(int16_t id) {
    Field(id, 12);
    last_.push_back(0);
  }
  void BeginListOfStructs(int16_t id, int n) {
    Field(id, 9);
    ListHeader(12, n);
  }
  void BeginListElementStruct() { last_.push_back(0); }
  void ListOfI32(int16_t id, const std::vector<int>& v) {
    Field(id, 9);
    ListHeader(5, static_cast<int>(v.size()));
    for (int x : v) Varint(Zigzag(x));
  }
  void ListOfStr(int16_t id, const std::vector<std::string>& v) {
    Field(id, 9);
    ListHeader(8, static_cast<int>(v.size()));
    for (const auto& s : v) {
      Varint(s.size());
      out_ += s;
    }
  }
  void End() {
    out_ += '\0';
    last_.pop_back();
  }
  std::string Take() { return std::move(out_); }

 private:
  static uint64_t Zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ (v >> 63); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  void ListHeader(int t, int n) {
    if (n < 15) {
      out_ += static_cast<char>((n << 4) | t);
    } else {
      out_ += static_cast<char>(0xf0 | t);
      Varint(n);
    }
  }
  void Field(int16_t id, int t) {
    int delta = id - last_.back();
    if (delta > 0 && delta <= 15) {
      out_ += static_cast<char>((delta << 4) | t);
    } else {
      out_ += static_cast<char>(t);
      Varint(Zigzag(id));
    }
    last_.back() = id;
  }
  std::string out_;
  std::vector<int16_t> last_{0};
};

// Page header + body (uncompressed). type 0 = data v1, 2 = dictionary.
std::string Page(int type, int num_values, int encoding, const std::string& body,
                 int declared_size = -1) {
  ThriftWriter w;
  w.I32(1, type);
  w.I32(2, static_cast<int>(body.size()));
  w.I32(3, declared_size >= 0 ? declared_size : static_cast<int>(body.size()));
  if (type == 0) {
    w.BeginStruct(5);
    w.I32(1, num_values);
    w.I32(2, encoding);
    w.I32(3, 3);
    w.I32(4, 3);
    w.End();
  } else {
    w.BeginStruct(7);
    w.I32(1, num_values);
    w.I32(2, 0);
    w.End();
  }
  w.End();
  return w.Take() + body;
}

std::string PlainStrings(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) {
    uint32_t n = static_cast<uint32_t>(x.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
    s += x;
  }
  return s;
}

struct TestColumn {
  std::string name;
  int type = 6;
  int repetition = 0;
  int converted = 0;  // UTF8 for byte arrays; -1 none
  std::string chunk;  // concatenated pages
  int64_t num_values = 0;
  bool has_dict = false;
  bool as_struct = false;  // wrap in a struct group (unsupported shape)
};

std::vector<uint8_t> BuildFile(const std::vector<TestColumn>& cols, int64_t num_rows) {
  std::string data = "PAR1";
  std::vector<int64_t> offsets;
  for (const auto& c : cols) {
    offsets.push_back(static_cast<int64_t>(data.size()));
    data += c.chunk;
  }
  ThriftWriter w;
  w.I32(1, 1);
  int n_schema = 1;
  for (const auto& c : cols) n_schema += c.as_struct ? 2 : 1;
  w.BeginListOfStructs(2, n_schema);
  w.BeginListElementStruct();
  w.Str(4, "schema");
  w.I32(5, static_cast<int>(cols.size()));
  w.End();
  for (const auto& c : cols) {
    if (c.as_struct) {
      w.BeginListElementStruct();
      w.I32(3, 1);
      w.Str(4, c.name);
      w.I32(5, 1);
      w.End();
    }
    w.BeginListElementStruct();
    w.I32(1, c.type);
    if (c.type == 7) w.I32(2, 16);
    w.I32(3, c.repetition);
    w.Str(4, c.as_struct ? "inner" : c.name);
    if (c.converted >= 0 && c.type == 6) w.I32(6, c.converted);
    w.End();
  }
  w.I64(3, num_rows);
  w.BeginListOfStructs(4, 1);
  w.BeginListElementStruct();
  w.BeginListOfStructs(1, static_cast<int>(cols.size()));
  for (size_t i = 0; i < cols.size(); ++i) {
    const auto& c = cols[i];
    w.BeginListElementStruct();
    w.I64(2, offsets[i]);
    w.BeginStruct(3);
    w.I32(1, c.type);
    w.ListOfI32(2, {0});
    w.ListOfStr(3, {c.name});
    w.I32(4, 0);
    w.I64(5, c.num_values);
    w.I64(6, static_cast<int64_t>(c.chunk.size()));
    w.I64(7, static_cast<int64_t>(c.chunk.size()));
    w.I64(9, offsets[i]);
    if (c.has_dict) w.I64(11, offsets[i]);
    w.End();
    w.End();
  }
  w.I64(2, 100);
  w.I64(3, num_rows);
  w.End();
  w.End();
  std::string footer = w.Take();
  data += footer;
  uint32_t len = static_cast<uint32_t>(footer.size());
  data.append(reinterpret_cast<const char*>(&len), 4);
  data += "PAR1";
  return std::vector<uint8_t>(data.begin(), data.end());
}

// Reads every chunk, expanded and in the dictionary form; both must fail the same way.
Status ReadAll(const std::vector<uint8_t>& bytes) {
  auto f = ParquetFile::OpenBuffer("mem", bytes);
  if (!f.ok()) return f.status();
  Status result[2];
  for (int form = 0; form < 2; ++form) {
    ColumnChunkReader reader(f->get());
    reader.set_dictionary_form(form == 1);
    ColumnData d;
    for (int rg = 0; rg < (*f)->num_row_groups() && result[form].ok(); ++rg) {
      for (int c = 0; c < (*f)->num_columns() && result[form].ok(); ++c) {
        result[form] = reader.Read(rg, c, &d);
      }
    }
  }
  EXPECT_EQ(result[0].ToString(), result[1].ToString()) << "expanded vs dictionary form";
  return result[0];
}

TEST(ParquetHandmade, ValidFileReads) {
  TestColumn s{"s"};
  s.chunk = Page(0, 3, 0, PlainStrings({"x", "", "zz"}));
  s.num_values = 3;
  auto f = ParquetFile::OpenBuffer("mem", BuildFile({s}, 3));
  ASSERT_TRUE(f.ok()) << f.status();
  auto d = (*f)->ReadColumn(0, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->StringAt(0), "x");
  EXPECT_EQ(d->StringAt(1), "");
  EXPECT_EQ(d->StringAt(2), "zz");
  EXPECT_TRUE(d->validity.empty());
}

TEST(ParquetHandmade, BadMagic) {
  TestColumn s{"s"};
  s.chunk = Page(0, 1, 0, PlainStrings({"x"}));
  s.num_values = 1;
  auto bytes = BuildFile({s}, 1);
  bytes[bytes.size() - 1] = '2';
  EXPECT_EQ(ReadAll(bytes).ToString(),
            "DATA_LOSS: mem: not a Parquet file: the last 4 bytes are 'PAR2', expected 'PAR1'");
  bytes = BuildFile({s}, 1);
  bytes[0] = 0xff;
  EXPECT_EQ(ReadAll(bytes).ToString(),
            "DATA_LOSS: mem: not a Parquet file: the first 4 bytes are '\\xffAR1', expected "
            "'PAR1'");
}

TEST(ParquetHandmade, FooterLengthBeyondFile) {
  TestColumn s{"s"};
  s.chunk = Page(0, 1, 0, PlainStrings({"x"}));
  s.num_values = 1;
  auto bytes = BuildFile({s}, 1);
  const size_t n = bytes.size();
  bytes[n - 8] = 0xff, bytes[n - 7] = 0xff, bytes[n - 6] = 0, bytes[n - 5] = 0;
  EXPECT_EQ(ReadAll(bytes).ToString(),
            "DATA_LOSS: mem: footer length 65535 exceeds the " + std::to_string(n - 12) +
                " bytes between the magic numbers (truncated file?)");
}

TEST(ParquetHandmade, TooSmallAndTruncatedFiles) {
  EXPECT_EQ(ReadAll({'P', 'A', 'R', '1'}).ToString(),
            "DATA_LOSS: mem: file of 4 bytes is too small to be Parquet (a valid file has at "
            "least 12)");
  TestColumn s{"s"};
  s.chunk = Page(0, 1, 0, PlainStrings({"x"}));
  s.num_values = 1;
  auto bytes = BuildFile({s}, 1);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    std::vector<uint8_t> t(bytes.begin(), bytes.end() - cut);
    Status st = ReadAll(t);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << cut << " " << st;
    EXPECT_EQ(st.message().rfind("mem: ", 0), 0u) << st;
  }
}

TEST(ParquetHandmade, PageSizeBeyondColumnChunk) {
  TestColumn s{"s"};
  std::string body = PlainStrings({"x"});
  s.chunk = Page(0, 1, 0, body, 1000);
  s.num_values = 1;
  Status st = ReadAll(BuildFile({s}, 1));
  EXPECT_EQ(st.ToString(),
            "DATA_LOSS: mem: column 's' (row group 0): page at offset 4: compressed page size "
            "1000 exceeds the " + std::to_string(body.size()) +
                " bytes left in the column chunk");
}

TEST(ParquetHandmade, DictionaryIndexOutOfRange) {
  TestColumn s{"s"};
  std::string dict = Page(2, 2, 0, PlainStrings({"a", "b"}));
  // bit width 2, RLE run of 3 copies of index 3.
  std::string indices = {'\x02', '\x06', '\x03'};
  s.chunk = dict + Page(0, 3, 8, indices);
  s.num_values = 3;
  s.has_dict = true;
  Status st = ReadAll(BuildFile({s}, 3));
  EXPECT_EQ(st.ToString(), "DATA_LOSS: mem: column 's' (row group 0): page at offset " +
                               std::to_string(4 + dict.size()) +
                               ": in RLE_DICTIONARY values: dictionary index 3 out of range "
                               "(dictionary has 2 entries) at value 0 of the page");
}

TEST(ParquetHandmade, HostileDictionaryExpansionIsBounded) {
  // One 1000-byte dictionary entry repeated a million times by a 5-byte RLE run: 1 GB of output.
  TestColumn s{"s"};
  std::string dict = Page(2, 1, 0, PlainStrings({std::string(1000, 'a')}));
  std::string run = {'\x01'};  // bit width 1
  for (uint64_t v = 2000000; ; v >>= 7) {  // RLE header: run length 1e6, shifted left by 1
    if (v < 0x80) { run += static_cast<char>(v); break; }
    run += static_cast<char>((v & 0x7f) | 0x80);
  }
  run += '\0';  // run value: index 0
  s.chunk = dict + Page(0, 1000000, 8, run);
  s.num_values = 1000000;
  s.has_dict = true;
  ParquetReadOptions opt;
  opt.max_chunk_bytes = 1 << 20;
  auto f = ParquetFile::OpenBuffer("mem", BuildFile({s}, 1000000), opt);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->ReadColumn(0, 0).status().ToString(),
            "RESOURCE_EXHAUSTED: mem: column 's' (row group 0): page at offset " +
                std::to_string(4 + dict.size()) +
                ": in RLE_DICTIONARY values: dictionary strings expand to more than "
                "ParquetReadOptions::max_chunk_bytes (1048576)");
}

TEST(ParquetHandmade, DictionaryFormDoesNotExpand) {
  // The chunk of HostileDictionaryExpansionIsBounded: in dictionary form it is 1e6 indices of one
  // 1000-byte entry, not 1 GB of strings, so it reads within the same limit.
  TestColumn s{"s"};
  std::string dict = Page(2, 1, 0, PlainStrings({std::string(1000, 'a')}));
  std::string run = {'\x01'};
  for (uint64_t v = 2000000; ; v >>= 7) {
    if (v < 0x80) { run += static_cast<char>(v); break; }
    run += static_cast<char>((v & 0x7f) | 0x80);
  }
  run += '\0';
  s.chunk = dict + Page(0, 1000000, 8, run);
  s.num_values = 1000000;
  s.has_dict = true;
  ParquetReadOptions opt;
  opt.max_chunk_bytes = 1 << 20;
  auto f = ParquetFile::OpenBuffer("mem", BuildFile({s}, 1000000), opt);
  ASSERT_TRUE(f.ok()) << f.status();
  ColumnChunkReader reader(f->get());
  reader.set_dictionary_form(true);
  ColumnData d;
  ASSERT_TRUE(reader.Read(0, 0, &d).ok());
  ASSERT_TRUE(d.indexed);
  EXPECT_EQ(d.dictionary_size, 1);
  EXPECT_EQ(d.num_entries(), 2);
  ASSERT_EQ(d.num_slots(), 1000000);
  EXPECT_EQ(d.StringAt(0), std::string(1000, 'a'));
  EXPECT_EQ(d.StringAt(999999), std::string(1000, 'a'));
  EXPECT_EQ(d.EntryString(0), "");
}

TEST(ParquetHandmade, DictionaryWithPlainFallbackPage) {
  // A dictionary page {"a", "b"}, a dictionary-encoded page [b, a], then a PLAIN page ["c", "a"]
  // (a writer's fallback): in dictionary form the PLAIN values become entries 3 and 4.
  TestColumn s{"s"};
  std::string dict = Page(2, 2, 0, PlainStrings({"a", "b"}));
  // bit width 1, bit-packed run of 1 group (header 3): values 1, 0 -> byte 0b01.
  s.chunk = dict + Page(0, 2, 8, std::string{'\x01', '\x03', '\x01'}) +
            Page(0, 2, 0, PlainStrings({"c", "a"}));
  s.num_values = 4;
  s.has_dict = true;
  auto f = ParquetFile::OpenBuffer("mem", BuildFile({s}, 4));
  ASSERT_TRUE(f.ok()) << f.status();
  ColumnChunkReader reader(f->get());
  reader.set_dictionary_form(true);
  ColumnData d;
  ASSERT_TRUE(reader.Read(0, 0, &d).ok());
  ASSERT_TRUE(d.indexed);
  EXPECT_EQ(d.dictionary_size, 2);
  EXPECT_EQ(d.num_entries(), 5);
  EXPECT_EQ(std::vector<uint32_t>(d.indices.begin(), d.indices.end()),
            (std::vector<uint32_t>{2, 1, 3, 4}));
  EXPECT_EQ(d.StringAt(0), "b");
  EXPECT_EQ(d.StringAt(1), "a");
  EXPECT_EQ(d.StringAt(2), "c");
  EXPECT_EQ(d.StringAt(3), "a");
  // Invalid UTF-8 in the fallback page is reported at its row in both forms.
  s.chunk = dict + Page(0, 2, 8, std::string{'\x01', '\x03', '\x01'}) +
            Page(0, 2, 0, PlainStrings({"c", "\xff"}));
  EXPECT_EQ(ReadAll(BuildFile({s}, 4)).ToString(),
            "DATA_LOSS: mem: column 's' (row group 0): invalid UTF-8 in row 3 of the row group "
            "(bytes: ff)");
}

TEST(ParquetHandmade, InvalidUtf8) {
  TestColumn s{"s"};
  s.chunk = Page(0, 3, 0, PlainStrings({"ok", "\xff\xfe", "x"}));
  s.num_values = 3;
  EXPECT_EQ(ReadAll(BuildFile({s}, 3)).ToString(),
            "DATA_LOSS: mem: column 's' (row group 0): invalid UTF-8 in row 1 of the row group "
            "(bytes: ff fe)");
  // A split multi-byte character: each value is invalid although the concatenation is valid.
  s.chunk = Page(0, 2, 0, PlainStrings({"a\xc3", "\xa9"}));
  s.num_values = 2;
  EXPECT_EQ(ReadAll(BuildFile({s}, 2)).ToString(),
            "DATA_LOSS: mem: column 's' (row group 0): invalid UTF-8 in row 0 of the row group "
            "(bytes: 61 c3)");
  // The same bytes without the STRING annotation are plain binary and read fine.
  s.converted = -1;
  EXPECT_TRUE(ReadAll(BuildFile({s}, 2)).ok());
  // Invalid UTF-8 in a dictionary entry.
  TestColumn t{"t"};
  std::string dict = Page(2, 1, 0, PlainStrings({"\xc0\x80"}));
  t.chunk = dict + Page(0, 1, 8, std::string{'\x01', '\x02', '\x00'});
  t.num_values = 1;
  t.has_dict = true;
  EXPECT_EQ(ReadAll(BuildFile({t}, 1)).ToString(),
            "DATA_LOSS: mem: column 't' (row group 0): page at offset 4: "
            "invalid UTF-8 in dictionary entry 0 (bytes: c0 80)");
}

TEST(ParquetHandmade, ColumnChunkOutsideFile) {
  TestColumn s{"s"};
  s.chunk = Page(0, 1, 0, PlainStrings({"x"}));
  s.num_values = 1;
  auto bytes = BuildFile({s}, 1);
  // Truncate the chunk region away by rebuilding with a chunk that claims more bytes.
  TestColumn big = s;
  big.chunk = s.chunk + std::string(50, 'z');
  auto bytes_big = BuildFile({big}, 1);
  // Keep the footer of bytes_big but drop the padding: the chunk now overlaps the footer.
  std::vector<uint8_t> cut(bytes_big.begin(), bytes_big.begin() + 4 + s.chunk.size());
  cut.insert(cut.end(), bytes_big.begin() + 4 + big.chunk.size(), bytes_big.end());
  Status st = ReadAll(cut);
  EXPECT_EQ(st.ToString(),
            "DATA_LOSS: mem: column 's' (row group 0): column chunk at offset 4 of " +
                std::to_string(big.chunk.size()) + " bytes lies outside the data region [4, " +
                std::to_string(4 + s.chunk.size()) + ") of the file");
}

TEST(ParquetHandmade, UnsupportedShapesNameTheColumn) {
  TestColumn a{"ts", 3};
  a.chunk = Page(0, 1, 0, std::string(12, '\0'));
  a.num_values = 1;
  TestColumn b{"st", 2};
  b.as_struct = true;
  b.repetition = 0;
  b.chunk = Page(0, 1, 0, std::string(8, '\0'));
  b.num_values = 1;
  TestColumn ok{"ok", 2};
  ok.chunk = Page(0, 1, 0, std::string(8, '\x01'));
  ok.num_values = 1;
  auto f = ParquetFile::OpenBuffer("mem", BuildFile({a, b, ok}, 1));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->ReadColumn(0, 0).status().ToString(),
            "UNIMPLEMENTED: mem: column 'ts' (row group 0): physical type INT96 is not supported "
            "(legacy timestamps; rewrite as INT64 TIMESTAMP)");
  EXPECT_EQ((*f)->ReadColumn(0, 1).status().ToString(),
            "UNIMPLEMENTED: mem: column 'st.inner' (row group 0): nested structs are not "
            "supported");
  auto d = (*f)->ReadColumn(0, 2);  // projection: the supported column still reads
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->int64s[0], 0x0101010101010101LL);
  EXPECT_EQ((*f)->ReadColumn(0, 3).status().ToString(),
            "INVALID_ARGUMENT: mem: column 3 out of range (file has 3)");
  EXPECT_EQ((*f)->ReadColumn(1, 0).status().ToString(),
            "INVALID_ARGUMENT: mem: row group 1 out of range (file has 1)");
  EXPECT_EQ((*f)->FindColumn("nope").status().ToString(),
            "NOT_FOUND: mem: no column 'nope' (columns: ts, st, ok)");
}

TEST(ParquetHandmade, MissingFile) {
  auto f = ParquetFile::Open("/nonexistent/x.parquet");
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/x.parquet: cannot open Parquet file"),
            std::string::npos)
      << f.status();
}

TEST(ParquetHandmade, TruncatedFixtureNamesTheFile) {
  const std::string name = FixtureNames().front();
  auto bytes = ReadFileBytes(FixtureDir() + "/" + name);
  bytes.resize(bytes.size() / 2);
  Status st = ParquetFile::OpenBuffer(name, bytes).status();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_EQ(st.message().rfind(name + ": not a Parquet file: the last 4 bytes are", 0), 0u) << st;
}

}  // namespace
}  // namespace rectrain::io::parquet
