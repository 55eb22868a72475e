#include "rectrain/io/parquet/parquet_file.h"

#include <cerrno>
#include <cstring>
#include <functional>
#include <utility>

#include "rectrain/io/file.h"
#include "rectrain/io/parquet/internal/file_impl.h"
#include "rectrain/io/parquet/internal/metadata.h"
#include "rectrain/io/parquet/internal/thrift_compact.h"

namespace rectrain::io::parquet {
namespace {

using internal::FileMetaData;
using internal::SchemaElement;

constexpr int kMaxSchemaDepth = 32;
constexpr int32_t kMaxFixedLength = 1 << 20;

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string JoinPath(const std::vector<std::string>& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i) out += '.';
    out += path[i];
  }
  return out;
}

LogicalType MapLogical(const SchemaElement& e, int32_t* bit_width, bool* is_signed) {
  using namespace internal;
  switch (e.logical_type) {
    case kLString: return LogicalType::kString;
    case kLEnum: return LogicalType::kEnum;
    case kLJson: return LogicalType::kJson;
    case kLBson: return LogicalType::kBson;
    case kLUuid: return LogicalType::kUuid;
    case kLDecimal: return LogicalType::kDecimal;
    case kLDate: return LogicalType::kDate;
    case kLTime: return LogicalType::kTime;
    case kLTimestamp: return LogicalType::kTimestamp;
    case kLFloat16: return LogicalType::kFloat16;
    case kLInteger:
      *bit_width = e.int_bit_width;
      *is_signed = e.int_signed;
      return LogicalType::kInteger;
    case kLNone: break;
    default: return LogicalType::kOther;
  }
  if (!e.converted_type) return LogicalType::kNone;
  int32_t c = *e.converted_type;
  switch (c) {
    case 0: return LogicalType::kString;
    case 4: return LogicalType::kEnum;
    case 5: return LogicalType::kDecimal;
    case 6: return LogicalType::kDate;
    case 7: case 8: return LogicalType::kTime;
    case 9: case 10: return LogicalType::kTimestamp;
    case 19: return LogicalType::kJson;
    case 20: return LogicalType::kBson;
    default: break;
  }
  if (c >= 11 && c <= 18) {
    static constexpr int32_t kWidths[] = {8, 16, 32, 64, 8, 16, 32, 64};
    *bit_width = kWidths[c - 11];
    *is_signed = c >= 15;
    return LogicalType::kInteger;
  }
  return LogicalType::kOther;
}

bool IsListAnnotated(const SchemaElement& e) {
  return e.logical_type == internal::kLList ||
         (e.converted_type && *e.converted_type == internal::kCList);
}

bool IsMapAnnotated(const SchemaElement& e) {
  return e.logical_type == internal::kLMap ||
         (e.converted_type && (*e.converted_type == internal::kCMap ||
                               *e.converted_type == internal::kCMapKeyValue));
}

