// rectrain/io/parquet/internal/file_impl.h: private to io/parquet. The state behind a
// ParquetFile shared by parquet_file.cc (open, schema) and column_reader.cc (pages, values).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rectrain/io/file.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet {

struct ParquetFile::Impl {
  std::unique_ptr<RandomAccessFile> file;  // set when reading from a file (any FileSystem)
  std::vector<uint8_t> buffer;  // the whole file when opened from memory
  ParquetReadOptions options;
  internal::FileMetaData meta;
  int64_t data_end = 0;         // first byte of the footer: column data must lie before it
  // Per leaf column: definition level at which a list is present (0 if it cannot be null).
  std::vector<int16_t> list_def_level;
  ~Impl();
};

}  // namespace rectrain::io::parquet
