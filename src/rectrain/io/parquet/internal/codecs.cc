#include "rectrain/io/parquet/internal/codecs.h"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <limits>

#include "rectrain/io/parquet/internal/metadata.h"

namespace rectrain::io::parquet::internal {
namespace {

Status SizeMismatch(const char* codec, int64_t got, int64_t want) {
  return DataLossError(std::string(codec) + " page decompressed to " + std::to_string(got) +
                       " bytes but the page header declares " + std::to_string(want));
}

Status Gzip(std::span<const uint8_t> in, std::span<uint8_t> out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return InternalError("zlib inflateInit2 failed");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.next_out = out.data();
  size_t in_left = in.size(), out_left = out.size();
  Status st;
  while (true) {
    uInt in_chunk = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
    uInt out_chunk =
        static_cast<uInt>(std::min<size_t>(out_left, std::numeric_limits<uInt>::max()));
    zs.avail_in = in_chunk;
    zs.avail_out = out_chunk;
    int rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out_left -= out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members: continue if input and room remain.
      if (in_left > 0 && out_left > 0) {
        if (inflateReset(&zs) != Z_OK) {
          st = DataLossError("GZIP stream reset failed");
          break;
        }
        continue;
      }
      break;
    }
    if (rc != Z_OK) {
      st = DataLossError(std::string("GZIP stream is corrupt: ") + (zs.msg ? zs.msg : "error " +
                                                                     std::to_string(rc)));
      break;
    }
    if (out_left == 0) {
      // Output full: the stream must end here (no more data).
      unsigned char probe;
      zs.next_out = &probe;
      zs.avail_out = 1;
      zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
      int rc2 = inflate(&zs, Z_NO_FLUSH);
      if (rc2 != Z_STREAM_END || zs.avail_out == 0) {
        st = DataLossError("GZIP page decompresses to more bytes than the page header declares (" +
                           std::to_string(out.size()) + ")");
      }
      break;
    }
    if (in_left == 0) {
      st = DataLossError("GZIP stream is truncated");
      break;
    }
  }
  int64_t produced = static_cast<int64_t>(out.size() - out_left);
  inflateEnd(&zs);
  if (!st.ok()) return st;
  if (out_left != 0) return SizeMismatch("GZIP", produced, static_cast<int64_t>(out.size()));
  return OkStatus();
}

Status Lz4Raw(std::span<const uint8_t> in, std::span<uint8_t> out, const char* name) {
  if (in.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      out.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return DataLossError(std::string(name) + " page larger than 2 GiB");
  }
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                              reinterpret_cast<char*>(out.data()), static_cast<int>(in.size()),
                              static_cast<int>(out.size()));
  if (n < 0) return DataLossError(std::string(name) + " stream is corrupt");
  if (static_cast<size_t>(n) != out.size()) return SizeMismatch(name, n, out.size());
  return OkStatus();
}

uint32_t LoadBE32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Hadoop's LZ4 framing: repeated [BE32 uncompressed][BE32 compressed][lz4 block]. Some old
// writers stored a bare LZ4 block under this codec; fall back to that, as Arrow does.
Status Lz4Hadoop(std::span<const uint8_t> in, std::span<uint8_t> out) {
  size_t ip = 0, op = 0;
  bool framed_ok = true;
  while (ip < in.size()) {
    if (in.size() - ip < 8) { framed_ok = false; break; }
    uint32_t usize = LoadBE32(in.data() + ip), csize = LoadBE32(in.data() + ip + 4);
    ip += 8;
    if (csize > in.size() - ip || usize > out.size() - op) { framed_ok = false; break; }
    if (!Lz4Raw(in.subspan(ip, csize), out.subspan(op, usize), "LZ4").ok()) {
      framed_ok = false;
      break;
    }
    ip += csize;
    op += usize;
  }
  if (framed_ok && op == out.size()) return OkStatus();
  return Lz4Raw(in, out, "LZ4");
}

}  // namespace