// Builds ColumnSchema for the leaf at the end of `chain` (schema indices from top-level field to
// leaf). Shapes we cannot read get unsupported_reason; corrupt schemas return DataLoss.
Status BuildLeaf(const FileMetaData& meta, const std::vector<int>& chain, ColumnSchema* col,
                 int16_t* list_def_level) {
  const SchemaElement& leaf = meta.schema[chain.back()];
  for (int idx : chain) {
    const SchemaElement& e = meta.schema[idx];
    col->path.push_back(e.name);
    if (!e.repetition_type || *e.repetition_type < 0 || *e.repetition_type > 2) {
      return DataLossError("schema element " + Quote(e.name) + " has no valid repetition type");
    }
  }
  col->name = col->path.front();
  std::string dotted = JoinPath(col->path);
  if (!leaf.type || *leaf.type < 0 || *leaf.type > 7) {
    return DataLossError("schema leaf " + Quote(dotted) + " has no valid physical type");
  }
  col->physical_type = static_cast<PhysicalType>(*leaf.type);
  col->type_length = leaf.type_length;
  col->logical_type = MapLogical(leaf, &col->int_bit_width, &col->int_signed);
  col->decimal_scale = leaf.scale;
  col->decimal_precision = leaf.precision;

  int def = 0, rep = 0, first_rep = -1;
  for (size_t i = 0; i < chain.size(); ++i) {
    int32_t r = *meta.schema[chain[i]].repetition_type;
    if (r != internal::kRequired) ++def;
    if (r == internal::kRepeated) {
      ++rep;
      if (first_rep < 0) first_rep = static_cast<int>(i);
    }
  }
  col->max_definition_level = static_cast<int16_t>(def);
  col->max_repetition_level = static_cast<int16_t>(rep);

  auto unsupported = [&](std::string why) {
    col->unsupported_reason = std::move(why);
    return OkStatus();
  };
  if (col->physical_type == PhysicalType::kInt96) {
    col->unsupported_reason =
        "physical type INT96 is not supported (legacy timestamps; rewrite as INT64 TIMESTAMP)";
  } else if (col->physical_type == PhysicalType::kFixedLenByteArray &&
             (col->type_length <= 0 || col->type_length > kMaxFixedLength)) {
    return DataLossError("FIXED_LEN_BYTE_ARRAY column " + Quote(dotted) + " has invalid length " +
                         std::to_string(col->type_length));
  }
  if (IsMapAnnotated(meta.schema[chain.front()])) {
    return unsupported("maps are not supported");
  }
  if (rep == 0) {
    if (chain.size() > 1) return unsupported("nested structs are not supported");
    col->optional = def == 1;
    return OkStatus();
  }
  if (rep > 1) return unsupported("nested lists are not supported");
  // One repeated node at chain[first_rep]: a list. Allowed shapes:
  //   repeated <leaf>                                       (first_rep 0, chain size 1)
  //   repeated group g { <required|optional> leaf }         (first_rep 0, chain size 2)
  //   <opt|req> group g (LIST) { repeated <leaf> }           (first_rep 1, chain size 2)
  //   <opt|req> group g (LIST) { repeated group list { <opt|req> element } }  (3-level)
  if (first_rep > 1) return unsupported("nested structs are not supported");
  if (first_rep == 1 && !IsListAnnotated(meta.schema[chain[0]]) &&
      meta.schema[chain[0]].num_children != 1) {
    return unsupported("nested structs are not supported");
  }
  if (static_cast<int>(chain.size()) - first_rep > 2) {
    return unsupported("lists of structs are not supported");
  }
  if (static_cast<int>(chain.size()) - first_rep == 2 &&
      meta.schema[chain[first_rep]].num_children != 1) {
    return unsupported("lists of structs are not supported");
  }
  col->is_list = true;
  int list_def = first_rep == 1 && *meta.schema[chain[0]].repetition_type == internal::kOptional;
  col->optional = list_def == 1;
  col->element_optional = *leaf.repetition_type == internal::kOptional;
  *list_def_level = static_cast<int16_t>(list_def);
  return OkStatus();
}

struct SchemaWalker {
  const FileMetaData& meta;
  std::vector<ColumnSchema>* columns;
  std::vector<int16_t>* list_def;
  std::vector<int> chain;
  int next = 1;

  Status Walk(int depth) {
    if (next >= static_cast<int>(meta.schema.size())) {
      return DataLossError("schema ends early: a group declares more children than the " +
                           std::to_string(meta.schema.size()) + " schema elements hold");
    }
    if (depth > kMaxSchemaDepth) return DataLossError("schema nested deeper than 32 levels");
    int idx = next++;
    const SchemaElement& e = meta.schema[idx];
    chain.push_back(idx);
    if (e.num_children < 0) return DataLossError("schema element " + Quote(e.name) +
                                                 " has a negative child count");
    if (e.num_children == 0 && !e.type) {
      return DataLossError("schema element " + Quote(e.name) + " has neither a type nor children");
    }
    if (e.num_children == 0) {
      ColumnSchema col;
      int16_t ld = 0;
      RECTRAIN_RETURN_IF_ERROR(BuildLeaf(meta, chain, &col, &ld));
      columns->push_back(std::move(col));
      list_def->push_back(ld);
    } else {
      if (e.num_children > static_cast<int32_t>(meta.schema.size()) - next) {
        return DataLossError("schema group " + Quote(e.name) + " declares " +
                             std::to_string(e.num_children) + " children but only " +
                             std::to_string(meta.schema.size() - next) + " elements follow");
      }
      for (int32_t c = 0; c < e.num_children; ++c) RECTRAIN_RETURN_IF_ERROR(Walk(depth + 1));
    }
    chain.pop_back();
    return OkStatus();
  }
};

}  // namespace

