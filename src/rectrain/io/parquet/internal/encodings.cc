#include "rectrain/io/parquet/internal/encodings.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

namespace rectrain::io::parquet::internal {
namespace {

inline uint64_t Load64(const uint8_t* p, const uint8_t* end) {
  uint64_t v = 0;
  if (end - p >= 8) {
    std::memcpy(&v, p, 8);
  } else {
    for (int i = 0; p + i < end; ++i) v |= uint64_t{p[i]} << (8 * i);
  }
  return v;
}

// Extracts `bw` (0..64) bits at bit offset `bitpos`. The caller guarantees the value's bytes lie
// inside [base, end).
inline uint64_t ExtractBits(const uint8_t* base, const uint8_t* end, int64_t bitpos, int bw) {
  const uint8_t* p = base + (bitpos >> 3);
  int s = static_cast<int>(bitpos & 7);
  uint64_t v = Load64(p, end) >> s;
  if (bw + s > 64) v |= uint64_t{p[8]} << (64 - s);
  return bw >= 64 ? v : (v & ((uint64_t{1} << bw) - 1));
}

Status Truncated(const char* encoding, int64_t decoded, int64_t n) {
  return DataLossError(std::string(encoding) + " data ends after " + std::to_string(decoded) +
                       " of " + std::to_string(n) + " values");
}

}  // namespace

Status ReadUleb(std::span<const uint8_t> in, int64_t* pos, uint64_t* out) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= static_cast<int64_t>(in.size())) return DataLossError("truncated varint");
    uint8_t byte = in[(*pos)++];
    if (shift == 63 && (byte & 0x7e) != 0) return DataLossError("varint overflows 64 bits");
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = result;
      return OkStatus();
    }
  }
  return DataLossError("varint longer than 10 bytes");
}

namespace {

// Unpacks `groups` groups of 8 values of BW bits (BW bytes each). Every 8-byte load stays inside
// [in, in + groups * BW + 8): the caller guarantees 8 readable bytes after the last group.
template <int BW>
void UnpackGroups(const uint8_t* in, int64_t groups, uint32_t* out) {
  constexpr uint64_t kMask = (uint64_t{1} << BW) - 1;
  for (int64_t g = 0; g < groups; ++g, in += BW, out += 8) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      uint64_t v;
      std::memcpy(&v, in + ((k * BW) >> 3), 8);
      out[k] = static_cast<uint32_t>((v >> ((k * BW) & 7)) & kMask);
    }
  }
}

using UnpackGroupsFn = void (*)(const uint8_t*, int64_t, uint32_t*);

template <size_t... W>
constexpr std::array<UnpackGroupsFn, sizeof...(W)> MakeUnpackTable(std::index_sequence<W...>) {
  return {&UnpackGroups<static_cast<int>(W) + 1>...};
}
// kUnpackGroups[bw - 1] for bw = 1..32.
constexpr auto kUnpackGroups = MakeUnpackTable(std::make_index_sequence<32>());

}  // namespace

void UnpackBits32(const uint8_t* in, int64_t in_size, int bit_width, int64_t n, uint32_t* out) {
  if (bit_width == 0) {
    std::memset(out, 0, n * sizeof(uint32_t));
    return;
  }
  const uint8_t* end = in + in_size;
  const uint64_t mask = (uint64_t{1} << bit_width) - 1;
  int64_t i = 0;
  // Whole groups of 8 with the width known at compile time, while 8 bytes past the group are
  // readable; then the general loops below.
  int64_t groups = in_size >= 8 ? (in_size - 8) / bit_width : 0;
  groups = std::min(groups, n / 8);
  if (groups > 0) {
    kUnpackGroups[bit_width - 1](in, groups, out);
    i = groups * 8;
  }
  // Fast path while an unaligned 8-byte load stays inside the input (bw <= 32, shift <= 7).
  int64_t safe = in_size >= 8 ? ((in_size - 8) * 8) / bit_width : 0;
  if (safe > n) safe = n;
  int64_t bitpos = i * bit_width;
  for (; i < safe; ++i, bitpos += bit_width) {
    uint64_t v;
    std::memcpy(&v, in + (bitpos >> 3), 8);
    out[i] = static_cast<uint32_t>((v >> (bitpos & 7)) & mask);
  }
  for (; i < n; ++i, bitpos += bit_width) {
    out[i] = static_cast<uint32_t>(ExtractBits(in, end, bitpos, bit_width));
  }
}

