// rectrain/data/format.h: the modes of reading samples, as types: the input format
// (data.format) and the sample-cache mode (data.cache). Parsed once where a config, a flag or a
// model manifest names them; compared as values everywhere after.
//
// Thread safety: immutable tables.
#pragma once

#include <cstdint>
#include <span>

#include "rectrain/base/named_enum.h"

namespace rectrain::data {

// The layout of the input files (docs/data.md, docs/formats/). kAuto resolves per split from the
// files (Parquet when every file is one, IDX by magic, else criteo); kCache reads sample-cache
// files (docs/formats/cache.md), which is what files ending in .rtc always are.
enum class DataFormat : uint8_t { kAuto, kCriteo, kCsv, kTsv, kParquet, kLibsvm, kLibffm, kIdx, kCache };

inline constexpr NamedEnum<DataFormat>::Entry kDataFormatEntries[] = {
    {DataFormat::kAuto, "auto"},       {DataFormat::kCriteo, "criteo"}, {DataFormat::kCsv, "csv"},
    {DataFormat::kTsv, "tsv"},         {DataFormat::kParquet, "parquet"}, {DataFormat::kLibsvm, "libsvm"},
    {DataFormat::kLibffm, "libffm"},   {DataFormat::kIdx, "idx"},       {DataFormat::kCache, "cache"}};
// Every format's name (a model manifest's data.format, logs, cache keys).
inline constexpr NamedEnum<DataFormat> kDataFormats(kDataFormatEntries);
// The formats a user names in data.format (cache files are recognised by their .rtc suffix).
inline constexpr NamedEnum<DataFormat> kConfigDataFormats(std::span<const NamedEnum<DataFormat>::Entry>(kDataFormatEntries, 8));

inline const char* FormatName(DataFormat f) { return kDataFormats.Name(f); }

// Delimited text with a column per field, whose columns are named by data.columns, a header or
// (Parquet) the file's schema rather than fixed by the format.
inline bool HasNamedColumns(DataFormat f) {
  return f == DataFormat::kCsv || f == DataFormat::kTsv || f == DataFormat::kParquet;
}
// libsvm / libffm: "label index:value ..." rows (docs/formats/libsvm.md).
inline bool IsSvmLight(DataFormat f) { return f == DataFormat::kLibsvm || f == DataFormat::kLibffm; }

// data.cache: off (always parse) | auto (read the matching sample cache when one exists) |
// build (write it on the first read when missing).
enum class CacheMode : uint8_t { kOff, kAuto, kBuild };
inline constexpr NamedEnum<CacheMode>::Entry kCacheModeEntries[] = {
    {CacheMode::kOff, "off"}, {CacheMode::kAuto, "auto"}, {CacheMode::kBuild, "build"}};
inline constexpr NamedEnum<CacheMode> kCacheModes(kCacheModeEntries);

}  // namespace rectrain::data