std::string_view PhysicalTypeName(PhysicalType type) {
  switch (type) {
    case PhysicalType::kBoolean: return "BOOLEAN";
    case PhysicalType::kInt32: return "INT32";
    case PhysicalType::kInt64: return "INT64";
    case PhysicalType::kInt96: return "INT96";
    case PhysicalType::kFloat: return "FLOAT";
    case PhysicalType::kDouble: return "DOUBLE";
    case PhysicalType::kByteArray: return "BYTE_ARRAY";
    case PhysicalType::kFixedLenByteArray: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "?";
}

std::string_view LogicalTypeName(LogicalType type) {
  switch (type) {
    case LogicalType::kNone: return "NONE";
    case LogicalType::kString: return "STRING";
    case LogicalType::kEnum: return "ENUM";
    case LogicalType::kJson: return "JSON";
    case LogicalType::kBson: return "BSON";
    case LogicalType::kUuid: return "UUID";
    case LogicalType::kDecimal: return "DECIMAL";
    case LogicalType::kDate: return "DATE";
    case LogicalType::kTime: return "TIME";
    case LogicalType::kTimestamp: return "TIMESTAMP";
    case LogicalType::kInteger: return "INTEGER";
    case LogicalType::kFloat16: return "FLOAT16";
    case LogicalType::kOther: return "OTHER";
  }
  return "?";
}

ValueKind ValueKindOf(PhysicalType type) {
  switch (type) {
    case PhysicalType::kBoolean: return ValueKind::kBool;
    case PhysicalType::kInt32: return ValueKind::kInt32;
    case PhysicalType::kInt64: return ValueKind::kInt64;
    case PhysicalType::kFloat: return ValueKind::kFloat;
    case PhysicalType::kDouble: return ValueKind::kDouble;
    default: return ValueKind::kBinary;
  }
}

int64_t ColumnData::num_slots() const {
  return indexed ? static_cast<int64_t>(indices.size()) : num_entries();
}

int64_t ColumnData::num_entries() const {
  switch (kind) {
    case ValueKind::kBool: return static_cast<int64_t>(bools.size());
    case ValueKind::kInt32: return static_cast<int64_t>(int32s.size());
    case ValueKind::kInt64: return static_cast<int64_t>(int64s.size());
    case ValueKind::kFloat: return static_cast<int64_t>(floats.size());
    case ValueKind::kDouble: return static_cast<int64_t>(doubles.size());
    case ValueKind::kBinary: return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1;
  }
  return 0;
}

void ColumnData::Clear() {
  num_rows = 0;
  is_list = false;
  bools.clear();
  int32s.clear();
  int64s.clear();
  floats.clear();
  doubles.clear();
  offsets.clear();
  bytes.clear();
  validity.clear();
  list_offsets.clear();
  list_validity.clear();
  indexed = false;
  dictionary_size = 0;
  indices.clear();
}

ParquetFile::Impl::~Impl() = default;

ParquetFile::ParquetFile() : impl_(std::make_unique<Impl>()) {}
ParquetFile::~ParquetFile() = default;

const std::string& ParquetFile::created_by() const { return impl_->meta.created_by; }
int ParquetFile::num_row_groups() const { return static_cast<int>(impl_->meta.row_groups.size()); }
int64_t ParquetFile::row_group_num_rows(int row_group) const {
  return impl_->meta.row_groups[row_group].num_rows;
}

Status ParquetFile::ReadAt(int64_t offset, int64_t size, uint8_t* out) const {
  if (!impl_->file) {
    if (size > 0) std::memcpy(out, impl_->buffer.data() + offset, size);
    return OkStatus();
  }
  RECTRAIN_ASSIGN_OR_RETURN(int64_t got, impl_->file->ReadAt(offset, size, reinterpret_cast<char*>(out)));
  if (got != size) {
    return DataLossError("file ended at offset " + std::to_string(offset + got) + " while reading " +
                         std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                         " (was it truncated while open?)");
  }
  return OkStatus();
}

std::pair<int64_t, int64_t> ParquetFile::ColumnChunkRange(int row_group, int column) const {
  const internal::ColumnChunk& cc = impl_->meta.row_groups[row_group].columns[column];
  if (!cc.has_meta_data) return {0, 0};
  int64_t start = cc.meta_data.data_page_offset;
  if (cc.meta_data.dictionary_page_offset && *cc.meta_data.dictionary_page_offset > 0 &&
      *cc.meta_data.dictionary_page_offset < start) {
    start = *cc.meta_data.dictionary_page_offset;
  }
  return {start, cc.meta_data.total_compressed_size};
}

void ParquetFile::Prefetch(int64_t offset, int64_t n) const {
  if (impl_->file) impl_->file->Prefetch(offset, n);
}

bool ParquetFile::remote() const { return impl_->file && impl_->file->remote(); }

int64_t ParquetFile::waits() const { return impl_->file ? impl_->file->waits() : 0; }

Result<int> ParquetFile::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name || JoinPath(columns_[i].path) == name) return static_cast<int>(i);
  }
  std::string names;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i) names += ", ";
    names += columns_[i].name;
  }
  return NotFoundError(path_ + ": no column " + Quote(name) + " (columns: " + names + ")");
}

