#include "rectrain/io/parquet/internal/chunk_writer.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

#include "rectrain/base/random.h"
#include "rectrain/io/parquet/internal/codecs.h"
#include "rectrain/io/parquet/internal/encodings.h"

namespace rectrain::io::parquet::internal {
namespace {

// Statistics carry min/max of byte arrays only when both are at most this long (no truncation).
constexpr size_t kMaxStatBytes = 64;
// A page body (or one value) must fit the i32 sizes of a page header.
constexpr int64_t kMaxPageBytes = INT32_MAX;

Status Bad(const WriteColumn& c, const std::string& what) {
  return InvalidArgumentError("parquet writer: column '" + c.name + "': " + what);
}

int32_t CodecId(Compression c) {
  switch (c) {
    case Compression::kUncompressed: return kUncompressed;
    case Compression::kSnappy: return kSnappy;
    case Compression::kZstd: return kZstd;
  }
  return kUncompressed;
}

// ---- Values by physical type --------------------------------------------------------------

// Fixed-width values: the value, its PLAIN bytes, a hash key (the bits: -0.0 and 0.0, and NaN
// payloads, stay distinct, so the file holds exactly the values given).
template <class T>
struct Fixed {
  static constexpr bool kBinary = false;
  using Value = T;
  static const T* Data(const ColumnData& d) {
    if constexpr (std::is_same_v<T, int32_t>) return d.int32s.data();
    if constexpr (std::is_same_v<T, int64_t>) return d.int64s.data();
    if constexpr (std::is_same_v<T, float>) return d.floats.data();
    if constexpr (std::is_same_v<T, double>) return d.doubles.data();
  }
  static T Get(const ColumnData& d, int64_t slot) { return Data(d)[slot]; }
  static int64_t PlainSize(T) { return sizeof(T); }
  static void AppendPlain(T v, std::string* out) {
    out->append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  static uint64_t Bits(T v) {
    if constexpr (sizeof(T) == 4) return std::bit_cast<uint32_t>(v);
    else return std::bit_cast<uint64_t>(v);
  }
  static uint64_t Hash(T v) { return Mix64(Bits(v)); }
  static bool Same(T a, T b) { return Bits(a) == Bits(b); }
  static bool Less(T a, T b) { return a < b; }
  static bool Ordered(T v) {
    if constexpr (std::is_floating_point_v<T>) return !std::isnan(v);
    else return true;
  }
  static bool Utf8(T) { return true; }
  static std::string StatBytes(T v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(T)); }
};

struct Binary {
  static constexpr bool kBinary = true;
  using Value = std::string_view;
  static std::string_view Get(const ColumnData& d, int64_t slot) { return d.StringAt(slot); }
  static int64_t PlainSize(std::string_view v) { return 4 + static_cast<int64_t>(v.size()); }
  static void AppendPlain(std::string_view v, std::string* out) {
    const uint32_t n = static_cast<uint32_t>(v.size());  // sizes checked < 2 GiB
    out->append(reinterpret_cast<const char*>(&n), 4);
    out->append(v.data(), v.size());
  }
  static uint64_t Hash(std::string_view v) { return HashBytes(v, 0x706172717565ULL); }
  static bool Same(std::string_view a, std::string_view b) { return a == b; }
  static bool Less(std::string_view a, std::string_view b) { return a < b; }  // unsigned bytes
  static bool Ordered(std::string_view) { return true; }
  static bool Utf8(std::string_view v) {
    return IsValidUtf8(reinterpret_cast<const uint8_t*>(v.data()), static_cast<int64_t>(v.size()));
  }
  static std::string StatBytes(std::string_view v) { return std::string(v); }
};

// ---- Checking the input ---------------------------------------------------------------------

Status CheckShape(const WriteColumn& c, const ColumnData& d) {
  if (d.indexed) return Bad(c, "data in dictionary form; read it with set_dictionary_form(false)");
  if (d.kind != ValueKindOf(c.type)) return Bad(c, "values of the wrong kind for its physical type");
  if (d.is_list != c.is_list) return Bad(c, c.is_list ? "a list column given plain values" : "given list values");
  if (d.num_rows < 1) return Bad(c, "a row group needs at least one row");
  const int64_t slots = d.num_slots();
  if (d.kind == ValueKind::kBinary && !d.offsets.empty()) {
    if (d.offsets[0] < 0 || d.offsets.back() > static_cast<int64_t>(d.bytes.size())) {
      return Bad(c, "string offsets outside the byte buffer");
    }
    for (int64_t i = 0; i < slots; ++i) {
      const int64_t len = d.offsets[i + 1] - d.offsets[i];
      if (len < 0) return Bad(c, "string offsets decrease at slot " + std::to_string(i));
      if (len > kMaxPageBytes - 4) return Bad(c, "value at slot " + std::to_string(i) + " is over 2 GiB");
    }
  }
  if (!d.validity.empty() && static_cast<int64_t>(d.validity.size()) != slots) {
    return Bad(c, "validity has " + std::to_string(d.validity.size()) + " entries for " + std::to_string(slots) +
                      " values");
  }
  const bool nulls = !d.validity.empty() && std::find(d.validity.begin(), d.validity.end(), 0) != d.validity.end();
  if (!c.is_list) {
    if (slots != d.num_rows) {
      return Bad(c, std::to_string(slots) + " values for " + std::to_string(d.num_rows) + " rows");
    }
    if (nulls && !c.optional) return Bad(c, "a null in a required column");
    return OkStatus();
  }
  if (static_cast<int64_t>(d.list_offsets.size()) != d.num_rows + 1 || d.list_offsets[0] != 0 ||
      d.list_offsets.back() != slots) {
    return Bad(c, "list offsets do not cover the " + std::to_string(slots) + " elements of " +
                      std::to_string(d.num_rows) + " rows");
  }
  if (!d.list_validity.empty() && static_cast<int64_t>(d.list_validity.size()) != d.num_rows) {
    return Bad(c, "list validity has " + std::to_string(d.list_validity.size()) + " entries for " +
                      std::to_string(d.num_rows) + " rows");
  }
  for (int64_t r = 0; r < d.num_rows; ++r) {
    const int64_t n = d.list_offsets[r + 1] - d.list_offsets[r];
    if (n < 0) return Bad(c, "list offsets decrease at row " + std::to_string(r));
    if (d.IsNullList(r)) {
      if (!c.optional) return Bad(c, "a null list in a required column (row " + std::to_string(r) + ")");
      if (n != 0) return Bad(c, "null list at row " + std::to_string(r) + " has elements");
    }
  }
  if (nulls && !c.element_optional) return Bad(c, "a null element in a list of required elements");
  return OkStatus();
}

// ---- Levels and pages -------------------------------------------------------------------------

// The levels of a chunk and where each row starts in them and in the present values.
struct Levels {
  std::vector<uint32_t> def, rep;  // empty when the column has none
  int64_t num_levels = 0;
  // Row r covers levels [row_level(r), row_level(r + 1)) and present values
  // [row_value[r], row_value[r + 1]).
  std::vector<int64_t> row_level_begin;  // lists only (else level == row)
  std::vector<int64_t> row_value;
  std::vector<int64_t> present;  // slot of each present value; empty = every slot, in order
  int64_t row_level(int64_t r) const { return row_level_begin.empty() ? r : row_level_begin[r]; }
};

void BuildLevels(const WriteColumn& c, const ColumnData& d, Levels* lv) {
  const int64_t rows = d.num_rows;
  const bool any_null = !d.validity.empty();
  lv->row_value.assign(static_cast<size_t>(rows + 1), 0);
  if (!c.is_list) {
    lv->num_levels = rows;
    if (c.optional) lv->def.resize(static_cast<size_t>(rows));
    int64_t v = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const bool present = !any_null || d.validity[r] != 0;
      if (c.optional) lv->def[r] = present ? 1 : 0;
      if (present && any_null) lv->present.push_back(r);
      v += present ? 1 : 0;
      lv->row_value[r + 1] = v;
    }
    return;
  }
  const uint32_t list_def = c.optional ? 1 : 0;  // an empty list
  const uint32_t max_def = static_cast<uint32_t>(MaxDefinitionLevel(c));
  lv->row_level_begin.assign(static_cast<size_t>(rows + 1), 0);
  int64_t v = 0;
  const bool null_lists = !d.list_validity.empty();
  for (int64_t r = 0; r < rows; ++r) {
    lv->row_level_begin[r] = static_cast<int64_t>(lv->def.size());
    const int64_t a = d.list_offsets[r], b = d.list_offsets[r + 1];
    if (a == b) {
      lv->def.push_back(null_lists && d.list_validity[r] == 0 ? 0 : list_def);
      lv->rep.push_back(0);
    }
    for (int64_t s = a; s < b; ++s) {
      const bool present = !any_null || d.validity[s] != 0;
      lv->def.push_back(present ? max_def : list_def + 1);
      lv->rep.push_back(s == a ? 0 : 1);
      if (present && any_null) lv->present.push_back(s);
      v += present ? 1 : 0;
    }
    lv->row_value[r + 1] = v;
  }
  lv->row_level_begin[rows] = static_cast<int64_t>(lv->def.size());
  lv->num_levels = static_cast<int64_t>(lv->def.size());
}

void AppendLevels(const std::vector<uint32_t>& levels, int64_t begin, int64_t end, int16_t max_level,
                  std::string* body) {
  const size_t at = body->size();
  body->append(4, '\0');
  EncodeRleHybrid(levels.data() + begin, end - begin, BitWidth(static_cast<uint64_t>(max_level)), body);
  const uint32_t len = static_cast<uint32_t>(body->size() - at - 4);
  std::memcpy(body->data() + at, &len, 4);
}

// Compresses `body` and appends header + page to the chunk.
Status EmitPage(const WriteColumn& c, const ParquetWriteOptions& o, PageHeader header, const std::string& body,
                PodVector<uint8_t>* scratch, EncodedChunk* out) {
  if (static_cast<int64_t>(body.size()) > kMaxPageBytes) {
    return Bad(c, "a page of " + std::to_string(body.size()) + " bytes exceeds 2 GiB (one row too large?)");
  }
  std::string_view page = body;
  if (o.compression != Compression::kUncompressed) {
    RECTRAIN_RETURN_IF_ERROR(Compress(CodecId(o.compression), o.zstd_level,
                                      {reinterpret_cast<const uint8_t*>(body.data()), body.size()}, scratch));
    page = {reinterpret_cast<const char*>(scratch->data()), scratch->size()};
  }
  if (static_cast<int64_t>(page.size()) > kMaxPageBytes) return Bad(c, "a compressed page exceeds 2 GiB");
  header.uncompressed_page_size = static_cast<int32_t>(body.size());
  header.compressed_page_size = static_cast<int32_t>(page.size());
  const size_t header_at = out->bytes.size();
  ThriftWriter w(&out->bytes);
  WritePageHeader(header, w);
  out->meta.total_uncompressed_size += static_cast<int64_t>(out->bytes.size() - header_at + body.size());
  out->meta.total_compressed_size += static_cast<int64_t>(out->bytes.size() - header_at + page.size());
  out->bytes.append(page.data(), page.size());
  return OkStatus();
}

// ---- Dictionary ---------------------------------------------------------------------------------

// Distinct values in first-seen order with an open-addressing index (hash -> entry + 1).
template <class V>
class Dictionary {
 public:
  using Value = typename V::Value;
  // The entry of `v`, adding it if new.
  uint32_t Insert(Value v) {
    if ((entries_.size() + 1) * 2 > table_.size()) Grow();
    const uint64_t h = V::Hash(v);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      const uint32_t e = table_[i];
      if (e == 0) {
        table_[i] = static_cast<uint32_t>(entries_.size() + 1);
        entries_.push_back(v);
        hashes_.push_back(h);
        plain_bytes_ += V::PlainSize(v);
        return static_cast<uint32_t>(entries_.size() - 1);
      }
      if (hashes_[e - 1] == h && V::Same(entries_[e - 1], v)) return e - 1;
    }
  }
  const std::vector<Value>& entries() const { return entries_; }
  int64_t plain_bytes() const { return plain_bytes_; }

