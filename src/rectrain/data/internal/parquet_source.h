// rectrain/data/internal/parquet_source.h (internal to data/): decodes one row group of a
// Parquet file into a RowBlock through the same ParsePlan and EvalRow as text rows. Only the
// columns the plan reads are decoded (column projection). Dictionary-encoded chunks stay in the
// dictionary form (io::parquet::ColumnData::indexed): on the columnar path each feature is
// evaluated once per distinct value (a categorical string is hashed once per dictionary entry,
// not once per row) and rows take their entry's result; the ids are the same as per row.
// Thread safety: a RowGroupDecoder belongs to one thread; the ParquetFile may be shared.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::data::internal {

// One feature's results per entry of an indexed column's value table, for one row group.
template <class T>
struct EntryCache {
  int64_t generation = -1;  // RowGroupDecoder::generation_ when filled
  bool all_ok = true;       // false: some entry's value is bad for the feature
  std::vector<T> values;
};

class RowGroupDecoder {
 public:
  explicit RowGroupDecoder(const ParsePlan* plan);
  ~RowGroupDecoder();

  // Decodes the columns the plan reads of row group `row_group` of `file` (`file_columns[slot]`
  // is the file's leaf column of each plan slot). Errors: the Parquet library's Status (names
  // file, column, row group).
  Status DecodeRowGroup(const io::parquet::ParquetFile& file, const std::vector<int>& file_columns,
                        int row_group);
  // Evaluates rows [begin, end) of the decoded row group into *block; row begin + k gets
  // rel_line k + 1. `first_row` is the file row of `begin`, `file_key` identifies the file
  // (downsampling). Returns false (incomplete) after more than `max_bad_rows` bad rows.
  bool EvalRows(int64_t begin, int64_t end, uint64_t file_key, int64_t first_row,
                int64_t max_bad_rows, bool keep_raw, RowBlock* block);
  // The decoded column chunks of the last DecodeRowGroup, per plan slot (dictionary form where
  // the file has a dictionary).
  const std::vector<io::parquet::ColumnData>& columns() const { return data_; }

 private:
  // Fast path: every feature a column at a time; false if any value is bad (nothing reported).
  bool EvalColumns(int64_t begin, int64_t end, RowBlock* block);

  const ParsePlan* plan_;
  bool columnar_ = false;  // no filters, downsampling, crosses or text splitting
  const io::parquet::ParquetFile* file_ = nullptr;
  std::unique_ptr<io::parquet::ColumnChunkReader> reader_;
  std::vector<io::parquet::ColumnData> data_;  // per slot
  int64_t generation_ = 0;                      // bumped per decoded row group
  std::vector<EntryCache<float>> float_cache_;  // label, then dense features
  std::vector<EntryCache<uint64_t>> id_cache_;  // sparse features, then the group key
  EvalScratch scratch_;
};

// Checks that `file` has every column the plan reads, with a compatible shape, and returns the
// leaf column index per slot. InvalidArgument / Unimplemented naming file, column and feature.
Result<std::vector<int>> MapParquetColumns(const ParsePlan& plan,
                                           const io::parquet::ParquetFile& file);

}  // namespace rectrain::data::internal
