// rectrain/io/parquet/internal/encodings.h: private to io/parquet. Decoders for Parquet's value
// and level encodings over bounds-checked byte spans, and the encoders the writer uses. Each
// decoder returns DataLoss (message naming the encoding and the problem) when the input ends
// early or holds an out-of-range header; none reads outside `in` or writes more than `n`
// outputs. Encoders append to a std::string and take values the writer produced itself.
// Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/status.h"

namespace rectrain::io::parquet::internal {

// Reads a ULEB128 varint at in[*pos], advancing *pos.
Status ReadUleb(std::span<const uint8_t> in, int64_t* pos, uint64_t* out);

// Unpacks n little-endian bit-packed values of `bit_width` (<= 32) bits starting at bit 0.
// `in_size` is the number of readable bytes at `in` (it may extend past the packed values; more
// lets more values take the fast path, which loads 8 bytes at a time). Precondition:
// in_size * 8 >= n * bit_width.
void UnpackBits32(const uint8_t* in, int64_t in_size, int bit_width, int64_t n, uint32_t* out);

// RLE / bit-packed hybrid (without the 4-byte length prefix) of `bit_width` (0..32) bits; decodes
// exactly n values. A final run longer than needed is truncated.
template <typename T>
Status DecodeRleHybrid(std::span<const uint8_t> in, int bit_width, int64_t n, T* out);

// DELTA_BINARY_PACKED of exactly n values (the header's count must equal n). *consumed receives
// the stream's length in bytes.
template <typename T>
Status DecodeDeltaBinaryPacked(std::span<const uint8_t> in, int64_t n, T* out, int64_t* consumed);

// BYTE_STREAM_SPLIT of n values of `width` bytes into out (n * width bytes, little-endian
// values). in.size() must equal n * width.
Status DecodeByteStreamSplit(std::span<const uint8_t> in, int64_t n, int width, uint8_t* out);

// Bits needed for values 0..max_value (0 for max_value 0).
int BitWidth(uint64_t max_value);

// Appends the RLE / bit-packed hybrid encoding (without a length prefix) of values[0, n), each
// < 2^bit_width (bit_width 0..32): runs of 8 or more equal values become RLE runs, the rest
// bit-packed groups of 8 (the last group padded with zeros). DecodeRleHybrid(…, n) inverts it.
void EncodeRleHybrid(const uint32_t* values, int64_t n, int bit_width, std::string* out);

// Returns true if [p, p+n) is well-formed UTF-8 (no overlongs, surrogates, or > U+10FFFF).
bool IsValidUtf8(const uint8_t* p, int64_t n);

}  // namespace rectrain::io::parquet::internal
