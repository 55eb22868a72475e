// rectrain/data/internal/cache_format.h (internal to data/): the byte layout of the binary
// sample cache (docs/formats/cache.md): encoding Batches into checksummed, compressed column
// blocks (CacheFileWriter) and reading them back with every length and offset bounded before
// use (CacheFile). The public face is data/cache.h; this header is the format itself.
//
// File = header (16 bytes) | blocks | footer (JSON) | trailer (32 bytes). A block holds up to
// `block_rows` rows as a sequence of streams (labels, dense, per sparse field [offsets,] ids,
// [group keys]), each with a 24-byte descriptor: codec, encoding, stored size, decoded size,
// XXH3-64 of the stored bytes. A truncated or corrupt file is a DataLoss error naming the file
// and the block, never a crash.
//
// Thread safety: a CacheFile is immutable after Open(); ReadBlock() may be called from many
// threads at once (each with its own scratch). A CacheFileWriter is used by one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/batch.h"
#include "rectrain/io/file.h"

namespace rectrain::data::internal {

inline constexpr uint32_t kCacheFormatVersion = 1;
inline constexpr int64_t kCacheMaxBlockRows = int64_t{1} << 20;
inline constexpr int64_t kCacheMaxStreamBytes = int64_t{1} << 30;
inline constexpr int64_t kCacheMaxFooterBytes = int64_t{1} << 30;

enum class CacheCodec : uint8_t { kNone = 0, kLz4 = 1, kZstd = 2 };

// "none" | "lz4" | "zstd"; InvalidArgument otherwise.
Result<CacheCodec> ParseCacheCodec(const std::string& name);
const char* CacheCodecName(CacheCodec codec);

// What the rows are: the field layout every block follows, and where they came from.
struct CacheSchema {
  std::vector<std::string> dense_names;
  std::vector<std::string> sparse_names;
  std::vector<bool> multi;  // per sparse field: CSR (several ids per row) or one id per row
  bool has_group = false;
};

// Counters of the pass that built the cache (reported again by every reader of it).
struct CacheBuildCounts {
  int64_t rows_rejected = 0;
  int64_t rows_filtered = 0;
  int64_t rows_downsampled = 0;
  int64_t source_files = 0;
  int64_t source_bytes = 0;
};

struct CacheBlockRef {
  int64_t offset = 0;  // of the block header in the file
  int64_t bytes = 0;   // header + descriptors + streams
  int64_t rows = 0;
};

// The footer: everything needed to read the blocks and to decide whether the cache matches.
struct CacheFooter {
  std::string key;         // the cache key text (data/cache.h CacheKey); "" for converted files
  std::string signature;   // DataSignature of the config that built it (rows' transforms)
  std::string source_format;
  CacheSchema schema;
  std::string codec;       // the writer's codec (per stream the stored codec may be none)
  int64_t block_rows = 0;  // the writer's block size (the last block may be smaller)
  int64_t rows = 0;
  CacheBuildCounts counts;
  std::vector<CacheBlockRef> blocks;
};

// Writes a cache file atomically (temp file + rename on Finish()). Append() takes batches of
// any size and cuts them into blocks of `block_rows` rows; every batch must follow `schema`.
class CacheFileWriter {
 public:
  // InvalidArgument for block_rows outside 1..kCacheMaxBlockRows; I/O errors name the path.
  static Result<std::unique_ptr<CacheFileWriter>> Create(const std::string& path,
                                                         CacheSchema schema, CacheCodec codec,
                                                         int64_t block_rows);
  ~CacheFileWriter();
  // InvalidArgument if the batch does not follow the schema.
  Status Append(const Batch& batch);
  // Writes the last block, the footer (with `key`, `signature`, `source_format`, `counts`) and
  // commits the file. Call once.
  Status Finish(const std::string& key, const std::string& signature,
                const std::string& source_format, const CacheBuildCounts& counts);
  int64_t rows() const { return rows_; }
  int64_t bytes_written() const;
  int64_t raw_bytes() const { return raw_bytes_; }  // decoded size of every stream

 private:
  CacheFileWriter() = default;
  Status FlushBlock();
  std::unique_ptr<io::AtomicFileWriter> out_;
  std::string path_;
  CacheSchema schema_;
  CacheCodec codec_ = CacheCodec::kLz4;
  int64_t block_rows_ = 0;
  Batch pending_;  // rows not yet written as a block
  int64_t rows_ = 0;
  int64_t raw_bytes_ = 0;
  int64_t offset_ = 0;
  std::vector<CacheBlockRef> blocks_;
  std::string scratch_;
};

// A growable buffer that is not zero-filled (std::string::resize would memset every growth).
class CacheByteBuffer {
 public:
  char* Get(size_t n) {
    if (n > capacity_) {
      capacity_ = std::max(n, capacity_ * 2);
      data_.reset(new char[capacity_]);
    }
    return data_.get();
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

// Per-thread buffers for ReadBlock (reused across blocks).
struct CacheReadScratch {
  CacheByteBuffer stored;
  CacheByteBuffer decoded;
};

class CacheFile {
 public:
  // Reads and validates the header, trailer and footer. NotFound/InvalidArgument as for
  // io::RandomAccessFile::Open; DataLoss (naming the path and what is wrong) for a file that is
  // not a cache, of another format version, truncated, or with an inconsistent footer.
  static Result<std::unique_ptr<CacheFile>> Open(const std::string& path);

  const CacheFooter& footer() const { return footer_; }
  const std::string& path() const { return path_; }
  int64_t file_size() const { return file_->size(); }

  // Decodes block `index` into *out (buffers reused; out->source/first_line left unset).
  // DataLoss naming the file and block on a checksum mismatch, a bad descriptor, a failed
  // decompression or sizes that disagree with the footer. `index` must be in range (checked).
  Status ReadBlock(int64_t index, CacheReadScratch* scratch, Batch* out) const;

 private:
  CacheFile() = default;
  std::string path_;
  std::unique_ptr<io::RandomAccessFile> file_;
  CacheFooter footer_;
};

// The footer as the JSON text stored in the file (exposed for tests).
std::string EncodeCacheFooter(const CacheFooter& footer);

}  // namespace rectrain::data::internal