 private:
  void Grow() {
    const size_t cap = std::max<size_t>(1024, table_.size() * 2);
    table_.assign(cap, 0);
    mask_ = cap - 1;
    for (size_t e = 0; e < entries_.size(); ++e) {
      uint64_t i = hashes_[e] & mask_;
      while (table_[i] != 0) i = (i + 1) & mask_;
      table_[i] = static_cast<uint32_t>(e + 1);
    }
  }
  std::vector<uint32_t> table_;
  uint64_t mask_ = 0;
  std::vector<Value> entries_;
  std::vector<uint64_t> hashes_;
  int64_t plain_bytes_ = 0;
};

// ---- One chunk ----------------------------------------------------------------------------------

template <class V>
class ChunkEncoder {
 public:
  using Value = typename V::Value;
  ChunkEncoder(const WriteColumn& c, const ParquetWriteOptions& o, const ColumnData& d, const Levels& lv,
               EncodedChunk* out)
      : c_(c), o_(o), d_(d), lv_(lv), out_(out) {}

  Status Run() {
    const int64_t n = lv_.row_value.back();
    values_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) values_[k] = V::Get(d_, lv_.present.empty() ? k : lv_.present[k]);
    if (o_.statistics) Stats();
    const int64_t dict_rows = o_.dictionary ? BuildDictionary() : 0;
    if (dict_rows > 0) {
      RECTRAIN_RETURN_IF_ERROR(DictionaryPage());
    }
    if constexpr (V::kBinary) {
      if (c_.utf8) {
        if (dict_rows > 0) {
          for (const Value& v : dict_.entries()) out_->all_utf8 = out_->all_utf8 && V::Utf8(v);
        }
        for (int64_t k = lv_.row_value[dict_rows]; k < n && out_->all_utf8; ++k) out_->all_utf8 = V::Utf8(values_[k]);
      }
    }
    return DataPages(dict_rows);
  }

 private:
  // Assigns dictionary indices row by row until the dictionary passes its byte limit (the row that
  // passes it is still included), then returns the rows covered; 0 when a dictionary would not
  // be smaller than PLAIN for those rows.
  int64_t BuildDictionary() {
    const int64_t rows = d_.num_rows;
    int64_t r = 0;
    int64_t plain = 0;
    indices_.clear();
    while (r < rows && dict_.plain_bytes() <= o_.dictionary_page_bytes) {
      for (int64_t k = lv_.row_value[r]; k < lv_.row_value[r + 1]; ++k) {
        indices_.push_back(dict_.Insert(values_[k]));
        plain += V::PlainSize(values_[k]);
      }
      ++r;
    }
    const int64_t entries = static_cast<int64_t>(dict_.entries().size());
    bit_width_ = std::max(1, BitWidth(static_cast<uint64_t>(std::max<int64_t>(entries, 1) - 1)));
    const int64_t dict_cost = dict_.plain_bytes() + static_cast<int64_t>(indices_.size()) * bit_width_ / 8;
    if (entries == 0 || dict_cost >= plain) return 0;
    return r;
  }

  Status DictionaryPage() {
    std::string body;
    body.reserve(static_cast<size_t>(dict_.plain_bytes()));
    for (const Value& v : dict_.entries()) V::AppendPlain(v, &body);
    PageHeader h;
    h.type = kDictionaryPage;
    h.dictionary_page_header = DictionaryPageHeader{static_cast<int32_t>(dict_.entries().size()), kPlain};
    out_->meta.dictionary_page_offset = static_cast<int64_t>(out_->bytes.size());
    return EmitPage(c_, o_, std::move(h), body, &scratch_, out_);
  }

  // Data pages: rows [0, dict_rows) dictionary-encoded, the rest PLAIN; a page ends at the first
  // row boundary past page_bytes, and always at dict_rows.
  Status DataPages(int64_t dict_rows) {
    const int64_t rows = d_.num_rows;
    const int16_t max_def = MaxDefinitionLevel(c_), max_rep = MaxRepetitionLevel(c_);
    const int level_bits = BitWidth(static_cast<uint64_t>(max_def)) + BitWidth(static_cast<uint64_t>(max_rep));
    out_->meta.data_page_offset = static_cast<int64_t>(out_->bytes.size());
    std::string body;
    int64_t r0 = 0;
    while (r0 < rows) {
      const bool dict = r0 < dict_rows;
      const int64_t row_end = dict ? dict_rows : rows;
      int64_t r1 = r0, bytes = 0;
      while (r1 < row_end && bytes < o_.page_bytes) {
        const int64_t levels = lv_.row_level(r1 + 1) - lv_.row_level(r1);
        bytes += (levels * level_bits + 7) / 8;
        for (int64_t k = lv_.row_value[r1]; k < lv_.row_value[r1 + 1]; ++k) {
          bytes += dict ? (bit_width_ + 7) / 8 : V::PlainSize(values_[k]);
        }
        ++r1;
      }
      body.clear();
      const int64_t l0 = lv_.row_level(r0), l1 = lv_.row_level(r1);
      if (max_rep > 0) AppendLevels(lv_.rep, l0, l1, max_rep, &body);
      if (max_def > 0) AppendLevels(lv_.def, l0, l1, max_def, &body);
      const int64_t v0 = lv_.row_value[r0], v1 = lv_.row_value[r1];
      if (dict) {
        body.push_back(static_cast<char>(bit_width_));
        EncodeRleHybrid(indices_.data() + v0, v1 - v0, bit_width_, &body);
      } else {
        for (int64_t k = v0; k < v1; ++k) V::AppendPlain(values_[k], &body);
      }
      if (l1 - l0 > INT32_MAX) return Bad(c_, "a page of over 2^31 values");
      PageHeader h;
      h.type = kDataPage;
      h.data_page_header = DataPageHeader{static_cast<int32_t>(l1 - l0), dict ? kRleDictionary : kPlain, kRle, kRle};
      RECTRAIN_RETURN_IF_ERROR(EmitPage(c_, o_, std::move(h), body, &scratch_, out_));
      (dict ? out_->dictionary_pages : out_->plain_pages) = true;
      r0 = r1;
    }
    return OkStatus();
  }

  void Stats() {
    Statistics st;
    if (!c_.is_list) st.null_count = d_.num_rows - static_cast<int64_t>(values_.size());
    std::optional<Value> lo, hi;
    for (const Value& v : values_) {
      if (!V::Ordered(v)) continue;
      if (!lo || V::Less(v, *lo)) lo = v;
      if (!hi || V::Less(*hi, v)) hi = v;
    }
    bool keep = lo.has_value();
    if constexpr (V::kBinary) keep = keep && lo->size() <= kMaxStatBytes && hi->size() <= kMaxStatBytes;
    if (keep) {
      if constexpr (std::is_floating_point_v<Value>) {
        // parquet.thrift: a zero min is written as -0.0 and a zero max as +0.0.
        if (*lo == 0) lo = -Value(0);
        if (*hi == 0) hi = Value(0);
      }
      st.min_value = V::StatBytes(*lo);
      st.max_value = V::StatBytes(*hi);
    }
    out_->meta.statistics = std::move(st);
  }

  const WriteColumn& c_;
  const ParquetWriteOptions& o_;
  const ColumnData& d_;
  const Levels& lv_;
  EncodedChunk* out_;
  std::vector<Value> values_;  // present values in order
  Dictionary<V> dict_;
  std::vector<uint32_t> indices_;
  int bit_width_ = 0;
  PodVector<uint8_t> scratch_;
};

