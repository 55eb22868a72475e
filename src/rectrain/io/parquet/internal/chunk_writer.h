// rectrain/io/parquet/internal/chunk_writer.h: private to io/parquet. Encodes one column chunk
// for ParquetWriter: checks a ColumnData against its column, derives the definition and
// repetition levels, chooses dictionary or PLAIN pages (with the fallback), cuts data pages at
// row boundaries, compresses them and fills the chunk's metadata and statistics.
// Thread safety: EncodeChunk is reentrant (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/parquet_writer.h"

namespace rectrain::io::parquet::internal {

struct EncodedChunk {
  std::string bytes;   // dictionary page (if any), then the data pages, headers included
  ColumnMetaData meta;  // page offsets relative to bytes[0]
  bool all_utf8 = true;  // BYTE_ARRAY: every value is valid UTF-8
  bool dictionary_pages = false;
  bool plain_pages = false;
};

// Definition / repetition level maxima of a column (parquet.thrift's 3-level LIST for lists).
int16_t MaxDefinitionLevel(const WriteColumn& c);
int16_t MaxRepetitionLevel(const WriteColumn& c);

// Encodes `d` (num_rows rows of column `c`) into *out. InvalidArgument naming the column for
// any inconsistency (see ParquetWriter::Encode).
Status EncodeChunk(const WriteColumn& c, const ParquetWriteOptions& options, const ColumnData& d,
                   EncodedChunk* out);

}  // namespace rectrain::io::parquet::internal
