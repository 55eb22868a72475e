// Column chunk decoding: page iteration, decompression, levels, values, list assembly.
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "rectrain/io/parquet/internal/codecs.h"
#include "rectrain/io/parquet/internal/encodings.h"
#include "rectrain/io/parquet/internal/file_impl.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/internal/thrift_compact.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet {

using internal::ColumnMetaData;
using internal::PageHeader;

namespace {

std::string EncodingName(int32_t e) {
  switch (e) {
    case internal::kPlain: return "PLAIN";
    case internal::kPlainDictionary: return "PLAIN_DICTIONARY";
    case internal::kRle: return "RLE";
    case internal::kBitPacked: return "BIT_PACKED";
    case internal::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case internal::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case internal::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case internal::kRleDictionary: return "RLE_DICTIONARY";
    case internal::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
    default: return "encoding " + std::to_string(e);
  }
}

// Bytes per slot in the typed vector for fixed-width kinds; 0 for kBinary.
int SlotWidth(ValueKind k) {
  switch (k) {
    case ValueKind::kBool: return 1;
    case ValueKind::kInt32:
    case ValueKind::kFloat: return 4;
    case ValueKind::kInt64:
    case ValueKind::kDouble: return 8;
    case ValueKind::kBinary: return 0;
  }
  return 0;
}

// Resizes the fixed-width vector of `kind` to n slots; returns its bytes.
uint8_t* ResizeFixed(ColumnData* out, int64_t n) {
  switch (out->kind) {
    case ValueKind::kBool:
      out->bools.resize(n);
      return out->bools.data();
    case ValueKind::kInt32:
      out->int32s.resize(n);
      return reinterpret_cast<uint8_t*>(out->int32s.data());
    case ValueKind::kInt64:
      out->int64s.resize(n);
      return reinterpret_cast<uint8_t*>(out->int64s.data());
    case ValueKind::kFloat:
      out->floats.resize(n);
      return reinterpret_cast<uint8_t*>(out->floats.data());
    case ValueKind::kDouble:
      out->doubles.resize(n);
      return reinterpret_cast<uint8_t*>(out->doubles.data());
    case ValueKind::kBinary: break;
  }
  return nullptr;
}

std::string HexSnippet(const uint8_t* p, int64_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (int64_t i = 0; i < std::min<int64_t>(n, 16); ++i) {
    if (i) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  if (n > 16) s += " ...";
  return s;
}

}  // namespace

// Buffers reused across pages, columns and row groups (PodVector: resize() does not zero-fill).
struct ColumnChunkReader::Scratch {
  PodVector<uint8_t> chunk;
  PodVector<uint8_t> page;
  PodVector<uint16_t> def, rep;
  PodVector<uint32_t> indices;
  PodVector<int32_t> lengths, prefixes;
  // Dictionary: fixed-width values as slot bytes, or byte arrays as offsets + bytes.
  bool has_dict = false;
  int64_t dict_size = 0;
  PodVector<uint8_t> dict_fixed;
  PodVector<int64_t> dict_offsets;
  PodVector<uint8_t> dict_bytes;
  // Ranges [begin, end) of values (slots; entries in dictionary form) holding strings that were
  // not validated through the dictionary.
  std::vector<std::pair<int64_t, int64_t>> utf8_unchecked;
};

// Not in the anonymous namespace: Scratch is a private member type reachable through the friend.
namespace detail {

using Scratch = ColumnChunkReader::Scratch;

// Everything one Read() call needs.
struct ChunkContext {
  const ColumnSchema* col;
  const ParquetReadOptions* opt;
  ColumnChunkReader::Scratch* s;  // NOLINT
  ColumnData* out;
  ValueKind kind;
  int width;             // slot width for fixed kinds
  int16_t list_def;      // list present at def >= list_def
  int64_t page_offset;   // file offset of the current page header (for messages)
};


// Decodes PLAIN values of the column's physical type: n values from `in` into `dst` slots
// (fixed kinds) or appended to offsets/bytes (binary). *consumed = bytes used.
Status DecodePlainFixed(const ChunkContext& c, std::span<const uint8_t> in, int64_t n,
                        uint8_t* dst) {
  if (c.kind == ValueKind::kBool) {
    if ((n + 7) / 8 > static_cast<int64_t>(in.size())) {
      return DataLossError("PLAIN BOOLEAN data has " + std::to_string(in.size()) + " bytes for " +
                           std::to_string(n) + " values");
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = (in[i >> 3] >> (i & 7)) & 1;
    return OkStatus();
  }
  int64_t need = n * c.width;
  if (need > static_cast<int64_t>(in.size())) {
    return DataLossError("PLAIN data has " + std::to_string(in.size()) + " bytes where " +
                         std::to_string(n) + " values need " + std::to_string(need));
  }
  if (need) std::memcpy(dst, in.data(), need);
  return OkStatus();
}

// Appends n PLAIN byte arrays (length-prefixed, or fixed `type_length`) to offsets/bytes.
Status DecodePlainBinary(const ChunkContext& c, std::span<const uint8_t> in, int64_t n,
                         PodVector<int64_t>* offsets, PodVector<uint8_t>* bytes) {
  const int64_t size = static_cast<int64_t>(in.size());
  const int64_t base = bytes->size();
  if (c.col->physical_type == PhysicalType::kFixedLenByteArray) {
    const int64_t w = c.col->type_length;
    if (n * w > size) {
      return DataLossError("PLAIN FIXED_LEN_BYTE_ARRAY data has " + std::to_string(size) +
                           " bytes where " + std::to_string(n) + " values of " +
                           std::to_string(w) + " bytes need " + std::to_string(n * w));
    }
    bytes->insert(bytes->end(), in.data(), in.data() + n * w);
    for (int64_t i = 1; i <= n; ++i) offsets->push_back(base + i * w);
    return OkStatus();
  }
  // Pass 1: validate lengths and compute the total; pass 2: copy.
  int64_t pos = 0, total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (size - pos < 4) {
      return DataLossError("PLAIN BYTE_ARRAY data ends after " + std::to_string(i) + " of " +
                           std::to_string(n) + " values");
    }
    uint32_t len;
    std::memcpy(&len, in.data() + pos, 4);
    pos += 4;
    if (len > static_cast<uint64_t>(size - pos)) {
      return DataLossError("PLAIN BYTE_ARRAY value " + std::to_string(i) + " has length " +
                           std::to_string(len) + " but only " + std::to_string(size - pos) +
                           " bytes remain in the page");
    }
    pos += len;
    total += len;
  }
  size_t off_base = offsets->size();
  offsets->resize(off_base + n);
  bytes->resize(base + total);
  uint8_t* dst = bytes->data() + base;
  int64_t* offs = offsets->data() + off_base;
  pos = 0;
  int64_t out_pos = base;
  const int64_t out_end = base + total;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t len;
    std::memcpy(&len, in.data() + pos, 4);
    pos += 4;
    if (len <= 16 && size - pos >= 16 && out_end - out_pos >= 16) {
      // Over-copy a fixed 16 bytes (faster than a variable memcpy); the surplus lies inside
      // both buffers and is overwritten by the following values.
      std::memcpy(dst, in.data() + pos, 16);
    } else {
      std::memcpy(dst, in.data() + pos, len);
    }
    dst += len;
    pos += len;
    out_pos += len;
    offs[i] = out_pos;
  }
  return OkStatus();
}

// Appends byte arrays given lengths (DELTA_LENGTH_BYTE_ARRAY body).
Status AppendByLengths(const int32_t* lengths, int64_t n, std::span<const uint8_t> data,
                       int64_t fixed_len, PodVector<int64_t>* offsets,
                       PodVector<uint8_t>* bytes) {
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (lengths[i] < 0) return DataLossError("negative byte array length " +
                                             std::to_string(lengths[i]));
    if (fixed_len > 0 && lengths[i] != fixed_len) {
      return DataLossError("FIXED_LEN_BYTE_ARRAY value of " + std::to_string(lengths[i]) +
                           " bytes, expected " + std::to_string(fixed_len));
    }
    total += lengths[i];
    if (total > static_cast<int64_t>(data.size())) {
      return DataLossError("byte array lengths sum past the " + std::to_string(data.size()) +
                           " data bytes of the page");
    }
  }
  int64_t base = bytes->size();
  bytes->insert(bytes->end(), data.data(), data.data() + total);
  int64_t pos = base;
  for (int64_t i = 0; i < n; ++i) {
    pos += lengths[i];
    offsets->push_back(pos);
  }
  return OkStatus();
}

