// rectrain/serve/delta.h: the serving delta format (docs/formats/serving-delta.md): what changed
// in a served model since a base version, so that a trainer can publish every few seconds and
// `rectrain serve` can apply it in place instead of loading a whole model. A directory:
//   manifest.json     "rectrain-serving-delta": its version, the base version it applies to with
//                     the XXH64 of the base's manifest.json, and every file's size and XXH64
//   dense.bin         all dense parameters (they change at every step; small)
//   tables/NAME.delta per table: the OOV row, the rows that differ from the base (ids ascending)
//                     and the ids the base has that are gone (evicted, expired, below min_count)
// It sits in a versions directory beside full exports (models/7 full, models/8 a delta of 7, ...)
// and is written into DIR.tmp-HOST-PID and renamed, as exports are.
//
// Thread safety: functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/serve/model_package.h"

namespace rectrain::serve {

inline constexpr int kDeltaFormatVersion = 1;

// One table's changes, rows encoded as the base's row type (RowBytes(type, dim) each).
struct TableDelta {
  int dim = 0;
  RowType type = RowType::kFp32;
  std::vector<uint8_t> oov;           // the OOV row after the delta
  std::vector<uint64_t> ids;          // ascending: rows new or changed
  std::vector<uint8_t> rows;          // ids.size() rows
  std::vector<uint64_t> removed;      // ascending: ids that no longer have a row
};

struct DeltaTableEntry {
  std::string name;
  int dim = 0;
  RowType type = RowType::kFp32;
  int64_t changed = 0;   // rows new or changed
  int64_t removed = 0;   // ids removed
  int64_t rows = 0;      // stored rows once applied, the OOV row included (as a full export's)
  PackageFile file;
};

struct DeltaManifest {
  int format_version = kDeltaFormatVersion;
  int64_t version = 0;
  int64_t base_version = 0;
  uint64_t base_manifest_xxh64 = 0;  // of the base's manifest.json: which version `base_version` was
  std::string created;               // UTC, ISO 8601
  int64_t trained_steps = 0;
  std::string source_run;
  PackageFile dense;
  std::vector<DeltaTableEntry> tables;  // model order, as the base's
  TrainedEvents events;                 // of a version published by an online trainer
};

std::string DeltaManifestToJson(const DeltaManifest& m);
// DataLoss for JSON that is not a delta manifest; InvalidArgument for a newer format version.
Result<DeltaManifest> DeltaManifestFromJson(std::string_view text, const std::string& source);
// Whether manifest.json text is a delta's ("format": "rectrain-serving-delta"); false for
// anything else (a full model's, or not JSON: its reader says what is wrong).
bool IsDeltaManifest(std::string_view text);

// tables/NAME.delta (little-endian): a 48-byte header (magic "RTSRVDL1", u32 version, u32 dim,
// u32 row type, u32 row_bytes, u64 changed, u64 removed, u64 0), the OOV row, the changed ids,
// their rows, the removed ids. Written atomically.
Status WriteTableDeltaFile(const std::string& path, const TableDelta& d);
// DataLoss naming the file for a bad magic, version, or sizes that do not add up; ids not
// ascending. `expected` gives dim, type, changed and removed (from the manifest).
Result<TableDelta> ReadTableDeltaFile(const std::string& path, const DeltaTableEntry& expected);

// Checks the delta's files as VerifyPackage does a model's (size; XXH64 when `checksums`).
Status VerifyDelta(const std::string& dir, const DeltaManifest& m, bool checksums);

}  // namespace rectrain::serve
