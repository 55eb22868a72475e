// rectrain/data/cache.h: the binary sample cache. Rows are transformed once (parse, transforms,
// filters, downsampling) and stored exactly as Batches carry them, in lz4-compressed,
// checksummed column blocks (docs/formats/cache.md), so later epochs, `eval` and tune trials
// read them instead of re-parsing text (docs/data.md "Sample cache").
//
// A cache is keyed by CacheKey(): the format version, every input file's path and fingerprint
// (size, mtime, hash of head and tail), a canonical text of everything that changes the rows
// (schema, transforms, hash_seed, filters, negative_downsampling, dense defaults, max_bad_rows)
// and, when a transform needs statistics, the fingerprints of the statistics files. Any change
// gives another key, so a stale cache is never read. The keyed file lives at
// <cache_dir>/samples-<16 hex digits of the key's hash>.rtc and stores the full key text, which
// is compared on open.
//
// Use: DataConfig::cache = "auto" makes OpenBatchReader() read the matching cache when there is
// one (else parse as usual), "build" writes it first when missing, "off" never looks. A cache
// file can also be read directly as input: files all ending in .rtc (whatever data.format
// says), or DataConfig::schema.format "cache".
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(CacheInfo info, BuildCache(config, read_options, {}));
//   config.cache = "auto";
//   RECTRAIN_ASSIGN_OR_RETURN(auto reader, OpenBatchReader(config, read_options));  // reads it
//
// Thread safety: free functions are reentrant; concurrent builds of one key each write a temp
// file and rename it into place (the file is never seen half-written).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {

struct CacheWriteOptions {
  std::string codec = "lz4";    // lz4 | zstd | none (per stream, stored raw when it saves < 10%)
  int64_t block_rows = 16384;   // rows per block: the unit of parallel decoding and shuffling
  bool force = false;           // BuildCache: rebuild even when a matching cache exists
};

// What a build produced, or what an existing cache holds.
struct CacheInfo {
  std::string path;
  bool built = false;          // false: an existing matching cache was found
  int64_t rows = 0;
  int64_t blocks = 0;
  int64_t file_bytes = 0;      // size of the cache file
  int64_t raw_bytes = 0;       // built only: Batch bytes the blocks decode to
  int64_t source_bytes = 0;    // bytes of the input files
  int64_t rows_rejected = 0;   // counters of the pass that built it
  int64_t rows_filtered = 0;
  int64_t rows_downsampled = 0;
  double seconds = 0;          // built only: wall time of the build
};

// The key text of what `config` reads (see the top comment). NotFound/InvalidArgument when the
// files (or statistics files) cannot be expanded or fingerprinted.
Result<std::string> CacheKey(const DataConfig& config);

// <CacheDir(config)>/samples-<hash>.rtc for a key.
std::string CachePath(const DataConfig& config, const std::string& key);

// The matching cache of `config`, if one exists and its stored key equals CacheKey(config).
// A file at the path whose key differs or that cannot be opened counts as no match.
Result<std::optional<CacheInfo>> FindCache(const DataConfig& config);

// Transforms `config.files` once (read in file order with `read`'s threads and chunk size) and
// writes the cache: to `out_path`, or ("" ) to the keyed path in the cache directory, where an
// existing matching cache is kept unless options.force. Errors: those of OpenBatchReader (bad
// rows name file:line), InvalidArgument for a bad codec/block size, I/O errors naming the path.
Result<CacheInfo> BuildCache(const DataConfig& config, const ReadOptions& read,
                             const CacheWriteOptions& options, const std::string& out_path = "");

// A BatchReader over cache files, in block order (shuffle: blocks permuted per (seed, epoch),
// then the shuffle buffer), honouring skip_rows and Recycle(). `expected_key` non-empty: each
// file's stored key must equal it. `signature` non-empty: each file's rows must have been built
// with this DataSignature (format aside), else InvalidArgument naming the first differing key.
Result<std::unique_ptr<BatchReader>> OpenCacheReader(const std::vector<std::string>& paths,
                                                     const ReadOptions& options,
                                                     const std::string& expected_key = "",
                                                     const std::string& signature = "");

// A pool of buffers for the cache readers of one run (ReadOptions::buffer_pool): the readers that
// share it reuse each other's pages, one after another. Thread-safe; a reader keeps its pool alive.
std::shared_ptr<ReaderBufferPool> MakeReaderBufferPool();

}  // namespace rectrain::data