Result<ColumnData> ParquetFile::ReadColumn(int row_group, int column) const {
  ColumnChunkReader reader(this);
  ColumnData data;
  RECTRAIN_RETURN_IF_ERROR(reader.Read(row_group, column, &data));
  return data;
}

namespace {

// A magic number as text, unprintable bytes as \xNN.
std::string MagicText(const uint8_t* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>(p[i]);
    if (c >= 32 && c < 127) {
      s += c;
    } else {
      static const char* kHex = "0123456789abcdef";
      s += "\\x";
      s += kHex[p[i] >> 4];
      s += kHex[p[i] & 15];
    }
  }
  return s;
}

// Checks the magic numbers and reads the footer's bytes (impl->data_end: where the footer begins).
Result<std::vector<uint8_t>> ReadFooter(ParquetFile::Impl* impl, int64_t file_size,
                                        const std::function<Status(int64_t, int64_t, std::vector<uint8_t>*)>& read_at) {
  const ParquetReadOptions& opt = impl->options;
  if (file_size < 12) {
    return DataLossError("file of " + std::to_string(file_size) +
                         " bytes is too small to be Parquet (a valid file has at least 12)");
  }
  // The file's last 64 KiB in one read: the footer usually lies within (one request on an
  // object store instead of two).
  const int64_t tail_len = std::min<int64_t>(file_size, int64_t{64} << 10);
  std::vector<uint8_t> tail_block;
  RECTRAIN_RETURN_IF_ERROR(read_at(file_size - tail_len, tail_len, &tail_block));
  const std::vector<uint8_t> tail(tail_block.end() - 8, tail_block.end());
  std::vector<uint8_t> head;
  RECTRAIN_RETURN_IF_ERROR(read_at(0, 4, &head));
  if (std::memcmp(tail.data() + 4, "PARE", 4) == 0) {
    return UnimplementedError("encrypted Parquet files (magic 'PARE') are not supported");
  }
  if (std::memcmp(tail.data() + 4, "PAR1", 4) != 0) {
    return DataLossError("not a Parquet file: the last 4 bytes are '" + MagicText(tail.data() + 4) +
                         "', expected 'PAR1'");
  }
  if (std::memcmp(head.data(), "PAR1", 4) != 0) {
    return DataLossError("not a Parquet file: the first 4 bytes are '" + MagicText(head.data()) +
                         "', expected 'PAR1'");
  }
  uint32_t footer_len = uint32_t{tail[0]} | (uint32_t{tail[1]} << 8) | (uint32_t{tail[2]} << 16) |
                        (uint32_t{tail[3]} << 24);
  if (footer_len > static_cast<uint64_t>(file_size - 12)) {
    return DataLossError("footer length " + std::to_string(footer_len) + " exceeds the " +
                         std::to_string(file_size - 12) +
                         " bytes between the magic numbers (truncated file?)");
  }
  if (footer_len > static_cast<uint64_t>(opt.max_footer_bytes)) {
    return ResourceExhaustedError("footer of " + std::to_string(footer_len) +
                                  " bytes exceeds ParquetReadOptions::max_footer_bytes (" +
                                  std::to_string(opt.max_footer_bytes) + ")");
  }
  impl->data_end = file_size - 8 - footer_len;
  std::vector<uint8_t> footer;
  if (static_cast<int64_t>(footer_len) + 8 <= tail_len) {
    footer.assign(tail_block.end() - 8 - footer_len, tail_block.end() - 8);
  } else {
    RECTRAIN_RETURN_IF_ERROR(read_at(impl->data_end, footer_len, &footer));
  }
  return footer;
}

// The schema's leaf columns and the row groups checked against them; the file's row count.
Status CheckSchemaAndRowGroups(ParquetFile::Impl* impl, std::vector<ColumnSchema>* columns, int64_t* num_rows) {
  FileMetaData& meta = impl->meta;
  SchemaWalker walker{meta, columns, &impl->list_def_level, {}, 1};
  const SchemaElement& root = meta.schema[0];
  if (root.num_children < 0 ||
      root.num_children > static_cast<int32_t>(meta.schema.size()) - 1) {
    return DataLossError("schema root declares " + std::to_string(root.num_children) +
                         " children but only " + std::to_string(meta.schema.size() - 1) +
                         " elements follow");
  }
  for (int32_t c = 0; c < root.num_children; ++c) RECTRAIN_RETURN_IF_ERROR(walker.Walk(1));
  if (walker.next != static_cast<int>(meta.schema.size())) {
    return DataLossError("schema has " + std::to_string(meta.schema.size() - walker.next) +
                         " elements not reachable from the root");
  }
  int64_t total_rows = 0;
  for (size_t g = 0; g < meta.row_groups.size(); ++g) {
    const internal::RowGroup& rg = meta.row_groups[g];
    if (rg.num_rows < 0 || rg.num_rows > (int64_t{1} << 40)) {
      return DataLossError("row group " + std::to_string(g) + " has invalid row count " +
                           std::to_string(rg.num_rows));
    }
    if (rg.columns.size() != columns->size()) {
      return DataLossError("row group " + std::to_string(g) + " has " +
                           std::to_string(rg.columns.size()) + " column chunks but the schema has " +
                           std::to_string(columns->size()) + " leaf columns");
    }
    total_rows += rg.num_rows;
  }
  if (meta.num_rows != total_rows) {
    return DataLossError("footer says " + std::to_string(meta.num_rows) +
                         " rows but the row groups hold " + std::to_string(total_rows));
  }
  *num_rows = total_rows;
  return OkStatus();
}

