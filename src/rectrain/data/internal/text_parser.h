// rectrain/data/internal/text_parser.h (internal to data/): the per-line text parser behind the
// BatchReader, driven by the read plan (parse_plan.h) it shares read-only with all parse workers
// and with the Parquet row-group decoder (parquet_source.h): both feed raw field values through
// EvalRow (row_eval.h), so a row gives the same Batch row from either format.
//
// The text hot path allocates nothing: fields are split in place, numbers parsed with a
// hand-written integer fast path (a per-feature table for 0..1023, falling back to
// std::from_chars), and tokens hashed straight from the bytes.
// Thread safety: a LineParser and a RowBlock belong to one thread at a time.
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
#include "rectrain/data/internal/parse_plan.h"
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

// Splits a header line into column names (same quoting rules as data rows).
std::vector<std::string> SplitHeader(std::string_view line, char delimiter, bool quoting);
// Field `column` (0-based) of a delimited line (same quoting rules; a quoted field unescaped into
// *scratch), or nullopt when the line has fewer fields or a bad quote up to it.
std::optional<std::string_view> NthField(std::string_view line, char delimiter, bool quoting, int column,
                                         std::string* scratch);

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
