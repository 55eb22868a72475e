// The opener: OpenBatchReader and BuildCache, the one layer above the parsing reader
// (reader.cc) and the sample cache (cache.cc). It decides, per DataConfig, what a pass reads:
//   cache files as input (format "cache", or every file ending in .rtc)  -> the cache reader
//   data.cache off                                                       -> the parsing reader
//   data.cache auto: the keyed cache when one matches, else the parsing reader
//   data.cache build: the keyed cache, written first from the parsing reader when missing
//   IDX image files (format idx, or auto on ...-images-idx3-ubyte[.gz])   -> the IDX reader
// A key that cannot be computed (a missing file, say) falls back to the parsing reader, whose
// messages name the file and the option.
#include <algorithm>
#include <filesystem>

#include "rectrain/data/cache.h"
#include "rectrain/data/internal/idx_reader.h"
#include "rectrain/data/internal/opener.h"
#include "rectrain/data/internal/stats_pass.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Cache files are read as such whatever data.format says (parsing them as text never helps).
bool ReadsCacheFiles(const DataConfig& config, const std::vector<std::string>& paths) {
  if (config.schema.format == DataFormat::kCache) return true;
  return !paths.empty() && std::all_of(paths.begin(), paths.end(), [](const std::string& p) { return EndsWith(p, ".rtc"); });
}

}  // namespace

Result<std::unique_ptr<BatchReader>> OpenBatchReader(const DataConfig& config, const ReadOptions& options) {
  {
    Result<std::vector<std::string>> paths = io::ExpandPaths(config.files);
    if (config.schema.format == DataFormat::kCache && !paths.ok()) return paths.status();
    if (paths.ok() && ReadsCacheFiles(config, *paths)) {
      return OpenCacheReader(*paths, options, "", internal::DataSignature(config));
    }
    // IDX image datasets are read whole into memory: no keyed cache in front of them.
    if (config.schema.format == DataFormat::kIdx || (config.schema.format == DataFormat::kAuto && paths.ok() && internal::LooksLikeIdx(*paths))) {
      return internal::OpenIdxReader(config, options);
    }
  }
  if (config.cache == CacheMode::kOff) return internal::OpenParsingReader(config, options);
  Result<std::string> key = CacheKey(config);
  if (!key.ok()) return internal::OpenParsingReader(config, options);
  Result<std::optional<CacheInfo>> found = FindCache(config);
  if (!found.ok()) return internal::OpenParsingReader(config, options);
  std::optional<CacheInfo> info = *found;
  if (!info && config.cache == CacheMode::kBuild) {
    RECTRAIN_ASSIGN_OR_RETURN(CacheInfo built, BuildCache(config, options, CacheWriteOptions{}));
    info = built;
  }
  if (!info) return internal::OpenParsingReader(config, options);
  return internal::OpenCacheFilesWithNote({info->path}, options, *key, "", internal::CacheNote(*info));
}

Result<CacheInfo> BuildCache(const DataConfig& config, const ReadOptions& read,
                             const CacheWriteOptions& options, const std::string& out_path) {
  RECTRAIN_RETURN_IF_ERROR(internal::ValidateCacheWriteOptions(options));
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, CacheKey(config));
  std::string path = out_path;
  if (path.empty()) {
    if (!options.force) {
      RECTRAIN_ASSIGN_OR_RETURN(std::optional<CacheInfo> found, FindCache(config));
      if (found) return *found;
    }
    const std::string dir = internal::CacheDir(config);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return UnavailableError("cannot create the cache directory " + dir + " (data.cache_dir): " + ec.message());
    path = CachePath(config, key);
  }
  DataConfig src = config;
  src.cache = CacheMode::kOff;
  ReadOptions ro = read;
  ro.shuffle = false;
  ro.skip_rows = 0;
  ro.epoch = 0;
  ro.batch_size = options.block_rows;  // one batch per block
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenBatchReader(src, ro));
  return internal::WriteCacheFrom(*reader, src, key, path, options);
}

}  // namespace rectrain::data