// Booleans: PLAIN only (bit-packed), pages at row boundaries.
Status EncodeBooleans(const WriteColumn& c, const ParquetWriteOptions& o, const ColumnData& d, const Levels& lv,
                      EncodedChunk* out) {
  const int16_t max_def = MaxDefinitionLevel(c), max_rep = MaxRepetitionLevel(c);
  out->meta.data_page_offset = 0;
  std::string body;
  PodVector<uint8_t> scratch;
  const int64_t rows = d.num_rows;
  int64_t trues = 0, falses = 0;
  for (int64_t r0 = 0; r0 < rows;) {
    int64_t r1 = r0;
    while (r1 < rows && (lv.row_level(r1) - lv.row_level(r0)) / 4 < o.page_bytes) ++r1;
    body.clear();
    const int64_t l0 = lv.row_level(r0), l1 = lv.row_level(r1);
    if (max_rep > 0) AppendLevels(lv.rep, l0, l1, max_rep, &body);
    if (max_def > 0) AppendLevels(lv.def, l0, l1, max_def, &body);
    uint8_t byte = 0;
    int bit = 0;
    for (int64_t k = lv.row_value[r0]; k < lv.row_value[r1]; ++k) {
      const bool v = d.bools[lv.present.empty() ? k : lv.present[k]] != 0;
      (v ? trues : falses) += 1;
      byte |= static_cast<uint8_t>(v) << bit;
      if (++bit == 8) {
        body.push_back(static_cast<char>(byte));
        byte = 0;
        bit = 0;
      }
    }
    if (bit > 0) body.push_back(static_cast<char>(byte));
    PageHeader h;
    h.type = kDataPage;
    h.data_page_header = DataPageHeader{static_cast<int32_t>(l1 - l0), kPlain, kRle, kRle};
    RECTRAIN_RETURN_IF_ERROR(EmitPage(c, o, std::move(h), body, &scratch, out));
    out->plain_pages = true;
    r0 = r1;
  }
  if (o.statistics) {
    Statistics st;
    if (!c.is_list) st.null_count = rows - trues - falses;
    if (trues + falses > 0) {
      st.min_value = std::string(1, falses > 0 ? '\0' : '\1');
      st.max_value = std::string(1, trues > 0 ? '\1' : '\0');
    }
    out->meta.statistics = std::move(st);
  }
  return OkStatus();
}

}  // namespace

