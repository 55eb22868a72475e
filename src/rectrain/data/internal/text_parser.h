// rectrain/data/internal/text_parser.h (internal to data/): the per-line parser behind the
// BatchReader. A ParsePlan is compiled once from the schema (which column is the label, which are
// dense or categorical, which is the group key) and then shared read-only by all parse workers;
// each worker owns a LineParser and fills RowBlocks (the parsed rows of one chunk, row-major).
//
// The hot path allocates nothing: fields are split in place, numbers parsed with a hand-written
// integer fast path (falling back to std::from_chars), and tokens hashed straight from the bytes.
// Thread safety: a ParsePlan is immutable after BuildPlan; a LineParser and a RowBlock belong to
// one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// HashBytes(bytes, seed) with Mix64(seed) precomputed: PremixSeed(seed) then HashPremixed(bytes,
// premixed) returns exactly rectrain::HashBytes(bytes, seed) (tested), but cheaper per token.
uint64_t PremixSeed(uint64_t seed);
uint64_t HashPremixed(std::string_view bytes, uint64_t premixed);

enum class ColumnRole : uint8_t { kIgnore, kLabel, kDense, kSparse };

struct ColumnPlan {
  std::string name;
  ColumnRole role = ColumnRole::kIgnore;
  int index = -1;      // dense or sparse index for those roles
  bool group = false;  // this column's raw text is also the group key
};

struct ParsePlan {
  std::string format;   // criteo | csv | tsv
  char delimiter = '\t';
  bool quoting = false;  // csv/tsv: a field may be "quoted" ("" escapes a quote)
  bool header = false;   // every file starts with a header line
  std::vector<ColumnPlan> columns;
  std::vector<std::string> dense_names;
  std::vector<std::string> sparse_names;
  bool has_group = false;
  std::string layout;   // for messages, e.g. "label, I1..I13, C1..C26"

  DenseTransformConfig transform;
  float transformed_fill = 0.0f;
  static constexpr int kIntTableSize = 1024;
  std::vector<float> int_table;          // Transform(k) for k in [0, kIntTableSize)
  std::vector<uint64_t> field_premixed;  // per sparse field: PremixSeed(DeriveSeed(seed, field))
  std::vector<uint64_t> missing_ids;     // per sparse field: FeatureId(field, "", seed)
  uint64_t group_premixed = 0;           // PremixSeed(hash_seed)

  int num_dense() const { return static_cast<int>(dense_names.size()); }
  int num_sparse() const { return static_cast<int>(sparse_names.size()); }
  float Transform(double x) const;
};

// Builds the plan. `header_columns` are the names from the first file's header (csv/tsv with
// header: true), else empty. InvalidArgument names the bad setting (unknown format, a declared
// column missing from the header, duplicate names, ...).
Result<ParsePlan> BuildPlan(const DataConfig& config,
                            const std::vector<std::string>& header_columns);

// Splits a header line into column names (same quoting rules as data rows).
std::vector<std::string> SplitHeader(std::string_view line, char delimiter, bool quoting);

enum class BadRowKind : uint8_t { kColumnCount, kBadDense, kBadLabel, kBadQuote };

// A rejected row; the message is built later, once the file's absolute line is known.
struct BadRow {
  int64_t rel_line = 0;    // 1-based line within the chunk
  int64_t column = 0;      // 1-based byte column in the line
  BadRowKind kind = BadRowKind::kColumnCount;
  int plan_column = -1;    // offending column (field errors)
  int found_fields = 0;    // kColumnCount
  std::string text;        // offending text (field) or the line (column count), <= 64 bytes
  std::string raw_line;    // the whole line, kept only when a rejects file is written
};

// "<file>:<line>:<column>: ..." without the max_bad_rows hint.
std::string FormatBadRow(const ParsePlan& plan, const BadRow& bad, std::string_view file,
                         int64_t line);

// Rows of one chunk, row-major. Vectors are sized to capacity and reused across chunks; only
// the first `rows` rows are valid.
struct RowBlock {
  int64_t rows = 0;
  int64_t capacity = 0;
  std::vector<float> labels;
  std::vector<float> dense;       // rows × num_dense
  std::vector<uint64_t> ids;      // rows × num_sparse
  std::vector<uint64_t> group;    // rows, when the plan has a group key
  std::vector<int32_t> rel_line;  // rows: 1-based line within the chunk
  std::vector<BadRow> bad;

  void Reset() { rows = 0; bad.clear(); }
  void Reserve(const ParsePlan& plan, int64_t rows_wanted);
};

class LineParser {
 public:
  explicit LineParser(const ParsePlan* plan) : plan_(plan) {}
  const ParsePlan* plan() const { return plan_; }
  // Parses one line (without '\n'; a trailing '\r' is ignored) into block->rows, or appends a
  // BadRow and returns false. Never reads outside `line`.
  bool ParseLine(std::string_view line, int64_t rel_line, bool keep_raw, RowBlock* block);

 private:
  const ParsePlan* plan_;
  std::string scratch_;  // unescaped quoted field
};

}  // namespace rectrain::data::internal