Status DecodeDeltaByteArray(const ChunkContext& c, std::span<const uint8_t> in, int64_t n,
                            PodVector<int64_t>* offsets, PodVector<uint8_t>* bytes) {
  Scratch& s = *c.s;
  s.prefixes.resize(n);
  s.lengths.resize(n);
  int64_t used1 = 0, used2 = 0;
  RECTRAIN_RETURN_IF_ERROR(
      internal::DecodeDeltaBinaryPacked<int32_t>(in, n, s.prefixes.data(), &used1))
      << "in DELTA_BYTE_ARRAY prefix lengths";
  std::span<const uint8_t> rest = in.subspan(used1);
  RECTRAIN_RETURN_IF_ERROR(
      internal::DecodeDeltaBinaryPacked<int32_t>(rest, n, s.lengths.data(), &used2))
      << "in DELTA_BYTE_ARRAY suffix lengths";
  std::span<const uint8_t> data = rest.subspan(used2);
  const int64_t fixed = c.col->physical_type == PhysicalType::kFixedLenByteArray
                            ? c.col->type_length : 0;
  int64_t pos = 0, prev_begin = 0, prev_len = 0, out_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t prefix = s.prefixes[i], suffix = s.lengths[i];
    if (prefix < 0 || suffix < 0) return DataLossError("DELTA_BYTE_ARRAY negative length");
    if (prefix > prev_len) {
      return DataLossError("DELTA_BYTE_ARRAY prefix length " + std::to_string(prefix) +
                           " exceeds the previous value's length " + std::to_string(prev_len));
    }
    if (suffix > static_cast<int64_t>(data.size()) - pos) {
      return DataLossError("DELTA_BYTE_ARRAY suffixes run past the end of the page");
    }
    if (fixed > 0 && prefix + suffix != fixed) {
      return DataLossError("FIXED_LEN_BYTE_ARRAY value of " + std::to_string(prefix + suffix) +
                           " bytes, expected " + std::to_string(fixed));
    }
    out_total += prefix + suffix;
    if (out_total > c.opt->max_page_bytes ||
        static_cast<int64_t>(bytes->size()) + prefix + suffix > c.opt->max_chunk_bytes) {
      return ResourceExhaustedError("DELTA_BYTE_ARRAY page expands beyond "
                                    "ParquetReadOptions::max_page_bytes");
    }
    int64_t begin = bytes->size();
    bytes->resize(begin + prefix + suffix);
    if (prefix) std::memmove(bytes->data() + begin, bytes->data() + prev_begin, prefix);
    if (suffix) std::memcpy(bytes->data() + begin + prefix, data.data() + pos, suffix);
    pos += suffix;
    prev_begin = begin;
    prev_len = prefix + suffix;
    offsets->push_back(bytes->size());
  }
  return OkStatus();
}

bool IsDictionaryEncoding(int32_t encoding) {
  return encoding == internal::kPlainDictionary || encoding == internal::kRleDictionary;
}

// Decodes the n dictionary indices of a dictionary-encoded page into s.indices, each checked
// to be below the dictionary size.
Status DecodeDictionaryIndices(const ChunkContext& c, int32_t encoding,
                               std::span<const uint8_t> in, int64_t n) {
  Scratch& s = *c.s;
  if (!s.has_dict) {
    return DataLossError(EncodingName(encoding) +
                         " page but the column chunk has no dictionary page");
  }
  s.indices.resize(n);
  if (in.empty()) {
    if (n == 0) return OkStatus();
    return DataLossError("dictionary-encoded page has no bit-width byte");
  }
  int bw = in[0];
  if (bw > 32) return DataLossError("dictionary index bit width " + std::to_string(bw) +
                                    " exceeds 32");
  RECTRAIN_RETURN_IF_ERROR(
      internal::DecodeRleHybrid<uint32_t>(in.subspan(1), bw, n, s.indices.data()))
      << "in dictionary indices";
  const uint32_t* idx = s.indices.data();
  uint32_t max_idx = 0;
  for (int64_t i = 0; i < n; ++i) max_idx = std::max(max_idx, idx[i]);
  if (n > 0 && max_idx >= s.dict_size) {
    int64_t first = 0;
    while (idx[first] < s.dict_size) ++first;
    return DataLossError("dictionary index " + std::to_string(idx[first]) +
                         " out of range (dictionary has " + std::to_string(s.dict_size) +
                         " entries) at value " + std::to_string(first) + " of the page");
  }
  return OkStatus();
}

