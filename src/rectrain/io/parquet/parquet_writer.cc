#include "rectrain/io/parquet/parquet_writer.h"

#include <zstd.h>

#include <set>

#include "rectrain/io/parquet/internal/chunk_writer.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/internal/thrift_compact.h"

namespace rectrain::io::parquet {
namespace {

using internal::EncodedChunk;

constexpr std::string_view kMagic = "PAR1";

Status CheckSchema(const std::vector<WriteColumn>& columns) {
  if (columns.empty()) return InvalidArgumentError("parquet writer: a file needs at least one column");
  std::set<std::string> names;
  for (const WriteColumn& c : columns) {
    if (c.name.empty()) return InvalidArgumentError("parquet writer: a column has an empty name");
    if (!names.insert(c.name).second) {
      return InvalidArgumentError("parquet writer: column '" + c.name + "' appears twice");
    }
    if (c.type == PhysicalType::kInt96 || c.type == PhysicalType::kFixedLenByteArray) {
      return InvalidArgumentError("parquet writer: column '" + c.name + "': physical type " +
                                  std::string(PhysicalTypeName(c.type)) + " cannot be written");
    }
    if (c.utf8 && c.type != PhysicalType::kByteArray) {
      return InvalidArgumentError("parquet writer: column '" + c.name + "': utf8 applies to BYTE_ARRAY columns");
    }
  }
  return OkStatus();
}

Status CheckOptions(const ParquetWriteOptions& o) {
  if (o.page_bytes < 1) return InvalidArgumentError("parquet writer: page_bytes must be >= 1");
  if (o.dictionary_page_bytes < 0) return InvalidArgumentError("parquet writer: dictionary_page_bytes must be >= 0");
  if (o.compression == Compression::kZstd && (o.zstd_level < 1 || o.zstd_level > ZSTD_maxCLevel())) {
    return InvalidArgumentError("parquet writer: zstd_level must be in 1.." + std::to_string(ZSTD_maxCLevel()) +
                                ", got " + std::to_string(o.zstd_level));
  }
  return OkStatus();
}

// The schema elements of one column: a leaf, or the 3-level LIST group around one.
void AppendSchema(const WriteColumn& c, bool utf8, std::vector<internal::SchemaElement>* out) {
  internal::SchemaElement leaf;
  leaf.type = static_cast<int32_t>(c.type);
  if (utf8) {
    leaf.converted_type = internal::kCUtf8;
    leaf.logical_type = internal::kLString;
  }
  if (!c.is_list) {
    leaf.name = c.name;
    leaf.repetition_type = c.optional ? internal::kOptional : internal::kRequired;
    out->push_back(std::move(leaf));
    return;
  }
  internal::SchemaElement list;
  list.name = c.name;
  list.repetition_type = c.optional ? internal::kOptional : internal::kRequired;
  list.num_children = 1;
  list.converted_type = internal::kCList;
  list.logical_type = internal::kLList;
  internal::SchemaElement repeated;
  repeated.name = "list";
  repeated.repetition_type = internal::kRepeated;
  repeated.num_children = 1;
  leaf.name = "element";
  leaf.repetition_type = c.element_optional ? internal::kOptional : internal::kRequired;
  out->push_back(std::move(list));
  out->push_back(std::move(repeated));
  out->push_back(std::move(leaf));
}

}  // namespace

WriteColumn WriteColumnLike(const ColumnSchema& s) {
  WriteColumn c;
  c.name = s.name;
  c.type = s.physical_type == PhysicalType::kFixedLenByteArray ? PhysicalType::kByteArray : s.physical_type;
  c.utf8 = s.logical_type == LogicalType::kString;
  c.optional = s.optional;
  c.is_list = s.is_list;
  c.element_optional = s.element_optional;
  return c;
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kUncompressed: return "none";
    case Compression::kSnappy: return "snappy";
    case Compression::kZstd: return "zstd";
  }
  return "?";
}

Result<Compression> ParseCompression(std::string_view name) {
  if (name == "zstd") return Compression::kZstd;
  if (name == "snappy") return Compression::kSnappy;
  if (name == "none" || name == "uncompressed") return Compression::kUncompressed;
  return InvalidArgumentError("unknown Parquet compression \"" + std::string(name) +
                              "\"; expected zstd, snappy or none");
}

struct EncodedRowGroup::Impl {
  int64_t num_rows = 0;
  int64_t bytes = 0;
  std::vector<EncodedChunk> chunks;
};

EncodedRowGroup::EncodedRowGroup() : impl_(std::make_unique<Impl>()) {}
EncodedRowGroup::~EncodedRowGroup() = default;
EncodedRowGroup::EncodedRowGroup(EncodedRowGroup&&) noexcept = default;
EncodedRowGroup& EncodedRowGroup::operator=(EncodedRowGroup&&) noexcept = default;
int64_t EncodedRowGroup::num_rows() const { return impl_ ? impl_->num_rows : 0; }
int64_t EncodedRowGroup::bytes() const { return impl_ ? impl_->bytes : 0; }

struct ParquetWriter::State {
  internal::FileMetaData meta;
  std::vector<bool> all_utf8;  // per column
  std::vector<bool> dictionary_pages, plain_pages;
};

ParquetWriter::ParquetWriter(std::vector<WriteColumn> columns, ParquetWriteOptions options, ByteSink* sink)
    : columns_(std::move(columns)), options_(std::move(options)), sink_(sink), state_(std::make_unique<State>()) {
  state_->all_utf8.assign(columns_.size(), true);
  state_->dictionary_pages.assign(columns_.size(), false);
  state_->plain_pages.assign(columns_.size(), false);
  state_->meta.num_rows = 0;
}

ParquetWriter::~ParquetWriter() = default;