std::string CodecName(int32_t codec) {
  switch (codec) {
    case kUncompressed: return "UNCOMPRESSED";
    case kSnappy: return "SNAPPY";
    case kGzip: return "GZIP";
    case kLzo: return "LZO";
    case kBrotli: return "BROTLI";
    case kLz4Hadoop: return "LZ4";
    case kZstd: return "ZSTD";
    case kLz4Raw: return "LZ4_RAW";
    default: return "codec " + std::to_string(codec);
  }
}

int64_t MaxExpansion(int32_t codec, int64_t n) {
  switch (codec) {
    case kUncompressed: return n;
    case kSnappy: return n * 32 + 64;    // snappy's copy ops expand at most ~22x
    case kGzip: return n * 1032 + 1024;  // deflate's maximum ratio is 1032:1
    case kLz4Hadoop:
    case kLz4Raw: return n * 255 + 64;   // LZ4's maximum ratio is 255:1
    default: return -1;
  }
}

Status Decompress(int32_t codec, std::span<const uint8_t> in, std::span<uint8_t> out) {
  switch (codec) {
    case kUncompressed:
      if (in.size() != out.size()) {
        return DataLossError("UNCOMPRESSED page has " + std::to_string(in.size()) +
                             " bytes but the page header declares " + std::to_string(out.size()));
      }
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return OkStatus();
    case kSnappy: {
      size_t len = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(in.data()), in.size(), &len) !=
          SNAPPY_OK) {
        return DataLossError("SNAPPY stream is corrupt (bad length header)");
      }
      if (len != out.size()) return SizeMismatch("SNAPPY", len, out.size());
      size_t out_len = out.size();
      if (snappy_uncompress(reinterpret_cast<const char*>(in.data()), in.size(),
                            reinterpret_cast<char*>(out.data()), &out_len) != SNAPPY_OK) {
        return DataLossError("SNAPPY stream is corrupt");
      }
      if (out_len != out.size()) return SizeMismatch("SNAPPY", out_len, out.size());
      return OkStatus();
    }
    case kGzip:
      return Gzip(in, out);
    case kZstd: {
      size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(n)) {
        return DataLossError(std::string("ZSTD stream is corrupt: ") + ZSTD_getErrorName(n));
      }
      if (n != out.size()) return SizeMismatch("ZSTD", n, out.size());
      return OkStatus();
    }
    case kLz4Raw:
      return Lz4Raw(in, out, "LZ4_RAW");
    case kLz4Hadoop:
      return Lz4Hadoop(in, out);
    default:
      return UnimplementedError("compression codec " + CodecName(codec) +
                                " is not supported (supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, "
                                "LZ4_RAW, LZ4)");
  }
}

Status Compress(int32_t codec, int zstd_level, std::span<const uint8_t> in, PodVector<uint8_t>* out) {
  switch (codec) {
    case kSnappy: {
      size_t n = snappy_max_compressed_length(in.size());
      out->resize(n);
      if (snappy_compress(reinterpret_cast<const char*>(in.data()), in.size(), reinterpret_cast<char*>(out->data()),
                          &n) != SNAPPY_OK) {
        return InternalError("snappy_compress failed on " + std::to_string(in.size()) + " bytes");
      }
      out->resize(n);
      return OkStatus();
    }
    case kZstd: {
      out->resize(ZSTD_compressBound(in.size()));
      const size_t n = ZSTD_compress(out->data(), out->size(), in.data(), in.size(), zstd_level);
      if (ZSTD_isError(n)) return InternalError(std::string("ZSTD_compress failed: ") + ZSTD_getErrorName(n));
      out->resize(n);
      return OkStatus();
    }
    default:
      return InvalidArgumentError("cannot write pages compressed with " + CodecName(codec) +
                                  "; the writer supports UNCOMPRESSED, SNAPPY and ZSTD");
  }
}

}  // namespace rectrain::io::parquet::internal