// Appends the dictionary strings of the n indices just decoded (c.s->indices) to c.out
// (ResourceExhausted past max_chunk_bytes).
Status ExpandDictionaryStrings(const ChunkContext& c, int64_t n) {
  ColumnData* out = c.out;
  Scratch& s = *c.s;
  const uint32_t* idx = s.indices.data();
  const int64_t* doff = s.dict_offsets.data();
  const uint8_t* dbytes = s.dict_bytes.data();
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += doff[idx[i] + 1] - doff[idx[i]];
  if (static_cast<int64_t>(out->bytes.size()) + total > c.opt->max_chunk_bytes) {
    return ResourceExhaustedError(
        "dictionary strings expand to more than ParquetReadOptions::max_chunk_bytes (" +
        std::to_string(c.opt->max_chunk_bytes) + ")");
  }
  int64_t bbase = out->bytes.size();
  out->bytes.resize(bbase + total);
  size_t obase = out->offsets.size();
  out->offsets.resize(obase + n);
  uint8_t* dst = out->bytes.data() + bbase;
  int64_t* offs = out->offsets.data() + obase;
  int64_t pos = bbase;
  for (int64_t i = 0; i < n; ++i) {
    int64_t b = doff[idx[i]], len = doff[idx[i] + 1] - b;
    if (len <= 16 && static_cast<int64_t>(out->bytes.size()) - pos >= 16 &&
        static_cast<int64_t>(s.dict_bytes.size()) - b >= 16) {
      // Over-copy a fixed 16 bytes (faster than a variable memcpy); the surplus lies inside
      // the output and is overwritten by the following values.
      std::memcpy(dst, dbytes + b, 16);
    } else {
      std::memcpy(dst, dbytes + b, len);
    }
    dst += len;
    pos += len;
    offs[i] = pos;
  }
  return OkStatus();
}

// Expands n dictionary-encoded values (`encoding`, from `in`) at slot `base` of c.out.
Status ExpandDictionary(const ChunkContext& c, int32_t encoding, std::span<const uint8_t> in, int64_t base,
                        int64_t n) {
  ColumnData* out = c.out;
  Scratch& s = *c.s;
  RECTRAIN_RETURN_IF_ERROR(DecodeDictionaryIndices(c, encoding, in, n));
  if (c.kind == ValueKind::kBinary) return ExpandDictionaryStrings(c, n);
  const uint32_t* idx = s.indices.data();
  uint8_t* dst = ResizeFixed(out, base + n) + base * c.width;
  const uint8_t* dict = s.dict_fixed.data();
  switch (c.width) {
    case 1:
      for (int64_t i = 0; i < n; ++i) dst[i] = dict[idx[i]];
      break;
    case 4: {
      uint32_t* d = reinterpret_cast<uint32_t*>(dst);
      const uint32_t* v = reinterpret_cast<const uint32_t*>(dict);
      for (int64_t i = 0; i < n; ++i) d[i] = v[idx[i]];
      break;
    }
    default: {
      uint64_t* d = reinterpret_cast<uint64_t*>(dst);
      const uint64_t* v = reinterpret_cast<const uint64_t*>(dict);
      for (int64_t i = 0; i < n; ++i) d[i] = v[idx[i]];
      break;
    }
  }
  return OkStatus();
}

// Decodes n non-null values of `encoding` from `in`, appended at slot (in dictionary form:
// entry) `base` of c.out. Dictionary-encoded pages are expanded (not used in dictionary form).
Status DecodeValues(const ChunkContext& c, int32_t encoding, std::span<const uint8_t> in,
                    int64_t base, int64_t n) {
  ColumnData* out = c.out;
  Scratch& s = *c.s;
  const PhysicalType pt = c.col->physical_type;
  if (IsDictionaryEncoding(encoding)) return ExpandDictionary(c, encoding, in, base, n);
  switch (encoding) {
    case internal::kPlain:
      if (c.kind == ValueKind::kBinary) return DecodePlainBinary(c, in, n, &out->offsets, &out->bytes);
      return DecodePlainFixed(c, in, n, ResizeFixed(out, base + n) + base * c.width);
    case internal::kRle: {
      if (pt != PhysicalType::kBoolean) break;
      if (in.size() < 4) return DataLossError("RLE BOOLEAN data lacks its 4-byte length");
      uint32_t len;
      std::memcpy(&len, in.data(), 4);
      if (len > in.size() - 4) {
        return DataLossError("RLE BOOLEAN length " + std::to_string(len) + " exceeds the " +
                             std::to_string(in.size() - 4) + " bytes of the page");
      }
      s.indices.resize(n);
      RECTRAIN_RETURN_IF_ERROR(
          internal::DecodeRleHybrid<uint32_t>(in.subspan(4, len), 1, n, s.indices.data()))
          << "in RLE BOOLEAN values";
      uint8_t* dst = ResizeFixed(out, base + n) + base;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(s.indices[i]);
      return OkStatus();
    }
    case internal::kDeltaBinaryPacked: {
      int64_t used;
      if (pt == PhysicalType::kInt32) {
        uint8_t* dst = ResizeFixed(out, base + n) + base * 4;
        return internal::DecodeDeltaBinaryPacked<int32_t>(in, n, reinterpret_cast<int32_t*>(dst),
                                                          &used);
      }
      if (pt == PhysicalType::kInt64) {
        uint8_t* dst = ResizeFixed(out, base + n) + base * 8;
        return internal::DecodeDeltaBinaryPacked<int64_t>(in, n, reinterpret_cast<int64_t*>(dst),
                                                          &used);
      }
      break;
    }
    case internal::kByteStreamSplit: {
      if (c.kind == ValueKind::kBinary) {
        if (pt != PhysicalType::kFixedLenByteArray) break;
        const int64_t w = c.col->type_length;
        int64_t bbase = out->bytes.size();
        out->bytes.resize(bbase + n * w);
        RECTRAIN_RETURN_IF_ERROR(internal::DecodeByteStreamSplit(in, n, static_cast<int>(w),
                                                                 out->bytes.data() + bbase));
        for (int64_t i = 1; i <= n; ++i) out->offsets.push_back(bbase + i * w);
        return OkStatus();
      }
      if (c.kind == ValueKind::kBool) break;
      return internal::DecodeByteStreamSplit(in, n, c.width,
                                             ResizeFixed(out, base + n) + base * c.width);
    }
    case internal::kDeltaLengthByteArray: {
      if (pt != PhysicalType::kByteArray) break;
      s.lengths.resize(n);
      int64_t used;
      RECTRAIN_RETURN_IF_ERROR(
          internal::DecodeDeltaBinaryPacked<int32_t>(in, n, s.lengths.data(), &used))
          << "in DELTA_LENGTH_BYTE_ARRAY lengths";
      return AppendByLengths(s.lengths.data(), n, in.subspan(used), 0, &out->offsets,
                             &out->bytes);
    }
    case internal::kDeltaByteArray:
      if (c.kind != ValueKind::kBinary) break;
      return DecodeDeltaByteArray(c, in, n, &out->offsets, &out->bytes);
    default:
      break;
  }
  return UnimplementedError("encoding " + EncodingName(encoding) + " is not supported for " +
                            std::string(PhysicalTypeName(pt)) + " values");
}

