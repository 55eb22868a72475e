// rectrain/io/parquet/internal/metadata.h: private to io/parquet. The subset of parquet.thrift
// that the reader uses and the writer fills, decoded from and encoded to the compact protocol.
// Reading: unknown fields are skipped; fields the reader cannot honour (encryption, external
// column files) are recorded so the caller can reject them with Unimplemented. Writing: every
// field parquet.thrift marks required is written; optional ones when set.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/base/status.h"
#include "rectrain/io/parquet/internal/thrift_compact.h"

namespace rectrain::io::parquet::internal {

// parquet.thrift enum values (as stored in files).
enum ThriftType : int32_t { kTBoolean = 0, kTInt32, kTInt64, kTInt96, kTFloat, kTDouble,
                            kTByteArray, kTFixedLenByteArray };
enum ThriftRepetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum ThriftConverted : int32_t { kCUtf8 = 0, kCMap = 1, kCMapKeyValue = 2, kCList = 3, kCEnum = 4,
                                 kCDecimal = 5, kCDate = 6, kCJson = 19, kCBson = 20 };
enum ThriftEncoding : int32_t { kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4,
                                kDeltaBinaryPacked = 5, kDeltaLengthByteArray = 6,
                                kDeltaByteArray = 7, kRleDictionary = 8, kByteStreamSplit = 9 };
enum ThriftCodec : int32_t { kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4,
                             kLz4Hadoop = 5, kZstd = 6, kLz4Raw = 7 };
enum ThriftPageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2,
                                kDataPageV2 = 3 };

// LogicalType union member ids (parquet.thrift field ids of `union LogicalType`).
enum LogicalId : int16_t { kLNone = 0, kLString = 1, kLMap = 2, kLList = 3, kLEnum = 4,
                           kLDecimal = 5, kLDate = 6, kLTime = 7, kLTimestamp = 8,
                           kLInteger = 10, kLUnknown = 11, kLJson = 12, kLBson = 13, kLUuid = 14,
                           kLFloat16 = 15 };

struct SchemaElement {
  std::optional<int32_t> type;
  int32_t type_length = 0;
  std::optional<int32_t> repetition_type;
  std::string name;
  int32_t num_children = 0;
  std::optional<int32_t> converted_type;
  int32_t scale = 0;
  int32_t precision = 0;
  int16_t logical_type = kLNone;  // LogicalId
  int32_t int_bit_width = 0;      // IntType
  bool int_signed = true;
};

// Column chunk statistics (parquet.thrift `Statistics`; the writer fills null_count and the
// min_value/max_value pair, which readers trust because FileMetaData::column_orders says
// TYPE_DEFINED_ORDER). Values are PLAIN-encoded without a length prefix.
struct Statistics {
  std::optional<int64_t> null_count;
  std::optional<std::string> max_value;
  std::optional<std::string> min_value;
};

struct ColumnMetaData {
  int32_t type = -1;
  std::vector<int32_t> encodings;
  std::vector<std::string> path_in_schema;
  int32_t codec = 0;
  int64_t num_values = -1;
  int64_t total_uncompressed_size = -1;
  int64_t total_compressed_size = -1;
  int64_t data_page_offset = -1;
  std::optional<int64_t> dictionary_page_offset;
  std::optional<Statistics> statistics;
};

struct ColumnChunk {
  std::optional<std::string> file_path;
  int64_t file_offset = 0;  // required by the format; the chunk's first page
  bool has_meta_data = false;
  bool encrypted = false;  // crypto_metadata or encrypted_column_metadata present
  ColumnMetaData meta_data;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;  // uncompressed bytes of the chunks
  int64_t num_rows = -1;
  std::optional<int64_t> file_offset;
  std::optional<int64_t> total_compressed_size;
  std::optional<int16_t> ordinal;
};

struct FileMetaData {
  int32_t version = 0;
  std::vector<SchemaElement> schema;
  int64_t num_rows = -1;
  std::vector<RowGroup> row_groups;
  std::vector<std::pair<std::string, std::string>> key_value_metadata;
  std::string created_by;
  // column_orders: one TYPE_DEFINED_ORDER per leaf column (what the writer sets, so that readers
  // use its min_value/max_value statistics).
  bool type_defined_order = false;
  bool encrypted = false;  // encryption_algorithm present (plaintext footer mode)
};

struct DataPageHeader {
  int32_t num_values = -1;
  int32_t encoding = -1;
  int32_t definition_level_encoding = kRle;
  int32_t repetition_level_encoding = kRle;
};

struct DictionaryPageHeader {
  int32_t num_values = -1;
  int32_t encoding = -1;
};

struct DataPageHeaderV2 {
  int32_t num_values = -1;
  int32_t num_nulls = -1;
  int32_t num_rows = -1;
  int32_t encoding = -1;
  int32_t definition_levels_byte_length = -1;
  int32_t repetition_levels_byte_length = -1;
  bool is_compressed = true;
};

struct PageHeader {
  int32_t type = -1;
  int32_t uncompressed_page_size = -1;
  int32_t compressed_page_size = -1;
  std::optional<DataPageHeader> data_page_header;
  std::optional<DictionaryPageHeader> dictionary_page_header;
  std::optional<DataPageHeaderV2> data_page_header_v2;
};

// Decode one struct starting at the reader's position. On success the reader sits just past it.
Status ReadFileMetaData(ThriftReader& r, FileMetaData* out);
Status ReadPageHeader(ThriftReader& r, PageHeader* out);

// Encode one struct (the inverse of the readers above for the fields they read, plus the
// required fields they skip). Unset optionals are left out.
void WriteFileMetaData(const FileMetaData& meta, ThriftWriter& w);
void WritePageHeader(const PageHeader& header, ThriftWriter& w);

}  // namespace rectrain::io::parquet::internal
