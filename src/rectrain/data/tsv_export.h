// rectrain/data/tsv_export.h: writes the Batches of a reader as a TSV file that rectrain reads
// back into the same Batches (`rectrain data convert INPUT... --to tsv`; docs/data.md "TSV
// export"). Rows are written after every transform, so reading them back must not transform
// again: the returned read-back config declares each dense feature with "fill(0)" (a spec with no
// numeric step: the value as written) and each sparse feature, and the group key, with "hex_id"
// (the token is the id, not hashed).
//
// Layout: a header line `label <dense names> <sparse names> [group]`, then one line per row:
//   label       0 or 1
//   dense       the transformed float in its shortest round-trip form (std::to_chars), so
//               parsing it gives the same float bit for bit
//   sparse      the 64-bit id as 16 lower-case hex digits; a multi-valued feature's ids joined
//               by ',' (read back with "split(',') | hex_id"); a row always has >= 1 id
//   group       the group key (a 64-bit hash) as 16 hex digits, when the input has one
// The label and group columns are named "label" and "group" unless a feature has that name,
// then "_" is appended until the name is free.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(auto reader, OpenBatchReader(config, options));
//   RECTRAIN_ASSIGN_OR_RETURN(TsvExportInfo info, ExportTsv(reader.get(), "out.tsv"));
//   // info.read_back reads out.tsv into the batches `reader` gave; info.yaml is the same as a
//   // training-config snippet.
//
// Thread safety: ExportTsv uses the reader from the calling thread only; reentrant otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {

struct TsvExportInfo {
  std::string path;
  int64_t rows = 0;
  int64_t bytes = 0;
  int multi_valued = 0;       // sparse features written as id lists
  bool has_group = false;
  DataConfig read_back;       // files = {path}, format tsv with header, the identity transforms
  std::string yaml;           // read_back as a config snippet (data: ..., features: ...)
};

// Reads `reader` to its end and writes every row to `out_path` (atomically: the file appears
// only when complete). Errors: the reader's errors; InvalidArgument when a feature name cannot
// be a TSV column (empty, tab, newline, leading '"'), a dense value is not finite, or there are
// no rows; I/O errors naming `out_path`.
Result<TsvExportInfo> ExportTsv(BatchReader* reader, const std::string& out_path);

}  // namespace rectrain::data