Status DecodeDictionaryPage(const ChunkContext& c, const internal::DictionaryPageHeader& h,
                            std::span<const uint8_t> in) {
  Scratch& s = *c.s;
  if (s.has_dict) return DataLossError("second dictionary page in one column chunk");
  if (h.encoding != internal::kPlain && h.encoding != internal::kPlainDictionary) {
    return UnimplementedError("dictionary page encoding " + EncodingName(h.encoding) +
                              " is not supported (expected PLAIN)");
  }
  if (h.num_values < 0) return DataLossError("dictionary page has a negative value count");
  const int64_t n = h.num_values;
  if (c.kind == ValueKind::kBinary) {
    // Each byte array takes at least 4 bytes (PLAIN) or type_length bytes (fixed).
    int64_t min_bytes = c.col->physical_type == PhysicalType::kFixedLenByteArray
                            ? c.col->type_length : 4;
    if (n > static_cast<int64_t>(in.size()) / std::max<int64_t>(min_bytes, 1) + 1) {
      return DataLossError("dictionary page declares " + std::to_string(n) +
                           " values but holds only " + std::to_string(in.size()) + " bytes");
    }
    s.dict_offsets.assign(1, 0);
    s.dict_bytes.clear();
    RECTRAIN_RETURN_IF_ERROR(DecodePlainBinary(c, in, n, &s.dict_offsets, &s.dict_bytes))
        << "in dictionary page";
    if (c.col->logical_type == LogicalType::kString) {
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* p = s.dict_bytes.data() + s.dict_offsets[i];
        int64_t len = s.dict_offsets[i + 1] - s.dict_offsets[i];
        if (!internal::IsValidUtf8(p, len)) {
          return DataLossError("invalid UTF-8 in dictionary entry " + std::to_string(i) +
                               " (bytes: " + HexSnippet(p, len) + ")");
        }
      }
    }
  } else {
    int64_t packed_bytes = c.kind == ValueKind::kBool ? (n + 7) / 8 : n * c.width;
    if (packed_bytes > static_cast<int64_t>(in.size())) {
      return DataLossError("dictionary page declares " + std::to_string(n) +
                           " values but holds only " + std::to_string(in.size()) + " bytes");
    }
    s.dict_fixed.resize(n * c.width);
    RECTRAIN_RETURN_IF_ERROR(DecodePlainFixed(c, in, n, s.dict_fixed.data()))
        << "in dictionary page";
  }
  s.dict_size = n;
  s.has_dict = true;
  return OkStatus();
}

// Dictionary form: makes the decoded dictionary the head of c.out's value table (entry 0 null,
// entries 1..n the dictionary).
Status StartDictionaryTable(const ChunkContext& c) {
  Scratch& s = *c.s;
  ColumnData* out = c.out;
  if (s.dict_size + 1 > static_cast<int64_t>(UINT32_MAX)) {
    return ResourceExhaustedError("dictionary of " + std::to_string(s.dict_size) +
                                  " entries is too large for the dictionary form");
  }
  out->indexed = true;
  out->dictionary_size = s.dict_size;
  out->indices.clear();
  if (c.kind == ValueKind::kBinary) {
    // offsets is {0} (no slots decoded yet): entry 0 is empty, then the dictionary's strings.
    out->offsets.assign(2, 0);
    out->offsets.insert(out->offsets.end(), s.dict_offsets.begin() + 1, s.dict_offsets.end());
    out->bytes.assign(s.dict_bytes.begin(), s.dict_bytes.end());
    return OkStatus();
  }
  uint8_t* dst = ResizeFixed(out, s.dict_size + 1);
  std::memset(dst, 0, c.width);
  if (s.dict_size > 0) std::memcpy(dst + c.width, s.dict_fixed.data(), s.dict_size * c.width);
  return OkStatus();
}

// Dictionary form: appends n_slots indices for one page whose n_present values are entry(j),
// j = 0..n_present-1, in order; null slots (validity 0 from slot_base on) get entry 0.
template <class EntryOf>
void AppendIndices(ColumnData* out, int64_t slot_base, int64_t n_present, int64_t n_slots,
                   EntryOf entry_of) {
  out->indices.resize(slot_base + n_slots);
  uint32_t* dst = out->indices.data() + slot_base;
  if (n_slots == n_present) {
    for (int64_t i = 0; i < n_slots; ++i) dst[i] = entry_of(i);
    return;
  }
  const uint8_t* valid = out->validity.data() + slot_base;
  int64_t j = 0;
  for (int64_t i = 0; i < n_slots; ++i) {
    dst[i] = valid[i] ? entry_of(j) : 0u;
    j += valid[i];
  }
}

// Places the n_present compact values at [base, base + n_present) into slots
// [base, base + n_slots) according to validity[base + i].
void SpreadNulls(const ChunkContext& c, int64_t base, int64_t n_present, int64_t n_slots) {
  ColumnData* out = c.out;
  const uint8_t* valid = out->validity.data();
  if (c.kind == ValueKind::kBinary) {
    out->offsets.resize(base + n_slots + 1);
    int64_t* off = out->offsets.data();
    int64_t src = base + n_present;
    for (int64_t dst = base + n_slots - 1; dst >= base; --dst) {
      off[dst + 1] = off[src];
      if (valid[dst]) --src;
    }
    return;
  }
  const int w = c.width;
  uint8_t* data = ResizeFixed(out, base + n_slots);
  int64_t src = base + n_present - 1;
  for (int64_t dst = base + n_slots - 1; dst >= base; --dst) {
    if (valid[dst]) {
      if (src != dst) std::memmove(data + dst * w, data + src * w, w);
      --src;
    } else {
      std::memset(data + dst * w, 0, w);
    }
  }
}

