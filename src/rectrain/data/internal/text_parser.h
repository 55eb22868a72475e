// rectrain/data/internal/text_parser.h (internal to data/): the compiled read plan and the
// per-line text parser behind the BatchReader. A ParsePlan is compiled once from the config
// (which column is the label, which features are dense or sparse and from which columns, their
// transforms, the row filters, the group key) and then shared read-only by all parse workers.
// The same plan drives the Parquet row-group decoder (parquet_source.h): both feed raw field
// values through EvalRow (row_eval.h), so a row gives the same Batch row from either format.
//
// The text hot path allocates nothing: fields are split in place, numbers parsed with a
// hand-written integer fast path (a per-feature table for 0..1023, falling back to
// std::from_chars), and tokens hashed straight from the bytes.
// Thread safety: a ParsePlan is immutable after BuildPlan (and FillStats); a LineParser and a
// RowBlock belong to one thread at a time.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"
#include "rectrain/data/transform.h"

namespace rectrain::data::internal {

// HashBytes(bytes, seed) with Mix64(seed) precomputed: PremixSeed(seed) then HashPremixed(bytes,
// premixed) returns exactly rectrain::HashBytes(bytes, seed) (tested), but cheaper per token.
inline uint64_t PremixSeed(uint64_t seed) { return 0xcbf29ce484222325ULL ^ Mix64(seed); }
[[gnu::always_inline]] inline uint64_t HashPremixed(std::string_view bytes, uint64_t premixed) {
  // Must equal rectrain::HashBytes (base/random.h) bit for bit: ids are stored in checkpoints.
  static_assert(std::endian::native == std::endian::little,
                "HashPremixed loads little-endian words; add a byte swap for big-endian hosts");
  uint64_t h = premixed;
  const char* p = bytes.data();
  size_t n = bytes.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  for (int b = 0; i < n; ++i, ++b) {
    tail |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * b);
  }
  h = (h ^ tail ^ (uint64_t(n) << 56)) * 0x100000001b3ULL;
  return Mix64(h);
}

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
  std::string format;   // criteo | csv | tsv | parquet | libsvm | libffm
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

// Builds the plan. `header_columns` are the input's column names: the first file's header
// (csv/tsv with header: true) or the Parquet schema's top-level fields (`list_columns` marks
// which are lists); else empty. InvalidArgument names the bad setting (unknown format, a
// declared column missing, duplicate names, a bad transform or filter, ...).
// `stats_pass`: a plan for the statistics pass: only the features with a stats step, as dense
// features evaluated up to (not including) that step, no downsampling.
Result<ParsePlan> BuildPlan(const DataConfig& config,
                            const std::vector<std::string>& header_columns,
                            const std::vector<bool>& list_columns = {}, bool stats_pass = false);

// Sets the feature statistics (from a stats pass) and rebuilds the tables that depend on them.
// `stats[i]` belongs to the i-th feature with a stats step, in dense-then-sparse order.
void FillStats(ParsePlan* plan, const std::vector<FeatureStats>& stats);
// `stats` (frozen, DataConfig::feature_stats) if it has one entry per feature of `plan` with a
// stats step; else InvalidArgument naming both counts.
Result<std::vector<FeatureStats>> CheckFrozenStats(const ParsePlan& plan, const std::vector<FeatureStats>& stats);

// Splits a header line into column names (same quoting rules as data rows).
std::vector<std::string> SplitHeader(std::string_view line, char delimiter, bool quoting);

enum class BadRowKind : uint8_t {
  kColumnCount, kBadDense, kBadLabel, kBadQuote, kBadNumber,
  kBadPair, kBadWeight, kUndeclaredField, kDuplicateKey,  // libsvm / libffm
};

