// rectrain/data/parquet_export.h: writes sample files of any input format as Parquet
// (`rectrain data convert INPUT... --to parquet`; docs/data.md "Parquet export"), one file or
// parts of about a target size (compaction: many small inputs become few large objects), in
// input row order.
//
// What is written: the *raw* input columns, not transformed batches, so that the files are a
// data set like any other (DuckDB, Spark and pandas read them) and reading them back with the
// same config (`read_back`: format parquet, the same features, transforms and filters) gives
// the same batches as reading the input, bit for bit. Each column's Parquet type follows from
// how the config uses it (internal/raw_columns.h): categorical tokens and unused columns as
// STRING, numbers as INT64 or DOUBLE, the label as INT32, libsvm/libffm categorical pairs as
// LIST<STRING>, Parquet input columns with their own types.
//
// Rows are checked exactly as the reader checks them (strict by default; data.max_bad_rows,
// data.rejects_file): a row the reader would reject is rejected here with the same message and
// not written. Filters and negative downsampling are not applied (they apply when the files are
// read); negative downsampling picks its rows by (file, row), so a downsampled read of the
// Parquet files keeps a different (equally large) sample than one of the input.
//
// Output goes through io/ (io::AtomicFileWriter): a file or part appears only when complete.
//
// Example:
//   ParquetExportOptions o;
//   o.target_part_bytes = int64_t{512} << 20;
//   RECTRAIN_ASSIGN_OR_RETURN(ParquetExportInfo info, ExportParquet(config.data, o, "data/pq"));
//   // info.files: data/pq/part-00000.parquet, ...; info.yaml: the config snippet that reads them.
//
// Thread safety: reentrant; uses the calling thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/parquet/parquet_writer.h"

namespace rectrain::data {

// Rows per row group by default: the size our reader decodes fastest while still giving every
// worker and rank its own row groups (measured; docs/data.md "Parquet export").
inline constexpr int64_t kDefaultParquetRowGroupRows = 131072;

struct ParquetExportOptions {
  io::parquet::ParquetWriteOptions write;
  int64_t row_group_rows = kDefaultParquetRowGroupRows;
  // A row group also ends once its buffered input reaches this many bytes (wide rows).
  int64_t row_group_bytes = int64_t{256} << 20;
  // 0: one file at `out`. > 0: `out` is a directory of parts part-00000.parquet, ... each of at
  // most this many bytes unless a single row group is larger (keep row groups well below it).
  int64_t target_part_bytes = 0;
  // Every numeric column DOUBLE (default: INT64 when its first row group holds only integers).
  bool double_numbers = false;
};

struct ParquetExportInfo {
  std::vector<std::string> files;  // the files written, in row order
  int64_t rows = 0;
  int64_t bytes = 0;               // of all files
  int64_t row_groups = 0;
  int64_t rows_rejected = 0;       // bad rows skipped under data.max_bad_rows
  int64_t input_bytes = 0;
  std::vector<std::string> columns;  // "name TYPE (encodings)" per written column
  std::vector<std::string> notes;    // Parquet input columns not written or not kept as typed
  DataConfig read_back;              // the config that reads the files into the same batches
  std::string yaml;                  // read_back's data section as a config snippet
  double seconds = 0;
};

// Reads `config.files` to the end and writes them to `out`. Errors: the reader's (files, bad
// rows, schema); InvalidArgument for bad options, no rows, a directory already holding parts, a
// numeric column whose later value does not fit the type its first row group chose (naming the
// file, line and --numbers double); I/O errors naming the output file.
Result<ParquetExportInfo> ExportParquet(const DataConfig& config, const ParquetExportOptions& options,
                                        const std::string& out);

}  // namespace rectrain::data