Status DecodeLevels(std::span<const uint8_t> in, int max_level, int64_t n,
                    PodVector<uint16_t>* out, const char* what) {
  out->resize(n);
  RECTRAIN_RETURN_IF_ERROR(
      internal::DecodeRleHybrid<uint16_t>(in, internal::BitWidth(static_cast<uint64_t>(max_level)), n, out->data()))
      << "in " << what << " levels";
  uint16_t mx = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, (*out)[i]);
  if (mx > max_level) {
    return DataLossError(std::string(what) + " level " + std::to_string(mx) +
                         " exceeds the column's maximum " + std::to_string(max_level));
  }
  return OkStatus();
}

// Turns one page's levels into slots (validity) and rows (list offsets); returns present count.
Status AssembleLevels(const ChunkContext& c, int64_t n_levels, int64_t* n_present,
                      int64_t* n_slots, int64_t* rows) {
  const ColumnSchema& col = *c.col;
  ColumnData* out = c.out;
  Scratch& s = *c.s;
  const uint16_t max_def = col.max_definition_level;
  if (!col.is_list) {
    const int64_t slot_base = *rows;  // a row is a slot
    *n_slots = n_levels;
    *rows += n_levels;
    if (max_def == 0) {
      *n_present = n_levels;
      return OkStatus();
    }
    const uint16_t* d = s.def.data();
    int64_t present = 0;
    for (int64_t i = 0; i < n_levels; ++i) present += d[i] == max_def;
    *n_present = present;
    // validity stays empty until the first null (most optional columns have none): then the
    // slots before it are filled in as present.
    if (present == n_levels && out->validity.empty()) return OkStatus();
    if (out->validity.empty()) out->validity.assign(static_cast<size_t>(slot_base), 1);
    out->validity.resize(slot_base + n_levels);
    uint8_t* v = out->validity.data() + slot_base;
    for (int64_t i = 0; i < n_levels; ++i) v[i] = d[i] == max_def;
    return OkStatus();
  }
  const uint16_t list_def = c.list_def, slot_def = c.list_def + 1;
  const uint16_t* d = s.def.data();
  const uint16_t* r = s.rep.data();
  int64_t present = 0, slots = 0;
  int64_t slot_base = out->validity.size();
  out->validity.resize(slot_base + n_levels);  // upper bound; shrunk below
  uint8_t* v = out->validity.data() + slot_base;
  for (int64_t i = 0; i < n_levels; ++i) {
    if (r[i] == 0) {
      out->list_offsets.push_back(slot_base + slots);
      out->list_validity.push_back(d[i] >= list_def);
      ++*rows;
    } else if (*rows == 0) {
      return DataLossError("the column chunk starts in the middle of a list (repetition level " +
                           std::to_string(r[i]) + ")");
    } else if (d[i] < slot_def) {
      return DataLossError("a continued list has an empty or null element marker (definition "
                           "level " + std::to_string(d[i]) + ")");
    }
    if (d[i] >= slot_def) {
      uint8_t ok = d[i] == max_def;
      v[slots++] = ok;
      present += ok;
    }
  }
  out->validity.resize(slot_base + slots);
  *n_present = present;
  *n_slots = slots;
  return OkStatus();
}

Status Decompress(const ChunkContext& c, int32_t codec, std::span<const uint8_t> in,
                  int64_t declared, PodVector<uint8_t>* out) {
  if (declared > c.opt->max_page_bytes) {
    return ResourceExhaustedError("page declares " + std::to_string(declared) +
                                  " uncompressed bytes, above ParquetReadOptions::max_page_bytes (" +
                                  std::to_string(c.opt->max_page_bytes) + ")");
  }
  int64_t bound = internal::MaxExpansion(codec, static_cast<int64_t>(in.size()));
  if (codec == internal::kZstd) {
    unsigned long long fcs = ZSTD_getFrameContentSize(in.data(), in.size());
    if (fcs == ZSTD_CONTENTSIZE_ERROR) return DataLossError("ZSTD stream is corrupt (bad frame header)");
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > static_cast<unsigned long long>(declared)) {
      return DataLossError("ZSTD frame holds " + std::to_string(fcs) +
                           " bytes but the page header declares " + std::to_string(declared));
    }
  } else if (bound >= 0 && declared > bound) {
    return DataLossError(internal::CodecName(codec) + " page of " + std::to_string(in.size()) +
                         " bytes cannot decompress to the declared " + std::to_string(declared) +
                         " bytes");
  }
  out->resize(declared);
  return internal::Decompress(codec, in, std::span<uint8_t>(out->data(), out->size()));
}

// A data page's parts: its level count, value encoding, and the (decompressed) bytes of its
// repetition levels, definition levels and values.
struct DataPageParts {
  int64_t n_levels = 0;
  int32_t encoding = 0;
  std::span<const uint8_t> rep_in, def_in, values;
};

// A data page's value count, against what the column chunk has left.
Status CheckLevelCount(int64_t n_levels, int64_t remaining_levels) {
  if (n_levels < 0) return DataLossError("data page has a negative value count");
  if (n_levels > remaining_levels) {
    return DataLossError("data page holds " + std::to_string(n_levels) + " values but only " +
                         std::to_string(remaining_levels) + " remain in the column chunk");
  }
  return OkStatus();
}

Result<DataPageParts> SplitDataPageV1(const ChunkContext& c, const ColumnMetaData& meta, const PageHeader& ph,
                                      std::span<const uint8_t> raw, int64_t remaining_levels) {
  const ColumnSchema& col = *c.col;
  Scratch& s = *c.s;
  DataPageParts p;
  if (!ph.data_page_header) return DataLossError("DATA_PAGE without a data_page_header");
  const internal::DataPageHeader& h = *ph.data_page_header;
  p.n_levels = h.num_values;
  p.encoding = h.encoding;
  RECTRAIN_RETURN_IF_ERROR(CheckLevelCount(p.n_levels, remaining_levels));
  RECTRAIN_RETURN_IF_ERROR(Decompress(c, meta.codec, raw, ph.uncompressed_page_size, &s.page));
  std::span<const uint8_t> page(s.page.data(), s.page.size());
  auto take_levels = [&](int32_t enc, const char* what,
                         std::span<const uint8_t>* dst) -> Status {
    if (enc != internal::kRle) {
      return UnimplementedError(std::string(what) + " levels in encoding " + EncodingName(enc) +
                                " are not supported (only RLE)");
    }
    if (page.size() < 4) return DataLossError(std::string(what) + " levels lack their length");
    uint32_t len;
    std::memcpy(&len, page.data(), 4);
    if (len > page.size() - 4) {
      return DataLossError(std::string(what) + " levels length " + std::to_string(len) +
                           " exceeds the " + std::to_string(page.size() - 4) +
                           " bytes left in the page");
    }
    *dst = page.subspan(4, len);
    page = page.subspan(4 + len);
    return OkStatus();
  };
  if (col.max_repetition_level > 0) {
    RECTRAIN_RETURN_IF_ERROR(take_levels(h.repetition_level_encoding, "repetition", &p.rep_in));
  }
  if (col.max_definition_level > 0) {
    RECTRAIN_RETURN_IF_ERROR(take_levels(h.definition_level_encoding, "definition", &p.def_in));
  }
  p.values = page;
  return p;
}