int16_t MaxDefinitionLevel(const WriteColumn& c) {
  if (!c.is_list) return c.optional ? 1 : 0;
  return static_cast<int16_t>((c.optional ? 1 : 0) + 1 + (c.element_optional ? 1 : 0));
}

int16_t MaxRepetitionLevel(const WriteColumn& c) { return c.is_list ? 1 : 0; }

Status EncodeChunk(const WriteColumn& c, const ParquetWriteOptions& o, const ColumnData& d, EncodedChunk* out) {
  RECTRAIN_RETURN_IF_ERROR(CheckShape(c, d));
  Levels lv;
  BuildLevels(c, d, &lv);
  *out = EncodedChunk{};
  ColumnMetaData& m = out->meta;
  m.type = static_cast<int32_t>(c.type);
  m.codec = CodecId(o.compression);
  m.num_values = lv.num_levels;
  m.total_uncompressed_size = 0;
  m.total_compressed_size = 0;
  m.path_in_schema = c.is_list ? std::vector<std::string>{c.name, "list", "element"} : std::vector<std::string>{c.name};
  Status s;
  switch (c.type) {
    case PhysicalType::kBoolean: s = EncodeBooleans(c, o, d, lv, out); break;
    case PhysicalType::kInt32: s = ChunkEncoder<Fixed<int32_t>>(c, o, d, lv, out).Run(); break;
    case PhysicalType::kInt64: s = ChunkEncoder<Fixed<int64_t>>(c, o, d, lv, out).Run(); break;
    case PhysicalType::kFloat: s = ChunkEncoder<Fixed<float>>(c, o, d, lv, out).Run(); break;
    case PhysicalType::kDouble: s = ChunkEncoder<Fixed<double>>(c, o, d, lv, out).Run(); break;
    default: s = ChunkEncoder<Binary>(c, o, d, lv, out).Run(); break;
  }
  RECTRAIN_RETURN_IF_ERROR(s);
  // PLAIN: the dictionary page and any PLAIN data pages; RLE: levels; RLE_DICTIONARY: indices.
  m.encodings = {kPlain, kRle};
  if (out->dictionary_pages) m.encodings.push_back(kRleDictionary);
  return OkStatus();
}

}  // namespace rectrain::io::parquet::internal
