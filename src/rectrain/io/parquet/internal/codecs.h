// rectrain/io/parquet/internal/codecs.h: private to io/parquet. Page decompression for the
// Parquet codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW and (Hadoop-framed) LZ4.
// Decompress() writes exactly `out.size()` bytes (the size the page header declares) and fails
// with DataLoss if the stream is corrupt or decodes to any other size; BROTLI and LZO are
// Unimplemented. Callers bound out.size() before allocating; MaxExpansion() gives each codec's
// largest possible ratio so a hostile declared size can be rejected before allocation.
// Thread safety: stateless; safe to call concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "rectrain/base/status.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet::internal {

// Returns the codec's name as in parquet.thrift ("SNAPPY"), or "codec <n>" if unknown.
std::string CodecName(int32_t codec);

// Upper bound of uncompressed bytes that `compressed_bytes` of this codec can produce, or -1 if
// the codec has no useful bound (ZSTD: checked from the frame header instead).
int64_t MaxExpansion(int32_t codec, int64_t compressed_bytes);

Status Decompress(int32_t codec, std::span<const uint8_t> in, std::span<uint8_t> out);

// Replaces *out with `in` compressed by `codec` (SNAPPY or ZSTD at `zstd_level`); Decompress
// inverts it. *out is not zero-filled first (pages are compressed into one reused buffer).
// InvalidArgument for another codec (UNCOMPRESSED pages need no call); Internal if the library
// fails.
Status Compress(int32_t codec, int zstd_level, std::span<const uint8_t> in, PodVector<uint8_t>* out);

}  // namespace rectrain::io::parquet::internal