Result<DataPageParts> SplitDataPageV2(const ChunkContext& c, const ColumnMetaData& meta, const PageHeader& ph,
                                      std::span<const uint8_t> raw, int64_t remaining_levels) {
  Scratch& s = *c.s;
  DataPageParts p;
  if (!ph.data_page_header_v2) return DataLossError("DATA_PAGE_V2 without its header");
  const internal::DataPageHeaderV2& h = *ph.data_page_header_v2;
  p.n_levels = h.num_values;
  p.encoding = h.encoding;
  RECTRAIN_RETURN_IF_ERROR(CheckLevelCount(p.n_levels, remaining_levels));
  int64_t rl = h.repetition_levels_byte_length, dl = h.definition_levels_byte_length;
  if (rl < 0 || dl < 0 || rl + dl > static_cast<int64_t>(raw.size()) ||
      rl + dl > ph.uncompressed_page_size) {
    return DataLossError("DATA_PAGE_V2 level lengths (" + std::to_string(rl) + " + " +
                         std::to_string(dl) + ") exceed the page size " +
                         std::to_string(raw.size()));
  }
  p.rep_in = raw.subspan(0, rl);
  p.def_in = raw.subspan(rl, dl);
  std::span<const uint8_t> body = raw.subspan(rl + dl);
  int64_t body_size = ph.uncompressed_page_size - rl - dl;
  if (h.is_compressed && meta.codec != internal::kUncompressed) {
    RECTRAIN_RETURN_IF_ERROR(Decompress(c, meta.codec, body, body_size, &s.page));
    p.values = std::span<const uint8_t>(s.page.data(), s.page.size());
  } else {
    if (static_cast<int64_t>(body.size()) != body_size) {
      return DataLossError("uncompressed DATA_PAGE_V2 body has " + std::to_string(body.size()) +
                           " bytes but the header declares " + std::to_string(body_size));
    }
    p.values = body;
  }
  return p;
}

// The values of a page of a column read in dictionary form (ColumnData::indexed): dictionary
// pages as indices into the table, a fallback page's values as new entries of it.
Status ReadIndexedValues(const ChunkContext& c, const DataPageParts& p, int64_t* rows) {
  const ColumnSchema& col = *c.col;
  Scratch& s = *c.s;
  ColumnData* out = c.out;
  const int64_t n_levels = p.n_levels;
  const int32_t encoding = p.encoding;
  const std::span<const uint8_t> values = p.values;
  const int64_t slot_base = static_cast<int64_t>(out->indices.size());
  int64_t n_present = 0, n_slots = 0;
  RECTRAIN_RETURN_IF_ERROR(AssembleLevels(c, n_levels, &n_present, &n_slots, rows));
  if (IsDictionaryEncoding(encoding)) {
    RECTRAIN_RETURN_IF_ERROR(DecodeDictionaryIndices(c, encoding, values, n_present))
        << "in " << EncodingName(encoding) << " values";
    const uint32_t* idx = s.indices.data();
    AppendIndices(out, slot_base, n_present, n_slots,
                  [idx](int64_t j) { return idx[j] + 1; });
  } else {
    // A fallback page: its values become new entries of the table.
    const int64_t entry_base = out->num_entries();
    if (entry_base + n_present > static_cast<int64_t>(UINT32_MAX)) {
      return ResourceExhaustedError("column chunk has more than 2^32 values");
    }
    RECTRAIN_RETURN_IF_ERROR(DecodeValues(c, encoding, values, entry_base, n_present))
        << "in " << EncodingName(encoding) << " values";
    AppendIndices(out, slot_base, n_present, n_slots, [entry_base](int64_t j) {
      return static_cast<uint32_t>(entry_base + j);
    });
    if (col.logical_type == LogicalType::kString && c.kind == ValueKind::kBinary &&
        n_present > 0) {
      s.utf8_unchecked.emplace_back(entry_base, entry_base + n_present);
    }
  }
  return OkStatus();
}

Status ReadDataPage(const ChunkContext& c, const ColumnMetaData& meta, const PageHeader& ph,
                    std::span<const uint8_t> raw, int64_t remaining_levels, int64_t* levels_read,
                    int64_t* rows) {
  const ColumnSchema& col = *c.col;
  Scratch& s = *c.s;
  ColumnData* out = c.out;
  RECTRAIN_ASSIGN_OR_RETURN(const DataPageParts p, ph.type == internal::kDataPageV2
                                                       ? SplitDataPageV2(c, meta, ph, raw, remaining_levels)
                                                       : SplitDataPageV1(c, meta, ph, raw, remaining_levels));
  const int64_t n_levels = p.n_levels;
  const int32_t encoding = p.encoding;
  if (col.max_repetition_level > 0) {
    RECTRAIN_RETURN_IF_ERROR(DecodeLevels(p.rep_in, col.max_repetition_level, n_levels, &s.rep, "repetition"));
  }
  if (col.max_definition_level > 0) {
    RECTRAIN_RETURN_IF_ERROR(DecodeLevels(p.def_in, col.max_definition_level, n_levels, &s.def, "definition"));
  }
  if (out->indexed) {
    RECTRAIN_RETURN_IF_ERROR(ReadIndexedValues(c, p, rows));
    *levels_read += n_levels;
    return OkStatus();
  }
  const int64_t base = c.kind == ValueKind::kBinary ? static_cast<int64_t>(out->offsets.size()) - 1
                                                    : out->num_slots();
  int64_t n_present = 0, n_slots = 0;
  RECTRAIN_RETURN_IF_ERROR(AssembleLevels(c, n_levels, &n_present, &n_slots, rows));
  RECTRAIN_RETURN_IF_ERROR(DecodeValues(c, encoding, p.values, base, n_present))
      << "in " << EncodingName(encoding) << " values";
  if (n_slots != n_present) SpreadNulls(c, base, n_present, n_slots);
  if (col.logical_type == LogicalType::kString && c.kind == ValueKind::kBinary &&
      !IsDictionaryEncoding(encoding) && n_slots > 0) {
    s.utf8_unchecked.emplace_back(base, base + n_slots);
  }
  *levels_read += n_levels;
  return OkStatus();
}

