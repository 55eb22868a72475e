// rectrain/data/internal/parquet_source.h (internal to data/): decodes one row group of a
// Parquet file into a RowBlock through the same ParsePlan and EvalRow as text rows. Only the
// columns the plan reads are decoded (column projection).
// Thread safety: a RowGroupDecoder belongs to one thread; the ParquetFile may be shared.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::data::internal {

class RowGroupDecoder {
 public:
  explicit RowGroupDecoder(const ParsePlan* plan);
  ~RowGroupDecoder();

  // Decodes row group `row_group` of `file`; `file_columns[slot]` is the file's leaf column
  // index of each plan slot. Row r of the group gets rel_line r + 1. Stops after more than
  // `max_bad_rows` bad rows (*complete = false). `file_key` identifies the file (downsampling).
  // Errors: the Parquet library's Status (names file, column, row group).
  Status Decode(const io::parquet::ParquetFile& file, const std::vector<int>& file_columns,
                int row_group, uint64_t file_key, int64_t first_row, int64_t max_bad_rows,
                bool keep_raw, RowBlock* block, bool* complete);

 private:
  const ParsePlan* plan_;
  const io::parquet::ParquetFile* file_ = nullptr;
  std::unique_ptr<io::parquet::ColumnChunkReader> reader_;
  std::vector<io::parquet::ColumnData> data_;  // per slot
  EvalScratch scratch_;
};

// Checks that `file` has every column the plan reads, with a compatible shape, and returns the
// leaf column index per slot. InvalidArgument / Unimplemented naming file, column and feature.
Result<std::vector<int>> MapParquetColumns(const ParsePlan& plan,
                                           const io::parquet::ParquetFile& file);

}  // namespace rectrain::data::internal
