// rectrain/data/internal/opener.h (internal to data/): the pieces the opener (open.cc) composes
// into OpenBatchReader and BuildCache. The dependencies point one way: open.cc uses the parsing
// reader (reader.cc) and the sample cache (cache.cc); neither of those calls the other or the
// opener.
// Thread safety: reentrant functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// data.format "auto": parquet when every file ends in .parquet, else criteo (InvalidArgument for
// a mix); any other format is returned as is (defined in reader.cc).
Result<DataFormat> ResolveFormat(DataFormat format, const std::vector<std::string>& paths);

// The parsing reader (criteo/csv/tsv/libsvm text and Parquet), never looking at a cache
// (defined in reader.cc).
Result<std::unique_ptr<BatchReader>> OpenParsingReader(const DataConfig& config, const ReadOptions& options);

// Defined in cache.cc. InvalidArgument for a bad codec or block size.
Status ValidateCacheWriteOptions(const CacheWriteOptions& options);
// Writes every batch of `reader` (opened on `source` in file order with batch_size ==
// options.block_rows) to a cache file at `path` keyed by `key`.
Result<CacheInfo> WriteCacheFrom(BatchReader& reader, const DataConfig& source, const std::string& key,
                                 const std::string& path, const CacheWriteOptions& options);
// OpenCacheReader with the note its readers report (BatchReader::cache_note()).
Result<std::unique_ptr<BatchReader>> OpenCacheFilesWithNote(const std::vector<std::string>& paths,
                                                            const ReadOptions& options,
                                                            const std::string& expected_key,
                                                            const std::string& signature, std::string note);
// "sample cache PATH (N rows, B bytes; key matches | built now in S s)".
std::string CacheNote(const CacheInfo& info);

}  // namespace rectrain::data::internal