Status CheckUtf8(const ChunkContext& c) {
  const ColumnData& out = *c.out;
  for (auto [begin, end] : c.s->utf8_unchecked) {
    const uint8_t* bytes = out.bytes.data();
    int64_t b0 = out.offsets[begin], b1 = out.offsets[end];
    bool ok = internal::IsValidUtf8(bytes + b0, b1 - b0);
    // Concatenated valid UTF-8 could hide a bad split; every value must start on a boundary.
    for (int64_t i = begin + 1; ok && i < end; ++i) {
      int64_t o = out.offsets[i];
      if (o < b1 && (bytes[o] & 0xc0) == 0x80) ok = false;
    }
    if (ok) continue;
    for (int64_t e = begin; e < end; ++e) {
      int64_t o = out.offsets[e], len = out.offsets[e + 1] - o;
      if (internal::IsValidUtf8(bytes + o, len)) continue;
      // The slot of value e (in dictionary form, the one slot that points at entry e).
      int64_t i = e;
      if (out.indexed) {
        i = std::find(out.indices.begin(), out.indices.end(), static_cast<uint32_t>(e)) -
            out.indices.begin();
      }
      std::string where;
      if (out.is_list) {
        int64_t row = std::upper_bound(out.list_offsets.begin(), out.list_offsets.end(), i) -
                      out.list_offsets.begin() - 1;
        where = "list element " + std::to_string(i - out.list_offsets[row]) + " of row " +
                std::to_string(row);
      } else {
        where = "row " + std::to_string(i);
      }
      return DataLossError("invalid UTF-8 in " + where + " of the row group (bytes: " +
                           HexSnippet(bytes + o, len) + ")");
    }
  }
  return OkStatus();
}

// The dictionary page of a column chunk (before its data pages), decoded into the scratch; in
// dictionary form it also starts the output's table.
Status ReadDictionaryPage(const ChunkContext& c, const ColumnMetaData& meta, const PageHeader& ph,
                          std::span<const uint8_t> raw, int64_t levels_read, bool dictionary_form) {
  Scratch& s = *c.s;
  if (!ph.dictionary_page_header) return DataLossError("DICTIONARY_PAGE without a dictionary_page_header");
  if (levels_read > 0) return DataLossError("dictionary page after data pages");
  RECTRAIN_RETURN_IF_ERROR(Decompress(c, meta.codec, raw, ph.uncompressed_page_size, &s.page));
  RECTRAIN_RETURN_IF_ERROR(
      DecodeDictionaryPage(c, *ph.dictionary_page_header, std::span<const uint8_t>(s.page.data(), s.page.size())));
  return dictionary_form ? StartDictionaryTable(c) : OkStatus();
}

// Reads the pages of a column chunk (its bytes `chunk`, at file offset c.page_offset) into c.out,
// counting the rows. Errors in a page name its offset.
Status ReadPages(ChunkContext& c, const ColumnMetaData& meta, std::span<const uint8_t> chunk, bool dictionary_form,
                 int64_t* rows) {
  const int64_t start = c.page_offset, size = static_cast<int64_t>(chunk.size());
  int64_t pos = 0, levels_read = 0;
  while (levels_read < meta.num_values) {
    if (pos >= size) {
      return DataLossError("column chunk ends after " + std::to_string(levels_read) + " of " +
                           std::to_string(meta.num_values) + " values");
    }
    c.page_offset = start + pos;
    auto page_fail = [&](const Status& st) {
      return Status(st.code(), "page at offset " + std::to_string(c.page_offset) + ": " + st.message());
    };
    internal::ThriftReader reader(chunk.data() + pos, size - pos);
    PageHeader ph;
    if (Status st = internal::ReadPageHeader(reader, &ph); !st.ok()) {
      return page_fail(st.WithContext("corrupt page header"));
    }
    pos += reader.position();
    if (ph.compressed_page_size < 0 || ph.compressed_page_size > size - pos) {
      return page_fail(DataLossError(
          "compressed page size " + std::to_string(ph.compressed_page_size) + " exceeds the " +
          std::to_string(size - pos) + " bytes left in the column chunk"));
    }
    if (ph.uncompressed_page_size < 0) {
      return page_fail(DataLossError("negative uncompressed page size"));
    }
    std::span<const uint8_t> raw = chunk.subspan(pos, ph.compressed_page_size);
    pos += ph.compressed_page_size;
    Status st;
    switch (ph.type) {
      case internal::kDictionaryPage:
        st = ReadDictionaryPage(c, meta, ph, raw, levels_read, dictionary_form);
        break;
      case internal::kDataPage:
      case internal::kDataPageV2:
        st = ReadDataPage(c, meta, ph, raw, meta.num_values - levels_read, &levels_read, rows);
        break;
      default:
        break;  // index pages and unknown page types are skipped
    }
    if (!st.ok()) return page_fail(st);
  }
  return OkStatus();
}

}  // namespace detail