// Decodes footer + schema into `impl` (which already holds the source).
Status OpenImpl(ParquetFile::Impl* impl, int64_t file_size,
                const std::function<Status(int64_t, int64_t, std::vector<uint8_t>*)>& read_at,
                std::vector<ColumnSchema>* columns, int64_t* num_rows) {
  const ParquetReadOptions& opt = impl->options;
  RECTRAIN_ASSIGN_OR_RETURN(const std::vector<uint8_t> footer, ReadFooter(impl, file_size, read_at));
  internal::ThriftReader reader(footer.data(), static_cast<int64_t>(footer.size()));
  RECTRAIN_RETURN_IF_ERROR(internal::ReadFileMetaData(reader, &impl->meta))
      << "corrupt footer (FileMetaData)";
  FileMetaData& meta = impl->meta;
  if (meta.encrypted) {
    return UnimplementedError("encrypted Parquet files (encryption_algorithm set) are not "
                              "supported");
  }
  if (meta.schema.empty()) return DataLossError("footer has an empty schema");
  if (static_cast<int64_t>(meta.schema.size()) > opt.max_schema_elements) {
    return ResourceExhaustedError("schema of " + std::to_string(meta.schema.size()) +
                                  " elements exceeds ParquetReadOptions::max_schema_elements");
  }
  if (static_cast<int64_t>(meta.row_groups.size()) > opt.max_row_groups) {
    return ResourceExhaustedError("file has " + std::to_string(meta.row_groups.size()) +
                                  " row groups, above ParquetReadOptions::max_row_groups");
  }
  return CheckSchemaAndRowGroups(impl, columns, num_rows);
}

}  // namespace

Result<std::unique_ptr<ParquetFile>> ParquetFile::Open(const std::string& path,
                                                       const ParquetReadOptions& options) {
  std::unique_ptr<ParquetFile> file(new ParquetFile());
  file->path_ = path;
  file->impl_->options = options;
  Result<std::unique_ptr<RandomAccessFile>> opened = RandomAccessFile::Open(path);
  if (!opened.ok()) {
    return Status(opened.status().code(), path + ": cannot open Parquet file: " + opened.status().message());
  }
  file->impl_->file = std::move(opened).value();
  file->file_size_ = file->impl_->file->size();
  const ParquetFile* self = file.get();
  auto read_at = [self](int64_t off, int64_t size, std::vector<uint8_t>* out) {
    out->resize(size);
    return self->ReadAt(off, size, out->data());
  };
  Status s = OpenImpl(file->impl_.get(), file->file_size_, read_at, &file->columns_,
                      &file->num_rows_);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return file;
}

Result<std::unique_ptr<ParquetFile>> ParquetFile::OpenBuffer(std::string name,
                                                             std::vector<uint8_t> bytes,
                                                             const ParquetReadOptions& options) {
  std::unique_ptr<ParquetFile> file(new ParquetFile());
  file->path_ = std::move(name);
  file->impl_->options = options;
  file->impl_->buffer = std::move(bytes);
  file->file_size_ = static_cast<int64_t>(file->impl_->buffer.size());
  const std::vector<uint8_t>& buf = file->impl_->buffer;
  auto read_at = [&buf](int64_t off, int64_t size, std::vector<uint8_t>* out) {
    out->assign(buf.begin() + off, buf.begin() + off + size);
    return OkStatus();
  };
  Status s = OpenImpl(file->impl_.get(), file->file_size_, read_at, &file->columns_,
                      &file->num_rows_);
  if (!s.ok()) return Status(s.code(), file->path_ + ": " + s.message());
  return file;
}

}  // namespace rectrain::io::parquet
