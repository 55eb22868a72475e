// rectrain/io/parquet/parquet_writer.h: our own Parquet writer, the counterpart of
// parquet_file.h. It writes files that rectrain's reader, DuckDB and arrow-rs read (checked in
// tests): data pages v1, dictionary encoding (RLE_DICTIONARY over a PLAIN dictionary page) with a
// fallback to PLAIN pages for the rest of a column chunk once its dictionary grows past
// ParquetWriteOptions::dictionary_page_bytes (or PLAIN from the start when a dictionary would
// not be smaller), RLE levels, codecs UNCOMPRESSED / SNAPPY / ZSTD, per-chunk statistics
// (null count, min/max with TYPE_DEFINED_ORDER), a Thrift compact footer. Columns: BOOLEAN,
// INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY (annotated STRING when every value of the file is
// UTF-8), required or optional, and one level of LIST (3-level form, optional elements).
// docs/formats/parquet.md ("Writer") describes the layout.
//
// Input is the reader's own ColumnData (not in dictionary form), one per column per row group.
// Nothing in it is trusted: sizes, offsets, list offsets and validity are checked against each
// other before a byte is written, and a mismatch is InvalidArgument naming the column; a value
// or row too large for the format (a page over 2 GiB) is InvalidArgument too. The writer never
// reads outside the vectors it is given.
//
// Output goes to a ByteSink in order: "PAR1", then each row group's column chunks as Append is
// called, then the footer at Close. A sink error is returned as is (it names its file).
//
// Thread safety: Encode is const and may run on several threads at once (each call encodes one
// row group independently); Append, Close and the accessors belong to one thread.
//
// Example:
//   StringSink sink;                                    // or an io/ writer behind a ByteSink
//   RECTRAIN_ASSIGN_OR_RETURN(auto w, ParquetWriter::Create(
//       {{.name = "label", .type = PhysicalType::kInt32, .optional = false},
//        {.name = "c1", .type = PhysicalType::kByteArray, .utf8 = true}}, {}, &sink));
//   ColumnData label, c1;  // kInt32 / kBinary values of the same rows
//   RECTRAIN_RETURN_IF_ERROR(w->WriteRowGroup(std::vector<ColumnData>{label, c1}));
//   RECTRAIN_RETURN_IF_ERROR(w->Close());
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::io::parquet {

enum class Compression : uint8_t { kUncompressed, kSnappy, kZstd };
std::string_view CompressionName(Compression c);  // "none", "snappy", "zstd"
// "zstd" | "snappy" | "none" (or "uncompressed"); InvalidArgument listing them otherwise.
Result<Compression> ParseCompression(std::string_view name);

struct WriteColumn {
  std::string name;  // top-level field name (unique, non-empty)
  PhysicalType type = PhysicalType::kInt64;  // not INT96 / FIXED_LEN_BYTE_ARRAY
  // BYTE_ARRAY: annotate STRING (UTF8) when every value written to the file is valid UTF-8;
  // otherwise the column stays plain binary (ParquetWriter::utf8_columns() says which).
  bool utf8 = false;
  bool optional = true;          // nulls allowed (for a list: null lists allowed)
  bool is_list = false;          // LIST of `type`
  bool element_optional = true;  // list only: null elements allowed
};

// The column that holds values read from a column of schema `s`: same name, nullability, list
// shape and physical type (FIXED_LEN_BYTE_ARRAY becomes BYTE_ARRAY), STRING kept; other logical
// annotations are not carried over.
WriteColumn WriteColumnLike(const ColumnSchema& s);

struct ParquetWriteOptions {
  Compression compression = Compression::kZstd;
  int zstd_level = 3;
  // A data page ends at the first row boundary after this many (uncompressed) bytes.
  int64_t page_bytes = int64_t{1} << 20;
  bool dictionary = true;
  // A column chunk's dictionary stops growing at this many PLAIN bytes; the rows after that are
  // written as PLAIN pages (the reader's "writer fallback").
  int64_t dictionary_page_bytes = int64_t{1} << 20;
  bool statistics = true;
  std::string created_by = "rectrain";
  std::vector<std::pair<std::string, std::string>> key_value_metadata;
};

// Where a writer's bytes go, in file order. Implementations: StringSink below; the data layer
// adapts io/'s writers.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Append(std::string_view bytes) = 0;
};

// Collects the bytes in memory (tests, fuzz seeds, small files).
class StringSink final : public ByteSink {
 public:
  Status Append(std::string_view bytes) override {
    data_.append(bytes.data(), bytes.size());
    return OkStatus();
  }
  const std::string& data() const { return data_; }
  std::string Take() { return std::move(data_); }

 private:
  std::string data_;
};

// One row group, encoded and compressed, not yet placed in a file (its offsets are relative).
// Move-only; produced by ParquetWriter::Encode, consumed by Append.
class EncodedRowGroup {
 public:
  EncodedRowGroup();
  ~EncodedRowGroup();
  EncodedRowGroup(EncodedRowGroup&&) noexcept;
  EncodedRowGroup& operator=(EncodedRowGroup&&) noexcept;

  int64_t num_rows() const;
  int64_t bytes() const;  // compressed bytes it adds to the file (pages and their headers)

  struct Impl;

 private:
  friend class ParquetWriter;
  std::unique_ptr<Impl> impl_;
};

class ParquetWriter {
 public:
  ~ParquetWriter();
  ParquetWriter(const ParquetWriter&) = delete;
  ParquetWriter& operator=(const ParquetWriter&) = delete;

  // Checks the schema and options (InvalidArgument naming the column or option) and writes the
  // leading "PAR1" to `sink`, which must outlive the writer.
  static Result<std::unique_ptr<ParquetWriter>> Create(std::vector<WriteColumn> columns,
                                                       ParquetWriteOptions options, ByteSink* sink);

  // Encodes one row group: columns[i] holds column i's values, every one with the same
  // num_rows (>= 1). InvalidArgument (naming the column and what is inconsistent) for a count
  // that differs from the schema, a kind that does not match the column's type, a list shape
  // on a plain column (or the reverse), dictionary-form data, sizes or offsets that disagree, a
  // null in a required column or element, a row too large for a page.
  Result<EncodedRowGroup> Encode(std::span<const ColumnData> columns) const;
  // Writes an encoded row group after the previous ones. FailedPrecondition after Close.
  Status Append(EncodedRowGroup group);
  // Encode + Append.
  Status WriteRowGroup(std::span<const ColumnData> columns);
  // Writes the footer. The file is complete once it returns OK; call once.
  Status Close();

  const std::vector<WriteColumn>& columns() const { return columns_; }
  int64_t bytes_written() const { return bytes_written_; }
  int64_t num_rows() const;
  int num_row_groups() const;
  // Per column: true when it is (or, before Close, would be) annotated STRING.
  std::vector<bool> utf8_columns() const;
  // Per column: the encodings of its data pages so far, e.g. {"RLE_DICTIONARY", "PLAIN"}.
  std::vector<std::vector<std::string>> data_page_encodings() const;

  struct State;  // implementation detail (parquet_writer.cc)

 private:
  ParquetWriter(std::vector<WriteColumn> columns, ParquetWriteOptions options, ByteSink* sink);

  std::vector<WriteColumn> columns_;
  ParquetWriteOptions options_;
  ByteSink* sink_;
  int64_t bytes_written_ = 0;
  bool closed_ = false;
  std::unique_ptr<State> state_;
};

}  // namespace rectrain::io::parquet