template <typename T>
Status DecodeRleHybrid(std::span<const uint8_t> in, int bit_width, int64_t n, T* out) {
  if (bit_width < 0 || bit_width > 32) {
    return DataLossError("RLE bit width " + std::to_string(bit_width) + " exceeds 32");
  }
  if (bit_width > static_cast<int>(8 * sizeof(T))) {
    return DataLossError("RLE bit width " + std::to_string(bit_width) + " too wide");
  }
  const int64_t size = static_cast<int64_t>(in.size());
  const int value_bytes = (bit_width + 7) / 8;
  int64_t pos = 0, done = 0;
  uint32_t tmp[512];
  while (done < n) {
    uint64_t header;
    if (pos >= size) return Truncated("RLE", done, n);
    RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &header)) << "in RLE run header";
    if (header & 1) {
      // Bit-packed run of (header >> 1) groups of 8 values.
      uint64_t groups = header >> 1;
      if (groups > static_cast<uint64_t>(size)) return Truncated("RLE bit-packed", done, n);
      int64_t count = static_cast<int64_t>(groups) * 8;
      int64_t bytes = static_cast<int64_t>(groups) * bit_width;
      int64_t avail = size - pos;
      int64_t take = std::min(count, n - done);
      // The last run may be cut short by the end of the data if the values it still needs fit.
      if (bytes > avail) {
        if ((take * bit_width + 7) / 8 > avail) return Truncated("RLE bit-packed", done, n);
        bytes = avail;
      }
      const uint8_t* src = in.data() + pos;
      // The unpacker may read (not use) the bytes after the run, up to the end of the input, so
      // that short runs also take its fast path.
      if constexpr (sizeof(T) == 4) {
        UnpackBits32(src, avail, bit_width, take, reinterpret_cast<uint32_t*>(out + done));
      } else {
        for (int64_t off = 0; off < take; off += 512) {
          int64_t m = std::min<int64_t>(512, take - off);
          int64_t bit0 = off * bit_width;  // multiple of 8 since off is a multiple of 512
          UnpackBits32(src + bit0 / 8, avail - bit0 / 8, bit_width, m, tmp);
          for (int64_t j = 0; j < m; ++j) out[done + off + j] = static_cast<T>(tmp[j]);
        }
      }
      done += take;
      pos += bytes;
    } else {
      uint64_t run = header >> 1;
      if (pos + value_bytes > size) return Truncated("RLE", done, n);
      uint64_t value = 0;
      for (int b = 0; b < value_bytes; ++b) value |= uint64_t{in[pos + b]} << (8 * b);
      pos += value_bytes;
      if (bit_width < 32 && (value >> bit_width) != 0) {
        return DataLossError("RLE run value " + std::to_string(value) + " does not fit in " +
                             std::to_string(bit_width) + " bits");
      }
      int64_t take = static_cast<int64_t>(std::min<uint64_t>(run, static_cast<uint64_t>(n - done)));
      T v = static_cast<T>(value);
      std::fill(out + done, out + done + take, v);
      done += take;
    }
  }
  return OkStatus();
}

template Status DecodeRleHybrid<uint16_t>(std::span<const uint8_t>, int, int64_t, uint16_t*);
template Status DecodeRleHybrid<uint32_t>(std::span<const uint8_t>, int, int64_t, uint32_t*);

template <typename T>
Status DecodeDeltaBinaryPacked(std::span<const uint8_t> in, int64_t n, T* out, int64_t* consumed) {
  using U = std::make_unsigned_t<T>;
  const int64_t size = static_cast<int64_t>(in.size());
  int64_t pos = 0;
  uint64_t block_size, miniblocks, total, first_zz;
  RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &block_size)) << "in DELTA_BINARY_PACKED header";
  RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &miniblocks)) << "in DELTA_BINARY_PACKED header";
  RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &total)) << "in DELTA_BINARY_PACKED header";
  RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &first_zz)) << "in DELTA_BINARY_PACKED header";
  if (block_size == 0 || block_size % 128 != 0 || block_size > (1u << 20) || miniblocks == 0 ||
      block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0) {
    return DataLossError("DELTA_BINARY_PACKED header has invalid block size " +
                         std::to_string(block_size) + " / miniblocks " +
                         std::to_string(miniblocks));
  }
  if (total != static_cast<uint64_t>(n)) {
    return DataLossError("DELTA_BINARY_PACKED holds " + std::to_string(total) +
                         " values where the page needs " + std::to_string(n));
  }
  const int64_t per_mini = static_cast<int64_t>(block_size / miniblocks);
  if (n == 0) {
    *consumed = pos;
    return OkStatus();
  }
  U value = static_cast<U>((first_zz >> 1) ^ (~(first_zz & 1) + 1));
  out[0] = static_cast<T>(value);
  int64_t done = 1;
  while (done < n) {
    uint64_t min_zz;
    RECTRAIN_RETURN_IF_ERROR(ReadUleb(in, &pos, &min_zz)) << "in DELTA_BINARY_PACKED block";
    U min_delta = static_cast<U>((min_zz >> 1) ^ (~(min_zz & 1) + 1));
    if (pos + static_cast<int64_t>(miniblocks) > size) return Truncated("DELTA_BINARY_PACKED", done, n);
    const uint8_t* widths = in.data() + pos;
    pos += static_cast<int64_t>(miniblocks);
    for (uint64_t m = 0; m < miniblocks && done < n; ++m) {
      int bw = widths[m];
      if (bw > static_cast<int>(8 * sizeof(T))) {
        return DataLossError("DELTA_BINARY_PACKED miniblock bit width " + std::to_string(bw) +
                             " exceeds " + std::to_string(8 * sizeof(T)));
      }
      int64_t bytes = per_mini * bw / 8;
      int64_t take = std::min(per_mini, n - done);
      // Writers pad the last miniblock; accept a short one if the needed values are present.
      if (pos + bytes > size) {
        if (pos + (take * bw + 7) / 8 > size) return Truncated("DELTA_BINARY_PACKED", done, n);
        bytes = size - pos;
      }
      const uint8_t* src = in.data() + pos;
      const uint8_t* end = src + bytes;
      if (bw == 0) {
        for (int64_t j = 0; j < take; ++j) {
          value += min_delta;
          out[done + j] = static_cast<T>(value);
        }
      } else {
        int64_t bitpos = 0;
        for (int64_t j = 0; j < take; ++j, bitpos += bw) {
          value += min_delta + static_cast<U>(ExtractBits(src, end, bitpos, bw));
          out[done + j] = static_cast<T>(value);
        }
      }
      done += take;
      pos += bytes;
    }
  }
  *consumed = pos;
  return OkStatus();
}