namespace {

// Grows v's capacity to at least n, with headroom so that later row groups of about the same
// size fit too.
template <class V>
void ReserveWithHeadroom(V* v, int64_t n) {
  if (static_cast<int64_t>(v->capacity()) < n) v->reserve(static_cast<size_t>(n + n / 8));
}

// Sizes the output vectors once per chunk from its metadata instead of growing them page by
// page (each growth copies, and touches fresh memory, which is slow on our machines). Only a
// hint: the sizes are capped, so a hostile header cannot reserve much, and decoding grows the
// vectors as needed.
void ReserveOutput(const ColumnSchema& col, const ColumnMetaData& meta, int64_t rows,
                   bool dictionary_form, ColumnData* out) {
  constexpr int64_t kMaxHint = int64_t{1} << 24;
  const int64_t levels = std::min(meta.num_values, kMaxHint);  // at least the slots
  const bool dict =
      meta.dictionary_page_offset.has_value() ||
      std::any_of(meta.encodings.begin(), meta.encodings.end(), detail::IsDictionaryEncoding);
  if (col.max_definition_level > 0) ReserveWithHeadroom(&out->validity, levels);
  if (col.is_list) {
    const int64_t r = std::min(rows, kMaxHint);
    ReserveWithHeadroom(&out->list_offsets, r + 1);
    if (col.optional) ReserveWithHeadroom(&out->list_validity, r);
  }
  if (dictionary_form && dict) {
    ReserveWithHeadroom(&out->indices, levels);
    return;
  }
  switch (out->kind) {
    case ValueKind::kBool: ReserveWithHeadroom(&out->bools, levels); break;
    case ValueKind::kInt32: ReserveWithHeadroom(&out->int32s, levels); break;
    case ValueKind::kInt64: ReserveWithHeadroom(&out->int64s, levels); break;
    case ValueKind::kFloat: ReserveWithHeadroom(&out->floats, levels); break;
    case ValueKind::kDouble: ReserveWithHeadroom(&out->doubles, levels); break;
    case ValueKind::kBinary:
      ReserveWithHeadroom(&out->offsets, levels + 1);
      // The pages' bytes bound the strings' (PLAIN: lengths + bytes); dictionary pages expand.
      if (!dict) {
        ReserveWithHeadroom(&out->bytes, std::clamp<int64_t>(meta.total_uncompressed_size, 0,
                                                             kMaxHint * 8));
      }
      break;
  }
}

// What a column chunk's metadata must say before its pages are read (errors without the
// file/column prefix).
Status CheckChunkMeta(const ColumnSchema& col, const internal::RowGroup& rg, const internal::ColumnChunk& cc,
                      const ParquetReadOptions& opt) {
  if (cc.encrypted) return UnimplementedError("encrypted columns are not supported");
  if (cc.file_path) {
    return UnimplementedError("column data in another file ('" + *cc.file_path + "') is not supported");
  }
  if (!cc.has_meta_data) return DataLossError("column chunk has no ColumnMetaData");
  const ColumnMetaData& meta = cc.meta_data;
  if (meta.type != static_cast<int32_t>(col.physical_type)) {
    return DataLossError("column chunk type " + std::to_string(meta.type) + " differs from the schema's " +
                         std::string(PhysicalTypeName(col.physical_type)));
  }
  if (meta.num_values < 0) return DataLossError("negative value count");
  if (meta.num_values > opt.max_values_per_chunk) {
    return ResourceExhaustedError("column chunk holds " + std::to_string(meta.num_values) +
                                  " values, above ParquetReadOptions::max_values_per_chunk (" +
                                  std::to_string(opt.max_values_per_chunk) + ")");
  }
  if (!col.is_list && meta.num_values != rg.num_rows) {
    return DataLossError("column chunk holds " + std::to_string(meta.num_values) + " values but the row group has " +
                         std::to_string(rg.num_rows) + " rows");
  }
  return OkStatus();
}

}  // namespace

ColumnChunkReader::ColumnChunkReader(const ParquetFile* file)
    : file_(file), scratch_(std::make_unique<Scratch>()) {}
ColumnChunkReader::~ColumnChunkReader() = default;

Status ColumnChunkReader::Read(int row_group, int column, ColumnData* out) {
  const ParquetFile::Impl& impl = *file_->impl_;
  if (row_group < 0 || row_group >= file_->num_row_groups()) {
    return InvalidArgumentError(file_->path() + ": row group " + std::to_string(row_group) +
                                " out of range (file has " +
                                std::to_string(file_->num_row_groups()) + ")");
  }
  if (column < 0 || column >= file_->num_columns()) {
    return InvalidArgumentError(file_->path() + ": column " + std::to_string(column) +
                                " out of range (file has " + std::to_string(file_->num_columns()) +
                                ")");
  }
  const ColumnSchema& col = file_->schema()[column];
  std::string dotted;
  for (size_t i = 0; i < col.path.size(); ++i) dotted += (i ? "." : "") + col.path[i];
  const std::string prefix = file_->path() + ": column '" + dotted + "' (row group " +
                             std::to_string(row_group) + ")";
  auto fail = [&](const Status& st) { return Status(st.code(), prefix + ": " + st.message()); };
  if (!col.unsupported_reason.empty()) return fail(UnimplementedError(col.unsupported_reason));

  const internal::RowGroup& rg = impl.meta.row_groups[row_group];
  const internal::ColumnChunk& cc = rg.columns[column];
  const ParquetReadOptions& opt = impl.options;
  if (Status st = CheckChunkMeta(col, rg, cc, opt); !st.ok()) return fail(st);
  const ColumnMetaData& meta = cc.meta_data;
  const auto [start, size] = file_->ColumnChunkRange(row_group, column);
  if (start < 4 || size < 0 || start > impl.data_end || size > impl.data_end - start) {
    return fail(DataLossError("column chunk at offset " + std::to_string(start) + " of " +
                              std::to_string(size) + " bytes lies outside the data region [4, " +
                              std::to_string(impl.data_end) + ") of the file"));
  }

  Scratch& s = *scratch_;
  s.has_dict = false;
  s.dict_size = 0;
  s.utf8_unchecked.clear();
  out->Clear();
  out->kind = ValueKindOf(col.physical_type);
  out->is_list = col.is_list;
  ReserveOutput(col, meta, rg.num_rows, dictionary_form_, out);
  if (out->kind == ValueKind::kBinary) out->offsets.push_back(0);
  detail::ChunkContext c{&col, &opt, &s, out, out->kind, SlotWidth(out->kind),
                         impl.list_def_level[column], start};

  s.chunk.resize(size);
  if (Status st = file_->ReadAt(start, size, s.chunk.data()); !st.ok()) return fail(st);
  int64_t rows = 0;
  if (Status st = detail::ReadPages(c, meta, std::span<const uint8_t>(s.chunk.data(), s.chunk.size()), dictionary_form_, &rows);
      !st.ok()) {
    return fail(st);
  }
  if (rows != rg.num_rows) {
    return fail(DataLossError("column chunk holds " + std::to_string(rows) +
                              " rows but the row group has " + std::to_string(rg.num_rows)));
  }
  out->num_rows = rows;
  if (col.is_list) {
    out->list_offsets.push_back(out->num_slots());
    if (!col.optional) out->list_validity.clear();
    if (!col.element_optional) out->validity.clear();
  } else if (!col.optional) {
    out->validity.clear();
  }
  if (Status st = detail::CheckUtf8(c); !st.ok()) return fail(st);
  return OkStatus();
}

}  // namespace rectrain::io::parquet
