// rectrain/data/profile.h: a data-quality profile of sample files (per-column non-null ratio,
// min/max/mean, approximate distinct count, label rate, rows per file) and threshold checks
// (`checks:` in the config) that report every violation at once. Used by `rectrain data stats`
// and `rectrain data check` (docs/data.md, "Data quality").
//
// Columns are the files' raw columns, before transforms: criteo = label, I1..In, C1..Cm;
// csv/tsv = the header or schema.columns; libsvm / libffm = label, the declared dense keys and
// the categorical fields (libffm) or bag (libsvm; its values are the indices); parquet = the file schema's top-level fields (list
// columns count a null or empty list as null; their min/max/mean/distinct are over elements);
// sample cache files (every path ends in .rtc, or format "cache") = label, the dense features
// and the sparse fields as stored, i.e. after transforms: the label is counted as stored,
// distinct is over values/ids, and nothing is null (filled or given an id when it was built).
// A field is null when it is empty (text) or null (Parquet). min/max/mean are over the non-null
// values that parse as finite numbers (`numeric`); distinct is a HyperLogLog estimate (2^12
// registers, about 1.6% standard error; capped at non_null) over the non-null values' text.
// The label rate is the share of rows whose label, after the label's transform in
// `transforms` (e.g. binarize(8)), is 1, among rows with a numeric label. A text row with the wrong number of fields is counted
// in FileProfile::bad_rows and not profiled.
//
// Files are profiled in parallel (num_threads workers, one file at a time each); results do not
// depend on the thread count. Errors (missing file, unreadable Parquet) name the file.
//
// Thread safety: pure functions; `progress` is called from the calling thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {

struct ColumnProfile {
  std::string name;
  int64_t rows = 0;      // rows seen
  int64_t non_null = 0;  // rows with a value
  int64_t numeric = 0;   // non-null values that are finite numbers
  double min = 0;        // over numeric values (0 when there are none)
  double max = 0;
  double sum = 0;
  double distinct = 0;   // HyperLogLog estimate of distinct non-null values
  double NullRatio() const { return rows == 0 ? 0.0 : 1.0 - static_cast<double>(non_null) / rows; }
  double Mean() const { return numeric == 0 ? 0.0 : sum / static_cast<double>(numeric); }
};

struct FileProfile {
  std::string path;
  int64_t rows = 0;      // rows profiled
  int64_t bad_rows = 0;  // text rows with a wrong field count (not profiled)
  bool truncated = false;  // the file has more rows than were profiled (max_rows)
};

struct DataProfile {
  std::vector<FileProfile> files;
  std::vector<ColumnProfile> columns;  // in the files' column order
  int64_t rows = 0;
  std::string label;             // the label column ("" = none found)
  int64_t labeled_rows = 0;      // rows whose (transformed) label is a number
  int64_t positive_rows = 0;     // ... equal to 1
  bool truncated = false;        // some file was profiled only up to its share of max_rows
  double LabelRate() const {
    return labeled_rows == 0 ? 0.0 : static_cast<double>(positive_rows) / labeled_rows;
  }
};

// Thresholds (YAML `checks:`). Unset thresholds are not checked.
struct DataChecks {
  std::map<std::string, double> max_null_ratio;  // column (or "*" = every column) -> max ratio
  int64_t min_rows = 0;                          // 0 = no check (also skipped when truncated)
  bool has_label_rate = false;
  double label_rate_min = 0;                     // inclusive bounds
  double label_rate_max = 1;
  int64_t max_bad_rows = -1;                     // -1 = no check (text rows with a bad field count)
  // The check before `rectrain train` (docs/data.md):
  bool allow_constant_label = false;  // false: every labeled row 0 (or every one 1) is a violation
  int64_t max_rows = 200000;          // rows profiled per split, shared by its files; 0 = all
  bool before_train = true;           // `rectrain train` runs the check first
};

// Profiles `files` (paths or globs; expanded and sorted). `schema` gives the format and column
// names (format auto: parquet when every file ends in .parquet, else criteo); `transforms` may
// hold the label's transform. `progress(done, total)` is called on the calling thread as files
// complete (one call may report several), ending with (total, total).
// `max_rows` > 0 bounds the work: each of the n files is profiled up to ceil(max_rows / n) rows
// (text: lines, good or bad; Parquet: whole row groups until reached), from its start; a file
// cut short sets `truncated`. The result does not depend on num_threads.
Result<DataProfile> ProfileFiles(const std::vector<std::string>& files, const SchemaConfig& schema,
                                 const std::map<std::string, std::string>& transforms,
                                 int num_threads,
                                 const std::function<void(int64_t, int64_t)>& progress = {},
                                 int64_t max_rows = 0);

// Every violation of `checks` by `profile`, one message each, in a fixed order (rows, bad rows,
// constant label, label rate, then null ratios by column). Empty = the data passes. Messages look like
//   rows: 800 is below checks.min_rows = 1000     (not checked when the profile is truncated)
//   label: constant: all 500 labeled rows are 0 (label label); ... allow_constant_label: true)
//   label rate: 0.950 is outside checks.label_rate [0.01, 0.9]
//   I1: null ratio 0.620 exceeds checks.max_null_ratio.I1 = 0.5
//   checks.max_null_ratio.zz: no such column (columns: label, I1, ...)
std::vector<std::string> CheckProfile(const DataProfile& profile, const DataChecks& checks);

// The profile as an aligned text table (files, then columns, then the label rate).
std::string FormatProfileTable(const DataProfile& profile);
// The profile (and `violations`, when given) as JSON:
// {"rows":N,"label":"..","label_rate":x,"files":[{"path","rows","bad_rows"}],
//  "columns":[{"name","rows","non_null","null_ratio","numeric","min","max","mean","distinct"}],
//  "violations":[..]}
std::string FormatProfileJson(const DataProfile& profile,
                              const std::vector<std::string>* violations = nullptr);

}  // namespace rectrain::data