template Status DecodeDeltaBinaryPacked<int32_t>(std::span<const uint8_t>, int64_t, int32_t*,
                                                 int64_t*);
template Status DecodeDeltaBinaryPacked<int64_t>(std::span<const uint8_t>, int64_t, int64_t*,
                                                 int64_t*);

Status DecodeByteStreamSplit(std::span<const uint8_t> in, int64_t n, int width, uint8_t* out) {
  if (static_cast<int64_t>(in.size()) != n * width) {
    return DataLossError("BYTE_STREAM_SPLIT data has " + std::to_string(in.size()) +
                         " bytes where " + std::to_string(n) + " values of " +
                         std::to_string(width) + " bytes need " + std::to_string(n * width));
  }
  for (int b = 0; b < width; ++b) {
    const uint8_t* stream = in.data() + b * n;
    for (int64_t i = 0; i < n; ++i) out[i * width + b] = stream[i];
  }
  return OkStatus();
}

bool IsValidUtf8(const uint8_t* p, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    if (n - i >= 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (int k = 1; k < len; ++k) {
      uint8_t cc = p[i + k];
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += len;
  }
  return true;
}

int BitWidth(uint64_t max_value) {
  int w = 0;
  while (w < 64 && (max_value >> w) != 0) ++w;
  return w;
}

namespace {

void AppendUleb(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Appends groups of 8 values (n a multiple of 8, or the padded tail) bit-packed LSB first.
void AppendBitPacked(const uint32_t* values, int64_t n, int bit_width, std::string* out) {
  const int64_t groups = (n + 7) / 8;
  AppendUleb(static_cast<uint64_t>(groups) << 1 | 1, out);
  uint64_t acc = 0;
  int bits = 0;
  for (int64_t i = 0; i < groups * 8; ++i) {
    const uint64_t v = i < n ? values[i] : 0;
    acc |= v << bits;
    bits += bit_width;
    while (bits >= 8) {
      out->push_back(static_cast<char>(acc & 0xff));
      acc >>= 8;
      bits -= 8;
    }
  }
  // groups * 8 * bit_width is a multiple of 8 bits: nothing is left over.
}

void AppendRleRun(uint32_t value, int64_t count, int bit_width, std::string* out) {
  AppendUleb(static_cast<uint64_t>(count) << 1, out);
  for (int b = 0; b < (bit_width + 7) / 8; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xff));
}

}  // namespace

void EncodeRleHybrid(const uint32_t* values, int64_t n, int bit_width, std::string* out) {
  // Literals collect in [lit_begin, i); a bit-packed run must hold a multiple of 8 values unless
  // it is the last, so a repeat run first tops the literals up to a multiple of 8.
  int64_t lit_begin = 0;
  int64_t i = 0;
  while (i < n) {
    int64_t run = 1;
    while (i + run < n && values[i + run] == values[i]) ++run;
    const int64_t pad = (8 - (i - lit_begin) % 8) % 8;
    if (run - pad >= 8) {
      if (i + pad > lit_begin) AppendBitPacked(values + lit_begin, i + pad - lit_begin, bit_width, out);
      AppendRleRun(values[i], run - pad, bit_width, out);
      lit_begin = i + run;
    }
    i += run;
  }
  if (n > lit_begin) AppendBitPacked(values + lit_begin, n - lit_begin, bit_width, out);
}

}  // namespace rectrain::io::parquet::internal