Result<std::unique_ptr<ParquetWriter>> ParquetWriter::Create(std::vector<WriteColumn> columns,
                                                             ParquetWriteOptions options, ByteSink* sink) {
  RECTRAIN_RETURN_IF_ERROR(CheckSchema(columns));
  RECTRAIN_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<ParquetWriter> w(new ParquetWriter(std::move(columns), std::move(options), sink));
  RECTRAIN_RETURN_IF_ERROR(sink->Append(kMagic));
  w->bytes_written_ = static_cast<int64_t>(kMagic.size());
  return w;
}

Result<EncodedRowGroup> ParquetWriter::Encode(std::span<const ColumnData> columns) const {
  if (columns.size() != columns_.size()) {
    return InvalidArgumentError("parquet writer: a row group of " + std::to_string(columns.size()) +
                                " columns for a schema of " + std::to_string(columns_.size()));
  }
  EncodedRowGroup g;
  g.impl_->chunks.resize(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].num_rows != columns[0].num_rows) {
      return InvalidArgumentError("parquet writer: column '" + columns_[i].name + "' has " +
                                  std::to_string(columns[i].num_rows) + " rows, column '" + columns_[0].name +
                                  "' " + std::to_string(columns[0].num_rows));
    }
    RECTRAIN_RETURN_IF_ERROR(internal::EncodeChunk(columns_[i], options_, columns[i], &g.impl_->chunks[i]));
    g.impl_->bytes += static_cast<int64_t>(g.impl_->chunks[i].bytes.size());
  }
  g.impl_->num_rows = columns[0].num_rows;
  return g;
}

Status ParquetWriter::Append(EncodedRowGroup group) {
  if (closed_) return FailedPreconditionError("parquet writer: Append after Close");
  if (!group.impl_ || group.impl_->chunks.size() != columns_.size()) {
    return InvalidArgumentError("parquet writer: Append of a row group not encoded for this schema");
  }
  internal::RowGroup rg;
  rg.num_rows = group.impl_->num_rows;
  rg.file_offset = bytes_written_;
  rg.total_compressed_size = group.impl_->bytes;
  const int ordinal = num_row_groups();
  if (ordinal <= INT16_MAX) rg.ordinal = static_cast<int16_t>(ordinal);
  for (size_t i = 0; i < columns_.size(); ++i) {
    EncodedChunk& c = group.impl_->chunks[i];
    internal::ColumnChunk chunk;
    chunk.meta_data = std::move(c.meta);
    internal::ColumnMetaData& m = chunk.meta_data;
    m.data_page_offset += bytes_written_;
    if (m.dictionary_page_offset) *m.dictionary_page_offset += bytes_written_;
    chunk.file_offset = m.dictionary_page_offset.value_or(m.data_page_offset);
    chunk.has_meta_data = true;
    rg.total_byte_size += m.total_uncompressed_size;
    RECTRAIN_RETURN_IF_ERROR(sink_->Append(c.bytes));
    bytes_written_ += static_cast<int64_t>(c.bytes.size());
    state_->all_utf8[i] = state_->all_utf8[i] && c.all_utf8;
    state_->dictionary_pages[i] = state_->dictionary_pages[i] || c.dictionary_pages;
    state_->plain_pages[i] = state_->plain_pages[i] || c.plain_pages;
    rg.columns.push_back(std::move(chunk));
  }
  state_->meta.num_rows += rg.num_rows;
  state_->meta.row_groups.push_back(std::move(rg));
  return OkStatus();
}

Status ParquetWriter::WriteRowGroup(std::span<const ColumnData> columns) {
  RECTRAIN_ASSIGN_OR_RETURN(EncodedRowGroup g, Encode(columns));
  return Append(std::move(g));
}

Status ParquetWriter::Close() {
  if (closed_) return FailedPreconditionError("parquet writer: Close called twice");
  closed_ = true;
  internal::FileMetaData& meta = state_->meta;
  meta.version = 2;  // RLE_DICTIONARY data pages are a format-2 encoding
  internal::SchemaElement root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(columns_.size());
  meta.schema.push_back(std::move(root));
  const std::vector<bool> utf8 = utf8_columns();
  for (size_t i = 0; i < columns_.size(); ++i) AppendSchema(columns_[i], utf8[i], &meta.schema);
  meta.created_by = options_.created_by;
  meta.key_value_metadata = options_.key_value_metadata;
  meta.type_defined_order = options_.statistics;
  std::string footer;
  internal::ThriftWriter w(&footer);
  internal::WriteFileMetaData(meta, w);
  if (footer.size() > UINT32_MAX) return InvalidArgumentError("parquet writer: footer over 4 GiB");
  const uint32_t len = static_cast<uint32_t>(footer.size());
  footer.append(reinterpret_cast<const char*>(&len), 4);
  footer.append(kMagic);
  RECTRAIN_RETURN_IF_ERROR(sink_->Append(footer));
  bytes_written_ += static_cast<int64_t>(footer.size());
  return OkStatus();
}

int64_t ParquetWriter::num_rows() const { return state_->meta.num_rows; }
int ParquetWriter::num_row_groups() const { return static_cast<int>(state_->meta.row_groups.size()); }

std::vector<bool> ParquetWriter::utf8_columns() const {
  std::vector<bool> out(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) out[i] = columns_[i].utf8 && state_->all_utf8[i];
  return out;
}

std::vector<std::vector<std::string>> ParquetWriter::data_page_encodings() const {
  std::vector<std::vector<std::string>> out(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (state_->dictionary_pages[i]) out[i].push_back("RLE_DICTIONARY");
    if (state_->plain_pages[i]) out[i].push_back("PLAIN");
  }
  return out;
}

}  // namespace rectrain::io::parquet
