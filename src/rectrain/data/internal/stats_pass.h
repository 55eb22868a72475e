// rectrain/data/internal/stats_pass.h (internal to data/): the statistics pass behind the
// `standardize` and `quantiles(n)` transforms, and the key that identifies what a config makes
// of its input rows (for the statistics file and the binary cache).
//
// The pass reads DataConfig::stats_files (default: files) once with a stats-pass plan (each
// feature with a stats step, evaluated up to that step, as a dense value) and computes mean and
// standard deviation (Welford, double) or the n-quantile boundaries (from a deterministic
// reservoir of up to 1M values per feature). Results are kept in
// <cache_dir>/stats-<key>.txt, keyed by the stats files' fingerprints and the config, and reused
// while neither changes; a cache directory that cannot be written only costs a recomputation.
// Thread safety: functions are reentrant; concurrent passes on one cache dir write atomically.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// Everything in `config` that changes the rows a reader delivers, as text (files excluded).
std::string DataSignature(const DataConfig& config);

// The cache directory: config.cache_dir, or $TMPDIR/rectrain-cache (/tmp when unset).
std::string CacheDir(const DataConfig& config);

// Stats of every feature of `plan` with a stats step, in dense-then-sparse order.
Result<std::vector<FeatureStats>> ComputeFeatureStats(const DataConfig& config,
                                                      const ReadOptions& options,
                                                      const ParsePlan& plan);

// Opens a reader with the stats-pass plan (defined in reader.cc).
Result<std::unique_ptr<BatchReader>> OpenStatsPassReader(const DataConfig& config,
                                                         const ReadOptions& options);

}  // namespace rectrain::data::internal
