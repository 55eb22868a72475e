// rectrain/data/internal/cache_dispatch.h (internal to data/): how OpenBatchReader (reader.cc)
// and the sample cache (cache.cc) call each other without recursion.
// Thread safety: reentrant functions.
#pragma once

#include <memory>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// True when OpenBatchReader must go through OpenWithCache: data.cache is not "off", or the
// input is cache files (format "cache", or every file ending in .rtc, whatever the format).
bool UsesCache(const DataConfig& config);

// data.cache off|auto|build and cache-file inputs (defined in cache.cc).
Result<std::unique_ptr<BatchReader>> OpenWithCache(const DataConfig& config, const ReadOptions& options);

// The parsing reader (text and Parquet), never looking at a cache (defined in reader.cc).
Result<std::unique_ptr<BatchReader>> OpenParsingReader(const DataConfig& config, const ReadOptions& options);

}  // namespace rectrain::data::internal
