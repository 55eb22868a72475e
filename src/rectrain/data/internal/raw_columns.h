// rectrain/data/internal/raw_columns.h (internal to data/): the raw input columns that
// `rectrain data convert --to parquet` writes (data/parquet_export.h), buffered one row group at a
// time, and the Parquet type each gets. A column's type follows from how the config uses it
// (docs/data.md "Parquet export"):
//   kString  text the config hashes or compares (categorical tokens, crosses, hex ids, split
//            lists, the group key, filter columns) and every column it does not read: BYTE_ARRAY
//            STRING, the field's bytes exactly (a quoted field unescaped); empty = null.
//   kLabel   the label without a transform: INT32 0/1 (libsvm's -1/+1 as 0/1).
//   kNumber  numbers only (dense features, numeric sparse features, a transformed label): INT64
//            when every value of the first row group is a decimal integer (not -0), else DOUBLE;
//            reading either back gives the reader the same double, so the same batches.
//   kTyped   Parquet input: the source column's physical type, values and nulls as they are.
// libsvm / libffm categorical columns are LIST<STRING> of the pairs' index texts.
// Thread safety: a RawRowGroup belongs to one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/io/parquet/parquet_file.h"
#include "rectrain/io/parquet/parquet_writer.h"

namespace rectrain::data::internal {

enum class RawKind : uint8_t { kString, kLabel, kNumber, kTyped };

struct RawColumn {
  std::string name;
  int slot = -1;       // plan slot holding its field
  RawKind kind = RawKind::kString;
  bool is_list = false;
  io::parquet::WriteColumn source;  // kTyped: the Parquet input's column (type, nullability)
};

// The columns to write, in input order: every column of `plan` (text) or every column of the
// Parquet schema the writer can hold. Gives each a plan slot (so that the parser or decoder
// delivers its field). `skipped` receives "name (reason)" for Parquet columns that cannot be
// written (nested, INT96, ...). The plan must have no filters or downsampling removed yet: their
// columns count as kString.
std::vector<RawColumn> PlanRawColumns(ParsePlan* plan, const io::parquet::ParquetFile* parquet,
                                      std::vector<std::string>* skipped);

// Compaction of Parquet input without a config: the columns `names` of `file` (its top-level
// fields) that the writer can hold, as kTyped columns whose slot is their index in the result.
std::vector<RawColumn> ParquetRawColumns(const io::parquet::ParquetFile& file, const std::vector<std::string>& names,
                                         std::vector<std::string>* notes);

// Where a buffered row came from (for messages).
struct RowOrigin {
  int file = 0;
  int64_t line = 0;  // 1-based line (text) or row (Parquet) in the file
};

// The rows of one row group, one buffer per column (text as BYTE_ARRAY values until Finish).
class RawRowGroup {
 public:
  explicit RawRowGroup(const std::vector<RawColumn>* columns);

  void AddText(const TextField* fields, RowOrigin origin);
  void AddPairs(const PairFields& pairs, RowOrigin origin);
  // Row `row` of decoded chunks (ColumnData per plan slot, in either form).
  void AddParquet(const std::vector<io::parquet::ColumnData>& slots, int64_t row, RowOrigin origin);
  // Rows [begin, end) of decoded chunks not in dictionary form, appended column by column; row
  // begin + k came from line first.line + k of first.file.
  void AddParquetRows(const std::vector<io::parquet::ColumnData>& slots, int64_t begin, int64_t end, RowOrigin first);

  int64_t rows() const { return static_cast<int64_t>(origins_.size()); }
  int64_t bytes() const { return bytes_; }  // buffered value bytes (a bound on memory)

  // The typed columns for the writer. `types` holds each kNumber column's decision (empty on the
  // first call: decided from these rows, INT64 unless `double_numbers` or a non-integer); a
  // kNumber value that does not fit the decided INT64 is InvalidArgument naming
  // `files[origin.file]`, the line, the column and --numbers double. Empties the buffers.
  Status Finish(bool double_numbers, const std::vector<std::string>& files,
                std::vector<std::optional<io::parquet::PhysicalType>>* types,
                std::vector<io::parquet::ColumnData>* out);

 private:
  void AppendText(io::parquet::ColumnData* d, const char* begin, const char* end);

  const std::vector<RawColumn>* columns_;
  std::vector<io::parquet::ColumnData> buffers_;
  std::vector<RowOrigin> origins_;
  int64_t bytes_ = 0;
};

// The Parquet column each RawColumn becomes, given the kNumber decisions.
std::vector<io::parquet::WriteColumn> WriteColumnsOf(
    const std::vector<RawColumn>& columns, const std::vector<std::optional<io::parquet::PhysicalType>>& types);

}  // namespace rectrain::data::internal
