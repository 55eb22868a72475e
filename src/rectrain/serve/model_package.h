// rectrain/serve/model_package.h: the serving model format (docs/formats/serving-model.md), what
// `rectrain export` writes and `rectrain serve` / `rectrain predict` load. A directory:
//   manifest.json     format version, model version, what the model reads (data layout, frozen
//                     feature statistics), its tables, and every file's size and XXH64 checksum
//   config.yaml       the run's resolved training config (the model and data keys)
//   dense.bin         the dense parameters (checkpoint/dense_file.h, no optimizer state)
//   tables/NAME.rows  one per embedding table: an open-addressing id index and the rows, in
//                     fp32, fp16 or int8 (one fp32 scale per row), laid out to be memory-mapped
// It is written into DIR.tmp-HOST-PID and renamed onto DIR when complete, so a directory of
// versions never shows a half-written one (export.h removes those of dead exports).
//
// Thread safety: functions are reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/data/reader.h"

namespace rectrain::serve {

inline constexpr int kPackageFormatVersion = 1;

// A version directory's name: 1 to 18 decimal digits ("7"; "7.tmp-42" is not one).
inline bool IsVersionName(std::string_view name) {
  if (name.empty() || name.size() > 18) return false;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

enum class RowType : uint8_t { kFp32 = 0, kFp16 = 1, kInt8 = 2 };
std::string_view RowTypeName(RowType t);  // fp32 | fp16 | int8
Result<RowType> ParseRowType(std::string_view name);  // InvalidArgument naming the choices
// Bytes of one stored row of `dim` weights.
int64_t RowBytes(RowType t, int dim);

struct PackageFile {
  std::string path;    // relative to the package directory
  int64_t bytes = 0;
  uint64_t xxh64 = 0;  // of the whole file, seed 0
};

struct PackageTable {
  std::string name;
  int dim = 0;
  RowType type = RowType::kFp32;
  int64_t rows = 0;        // stored rows, the OOV row included
  int64_t dropped = 0;     // rows left out by the export's min_count
  PackageFile file;
};

// What an online trainer had trained on when it published a version (optional "events" of both
// manifests; docs/formats/serving-delta.md): the freshness of a served version is its apply time
// minus newest_ms. Zero / empty for a model exported from a finished run.
struct TrainedEvents {
  int64_t newest_ms = 0;        // event time of the newest stream message trained into it (ms since the epoch)
  std::string stream_position;  // JSON (stream::StreamPosition) of the stream after that message; "" if none
  bool empty() const { return newest_ms == 0 && stream_position.empty(); }
};

struct Manifest {
  int format_version = kPackageFormatVersion;
  int64_t version = 1;            // the model version (a versions directory serves the highest)
  std::string created;            // UTC, ISO 8601
  std::string model_type;         // model.type
  int64_t trained_steps = 0;
  std::string source_run;         // the run directory it was exported from
  int64_t min_count = 0;          // rows updated fewer times were left out (read the OOV row)
  data::RowLayout layout;         // format, header, frozen feature statistics
  std::vector<std::string> dense_names, sparse_names;  // the parser's columns, Batch order
  std::vector<std::string> task_names;                 // one per output (task 0: the label)
  std::vector<int> feature_columns;                    // dense columns the model reads
  double negative_downsampling = 1.0;                  // logits are calibrated by it
  PackageFile config, dense;
  std::vector<PackageTable> tables;
  TrainedEvents events;  // of a version published by an online trainer
};

std::string ManifestToJson(const Manifest& m);
// DataLoss for JSON that is not a manifest; InvalidArgument for a newer format version.
Result<Manifest> ManifestFromJson(std::string_view text, const std::string& source);
// Reads DIR/manifest.json.
Result<Manifest> ReadManifest(const std::string& dir);

// Checks every file of the manifest: present, of its size, and (`checksums`) of its XXH64,
// reading with read(2) so that the pages do not count in the process's memory. DataLoss names
// the file and what differs.
Status VerifyPackage(const std::string& dir, const Manifest& m, bool checksums = true);
// The same for any list of files of a directory (a delta's).
Status VerifyFiles(const std::string& dir, const std::vector<const PackageFile*>& files, bool checksums);

// XXH64 and size of a file (streamed).
Result<PackageFile> DescribeFile(const std::string& dir, const std::string& relative_path);

// ---- Table files ----
// Writes rows (ids[i] -> weights[i·dim ..]) as `type` with `oov` (dim weights) as row 0, to
// `path` (atomically). Ids must be unique (InvalidArgument).
Status WriteTableFile(const std::string& path, int dim, RowType type, std::span<const uint64_t> ids,
                      std::span<const float> weights, std::span<const float> oov);

// Dequantisation of one stored row into `out` (dim floats).
void DecodeRow(RowType type, const uint8_t* row, int dim, float* out);
void EncodeRow(RowType type, const float* w, int dim, uint8_t* row);

}  // namespace rectrain::serve