// A rejected row; the message is built later, once the file's absolute line is known.
struct BadRow {
  int64_t rel_line = 0;    // 1-based line (Parquet: row) within the chunk
  int64_t column = 0;      // 1-based byte column in the line (0 for Parquet)
  BadRowKind kind = BadRowKind::kColumnCount;
  int plan_column = -1;    // offending column (field errors)
  int feature = -1;        // kBadNumber: sparse feature index
  int found_fields = 0;    // kColumnCount
  int64_t key = -1;        // kUndeclaredField, kDuplicateKey: the field or index
  std::string text;        // offending text (field) or the line (column count), <= 64 bytes
  std::string raw_line;    // the whole line, kept only when a rejects file is written
};

// "<file>:<line>:<column>: ..." (Parquet: "<file>: row <n>: ...") without the hint.
std::string FormatBadRow(const ParsePlan& plan, const BadRow& bad, std::string_view file,
                         int64_t line);

// A multi-valued sparse feature's ids of a block of rows, CSR.
struct MultiColumn {
  std::vector<int32_t> offsets;  // rows + 1 entries (valid part); offsets[0] == 0
  std::vector<uint64_t> ids;
};

// Rows of one chunk, row-major. Vectors are sized to capacity and reused across chunks; only
// the first `rows` rows are valid.
struct RowBlock {
  int64_t rows = 0;
  int64_t capacity = 0;
  std::vector<float> labels;
  std::vector<float> dense;       // rows × num_dense
  std::vector<uint64_t> ids;      // rows × num_sparse (multi-valued fields: unused)
  std::vector<uint64_t> group;    // rows, when the plan has a group key
  std::vector<int32_t> rel_line;  // rows: 1-based line within the chunk
  std::vector<MultiColumn> multi; // per multi-valued field
  std::vector<BadRow> bad;
  int64_t filtered = 0;           // rows dropped by filters
  int64_t downsampled = 0;        // negatives dropped by downsampling

  void Reset();
  void Reserve(const ParsePlan& plan, int64_t rows_wanted);
};

// Per-row field references of the text parser (one per plan slot).
struct EvalScratch {  // row_eval.h
  char num_a[32];
  char num_b[32];
  std::string cross;
};

struct TextField {
  const char* begin = nullptr;
  const char* end = nullptr;
  int64_t column = 0;  // 1-based byte column of the field start
};

// The fields of one libsvm / libffm line by plan slot: `values` for the label and the dense keys
// (begin == nullptr: absent), `lists` for the list columns (the index text of each pair, leading
// zeros removed, so "007" and "7" are one id).
struct PairFields {
  std::vector<TextField> values;
  std::vector<std::vector<TextField>> lists;
};

// Splits a libsvm / libffm line (without '\n' and '\r') into *out (sized by the plan) and
// returns true, or fills *bad (kind, column, text; also a bad label) and returns false. The label
// "-1" reads as "0" and "+1" as "1" unless the label has a transform (then only '+' is dropped).
// A token starting with '#' ends the line (a comment). Never reads outside `line`.
bool SplitPairLine(const ParsePlan& plan, std::string_view line, PairFields* out, BadRow* bad);

class LineParser {
 public:
  explicit LineParser(const ParsePlan* plan);
  const ParsePlan* plan() const { return plan_; }
  // Parses one line (without '\n'; a trailing '\r' is ignored) into block->rows, or appends a
  // BadRow and returns false. A filtered or downsampled row returns true and adds no row.
  // Never reads outside `line`.
  bool ParseLine(std::string_view line, int64_t rel_line, bool keep_raw, RowBlock* block);
  // The raw fields of the last line ParseLine accepted, per plan slot: fields()[slot] for
  // delimited text (a quoted field unescaped; the pointers are valid until the next ParseLine),
  // pairs() for libsvm / libffm. `data convert --to parquet` writes them.
  const TextField* fields() const { return fields_.data(); }
  const PairFields& pairs() const { return pairs_; }

 private:
  const ParsePlan* plan_;
  std::vector<TextField> fields_;      // per slot
  std::vector<std::string> scratch_;   // per slot: unescaped quoted field
  std::string ignored_;                // quoted fields of columns the plan does not read
  PairFields pairs_;                   // libsvm / libffm
  EvalScratch eval_scratch_;
};

}  // namespace rectrain::data::internal
