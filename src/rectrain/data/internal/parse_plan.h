// rectrain/data/internal/parse_plan.h (internal to data/): the compiled read plan. A ParsePlan
// is built once from the config for any input format (which column is the label, which features
// are dense or sparse and from which columns, their transforms, the row filters, the group key)
// and then shared read-only by the text parser (text_parser.h), the Parquet row-group decoder
// (parquet_source.h) and the serving-time row parser (row_parser.h).
// Thread safety: a ParsePlan is immutable after BuildParsePlan (and FillStats).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"
#include "rectrain/data/transform.h"

namespace rectrain::data::internal {

// One column of the input: for text every column of the line; for Parquet every top-level
// column of the file schema. `slot` >= 0 when the plan reads it.
struct ColumnPlan {
  std::string name;
  int slot = -1;
  bool is_list = false;  // Parquet list column
};

struct FeaturePlan {
  std::string name;
  bool dense = false;
  int index = 0;              // dense or sparse index in the Batch
  int source = -1;            // column index (ParsePlan::columns)
  int source2 = -1;           // cross: second column
  FeatureTransform transform; // steps; the legacy global transform for dense without a spec
  size_t end_step = 0;        // steps [0, end_step) are applied (stats pass: before the stats step)
  bool has_spec = false;      // features.transforms names this feature
  bool numeric = false;       // sparse: the token is the number after numeric steps
  bool multi = false;         // sparse: several ids per row (split or a list column)
  int multi_index = -1;       // index among multi-valued sparse features
  char split_sep = 0;         // split(sep, ...) on text, 0 = none
  int64_t max_len = 0;        // 0 = unlimited
  uint64_t hash_mod = 0;      // hash(n): id % n; 0 = off
  bool hex_id = false;        // hex_id: the token is the id in 16 hex digits (not hashed)
  std::string hash_as;        // hash_as(feature): hash like that sparse feature ("" = itself)
  double fill = 0;            // value of a missing field (before the numeric steps)
  bool has_fill = false;      // a fill step (sparse: else a missing field has missing_id)
  int stats_step = -1;        // index of the stats step, -1 = none
  FeatureStats stats;         // filled by the stats pass
  static constexpr int kIntTableSize = 1024;
  std::vector<float> int_table;  // dense: Eval(k) for k in [0, kIntTableSize)
  float missing_value = 0;       // dense: Eval(fill)
  uint64_t premixed = 0;         // PremixSeed(DeriveSeed(hash_seed, index))
  uint64_t missing_id = 0;       // FeatureId(index, "", hash_seed) (mod hash_mod)

  double Eval(double x) const { return ApplyNumericSteps(transform, 0, end_step, x, stats); }
};

struct FilterPlan {
  RowFilter filter;
  int column = -1;
};

struct ParsePlan {
  DataFormat format = DataFormat::kCriteo;  // resolved: criteo | csv | tsv | parquet | libsvm | libffm
  char delimiter = '\t';
  bool quoting = false;  // csv/tsv: a field may be "quoted" ("" escapes a quote)
  bool header = false;   // every file starts with a header line
  std::vector<ColumnPlan> columns;
  std::vector<int> slot_columns;  // slot -> column index
  int label_column = -1;
  FeatureTransform label_transform;  // label steps (binarize, ...); empty = the text must be 0/1
  std::string label_expected;        // "0 or 1", or with steps a description
  std::vector<FeaturePlan> dense;
  std::vector<FeaturePlan> sparse;
  std::vector<int> multi_fields;     // sparse indices of multi-valued features
  std::vector<std::string> dense_names;
  std::vector<std::string> sparse_names;
  bool has_group = false;
  int group_column = -1;
  uint64_t group_premixed = 0;       // PremixSeed(hash_seed)
  bool group_hex = false;            // features.transforms.<group_key>: hex_id (not hashed)
  std::vector<FilterPlan> filters;
  uint64_t keep_negative_below = ~uint64_t{0};  // downsampling: keep if Mix64(key) <= this
  bool downsample = false;
  uint64_t downsample_seed = 0;
  std::string layout;   // for messages, e.g. "label, I1..I13, C1..C26"
  // libsvm / libffm (docs/formats/libsvm.md): the columns are the label, one per declared dense
  // key and (libffm) one list column per declared sparse field or (libsvm) one list column, the
  // bag, for every index not declared dense. A pair is routed by its key (libsvm: the index;
  // libffm: the field) through key_column.
  bool pairs = false;
  bool ffm = false;
  std::vector<int> key_column;  // key -> column index; -1 = undeclared; size = max key + 1
  int bag_column = -1;          // libsvm: the column of undeclared indices

  int num_dense() const { return static_cast<int>(dense_names.size()); }
  int num_sparse() const { return static_cast<int>(sparse_names.size()); }
  int num_multi() const { return static_cast<int>(multi_fields.size()); }
  int num_slots() const { return static_cast<int>(slot_columns.size()); }
  bool NeedsStats() const;
};

// Builds the plan for any format (criteo, csv, tsv, Parquet, libsvm, libffm). `header_columns` are the input's column names: the first file's header
// (csv/tsv with header: true) or the Parquet schema's top-level fields (`list_columns` marks
// which are lists); else empty. InvalidArgument names the bad setting (unknown format, a
// declared column missing, duplicate names, a bad transform or filter, ...).
// `stats_pass`: a plan for the statistics pass: only the features with a stats step, as dense
// features evaluated up to (not including) that step, no downsampling.
Result<ParsePlan> BuildParsePlan(const DataConfig& config,
                                 const std::vector<std::string>& header_columns,
                                 const std::vector<bool>& list_columns = {}, bool stats_pass = false);

// Sets the feature statistics (from a stats pass) and rebuilds the tables that depend on them.
// `stats[i]` belongs to the i-th feature with a stats step, in dense-then-sparse order.
void FillStats(ParsePlan* plan, const std::vector<FeatureStats>& stats);
// `stats` (frozen, DataConfig::feature_stats) if it has one entry per feature of `plan` with a
// stats step; else InvalidArgument naming both counts.
Result<std::vector<FeatureStats>> CheckFrozenStats(const ParsePlan& plan, const std::vector<FeatureStats>& stats);

}  // namespace rectrain::data::internal
