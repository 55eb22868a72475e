// rectrain/io/parquet/parquet_file.h: our own Parquet reader (Debian 12 packages no Arrow/Parquet
// C++). Opens a file, decodes its footer (Thrift compact protocol) into a flat schema of leaf
// columns, and reads one column chunk of one row group at a time into a columnar ColumnData.
//
// Supported: data pages v1 and v2; PLAIN, RLE/bit-packed hybrid, PLAIN_DICTIONARY,
// RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
// BYTE_STREAM_SPLIT; codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW, LZ4 (Hadoop framing);
// physical types BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY;
// required/optional top-level columns; one level of LIST (3-level and legacy 2-level forms).
// Not supported (Unimplemented naming file and column): INT96, structs, maps, nested lists,
// encryption, external column files, BROTLI/LZO. See docs/formats/parquet.md.
//
// Errors: every length and offset read from the file is bounded before use. A truncated,
// corrupt or hostile file yields a Status (DataLoss for corrupt data, Unimplemented for
// unsupported features, NotFound/PermissionDenied for the path, ResourceExhausted when a limit
// in ParquetReadOptions is exceeded) whose message starts with the path and, for column data,
// names the column, the row group and the page offset.
//
// Dictionary form: a ColumnChunkReader with set_dictionary_form(true) leaves dictionary-encoded
// chunks as a table of distinct values plus one index per slot (see ColumnData::indexed), so a
// consumer can transform each distinct value once (hash a string once per dictionary entry, not
// once per row) and saves the copy of every string.
//
// Thread safety: a ParquetFile is immutable after Open; ReadColumn and the accessors may be
// called concurrently from any number of threads (positional reads through io::RandomAccessFile,
// so a file may be local or on an object store). A ColumnChunkReader holds
// scratch buffers and must be used by one thread at a time; use one per thread to read row
// groups in parallel.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ParquetFile> file, ParquetFile::Open(path));
//   RECTRAIN_ASSIGN_OR_RETURN(int col, file->FindColumn("c1"));
//   ColumnChunkReader reader(file.get());
//   ColumnData data;
//   for (int rg = 0; rg < file->num_row_groups(); ++rg) {
//     RECTRAIN_RETURN_IF_ERROR(reader.Read(rg, col, &data));
//     for (int64_t row = 0; row < data.num_rows; ++row)
//       if (!data.IsNull(row)) Use(data.StringAt(row));
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::io::parquet {

// Parquet physical types; values equal parquet.thrift's `Type`.
enum class PhysicalType : uint8_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};
std::string_view PhysicalTypeName(PhysicalType type);

// The annotation of a leaf column (from LogicalType, else from the legacy ConvertedType).
enum class LogicalType : uint8_t {
  kNone,
  kString,  // UTF-8; validated when read
  kEnum,
  kJson,
  kBson,
  kUuid,
  kDecimal,
  kDate,
  kTime,
  kTimestamp,
  kInteger,  // see ColumnSchema::int_bit_width / int_signed
  kFloat16,
  kOther,
};
std::string_view LogicalTypeName(LogicalType type);

// One leaf column of the file, in schema order (the order of ColumnChunks in each row group).
struct ColumnSchema {
  std::string name;             // the top-level field name ("seq" for seq.list.element)
  std::vector<std::string> path;  // full path in the schema ({"seq", "list", "element"})
  PhysicalType physical_type = PhysicalType::kInt64;
  LogicalType logical_type = LogicalType::kNone;
  int32_t type_length = 0;      // FIXED_LEN_BYTE_ARRAY width in bytes
  int32_t int_bit_width = 0;    // kInteger annotation: 8/16/32/64
  bool int_signed = true;
  int32_t decimal_scale = 0, decimal_precision = 0;
  bool optional = false;        // top-level value (or list) may be null
  bool is_list = false;         // LIST of elements; `element_optional` says if elements may be null
  bool element_optional = false;
  int16_t max_definition_level = 0;
  int16_t max_repetition_level = 0;
  // Empty if ReadColumn can read this column; else why not (ReadColumn returns Unimplemented).
  std::string unsupported_reason;
};

// The value representation in ColumnData (several physical/logical types map to one kind).
enum class ValueKind : uint8_t {
  kBool,    // ColumnData::bools (0/1)
  kInt32,   // ColumnData::int32s
  kInt64,   // ColumnData::int64s
  kFloat,   // ColumnData::floats
  kDouble,  // ColumnData::doubles
  kBinary,  // ColumnData::offsets + bytes (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY)
};

// The kind that holds values of physical type `type` (kBinary for BYTE_ARRAY and FLBA).
ValueKind ValueKindOf(PhysicalType type);

// std::allocator that leaves elements uninitialised on resize() (value-initialisation would
// zero-fill every buffer before the decoder overwrites it: one more pass over memory, and the
// first touch of fresh pages is slow on our machines). Every decoder writes all the elements it
// resizes to.
template <class T>
struct UninitAllocator : std::allocator<T> {
  using value_type = T;
  UninitAllocator() noexcept = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};
template <class T>
using PodVector = std::vector<T, UninitAllocator<T>>;

// One column chunk, decoded. "Slots" are rows for a plain column and list elements for a list
// column. Exactly one value vector (chosen by `kind`) has num_slots() entries; a null slot holds
// 0 / false / an empty byte string. Vectors keep their capacity across reads (reuse one
// ColumnData per thread to avoid page faults on fresh memory).
//
// Dictionary form (`indexed`; only from a ColumnChunkReader with set_dictionary_form(true), and
// only for a chunk that has a dictionary page): the value vector (or offsets + bytes) holds a
// table of num_entries() entries instead of one value per slot, and slot i holds entry
// indices[i]. Entry 0 is the null entry (0 / false / empty) that every null slot points at;
// entries 1..dictionary_size are the dictionary in page order; values of pages that are not
// dictionary-encoded (a writer's fallback when the dictionary grows too large) follow, one entry
// per value. Read values through Entry(slot) (or StringAt, which does it); indexing a value
// vector by slot is only right when !indexed. A dictionary entry may be unused or repeated.
struct ColumnData {
  ValueKind kind = ValueKind::kInt64;
  int64_t num_rows = 0;
  bool is_list = false;

  PodVector<uint8_t> bools;
  PodVector<int32_t> int32s;
  PodVector<int64_t> int64s;
  PodVector<float> floats;
  PodVector<double> doubles;
  // kBinary: entry e holds bytes[offsets[e], offsets[e+1]); offsets has num_entries() + 1 values.
  PodVector<int64_t> offsets;
  PodVector<uint8_t> bytes;

  // Per slot, 1 = present, 0 = null. Empty when no slot is null (always for a required column;
  // for a plain optional column whenever the chunk holds no null).
  PodVector<uint8_t> validity;

  // is_list only: row r holds slots [list_offsets[r], list_offsets[r+1]) (num_rows + 1 entries),
  // and list_validity[r] is 0 for a null list (empty vector: no null lists). A null list and an
  // empty list both have no slots.
  std::vector<int64_t> list_offsets;
  std::vector<uint8_t> list_validity;

  // Dictionary form (see above): per slot, its entry in the value table.
  bool indexed = false;
  int64_t dictionary_size = 0;  // entries 1..dictionary_size come from the dictionary page
  PodVector<uint32_t> indices;

  int64_t num_slots() const;
  // Values in the value vector: num_slots() unless indexed.
  int64_t num_entries() const;
  int64_t Entry(int64_t slot) const { return indexed ? indices[slot] : slot; }
  bool IsNull(int64_t slot) const { return !validity.empty() && validity[slot] == 0; }
  bool IsNullList(int64_t row) const { return !list_validity.empty() && list_validity[row] == 0; }
  std::string_view EntryString(int64_t entry) const {
    return {reinterpret_cast<const char*>(bytes.data()) + offsets[entry],
            static_cast<size_t>(offsets[entry + 1] - offsets[entry])};
  }
  std::string_view StringAt(int64_t slot) const { return EntryString(Entry(slot)); }
  // Empties all vectors, keeping their capacity.
  void Clear();
};

// Limits that protect against hostile files; exceeding one is ResourceExhausted.
struct ParquetReadOptions {
  int64_t max_footer_bytes = int64_t{64} << 20;
  int64_t max_page_bytes = int64_t{512} << 20;        // compressed or uncompressed page size
  int64_t max_values_per_chunk = int64_t{1} << 28;    // levels (rows + list elements) per chunk
  int64_t max_chunk_bytes = int64_t{4} << 30;         // decoded byte-array bytes per chunk
  int64_t max_schema_elements = 100000;
  int64_t max_row_groups = 1000000;
};

class ColumnChunkReader;

class ParquetFile {
 public:
  ~ParquetFile();
  ParquetFile(const ParquetFile&) = delete;
  ParquetFile& operator=(const ParquetFile&) = delete;

  // Opens `path` and decodes its footer and schema. NotFound / PermissionDenied for the path;
  // DataLoss for a bad magic, a footer length beyond the file, or corrupt metadata;
  // Unimplemented for encrypted files. Columns of unsupported shape do not fail Open (see
  // ColumnSchema::unsupported_reason).
  static Result<std::unique_ptr<ParquetFile>> Open(const std::string& path,
                                                   const ParquetReadOptions& options = {});
  // Same over bytes in memory (`name` is used in messages). Takes ownership of `bytes`.
  static Result<std::unique_ptr<ParquetFile>> OpenBuffer(std::string name,
                                                         std::vector<uint8_t> bytes,
                                                         const ParquetReadOptions& options = {});

  const std::string& path() const { return path_; }
  int64_t file_size() const { return file_size_; }
  const std::string& created_by() const;
  const std::vector<ColumnSchema>& schema() const { return columns_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_row_groups() const;
  int64_t num_rows() const { return num_rows_; }
  int64_t row_group_num_rows(int row_group) const;  // precondition: 0 <= row_group < num

  // Index of the leaf column whose name (top-level field) or dotted path equals `name`;
  // NotFound (listing the columns) otherwise.
  Result<int> FindColumn(std::string_view name) const;

  // Reads one column chunk. InvalidArgument for indices out of range. Allocates fresh buffers;
  // prefer a ColumnChunkReader in loops.
  Result<ColumnData> ReadColumn(int row_group, int column) const;

  // The bytes [first, first + size) of a column chunk (its dictionary page included) as the
  // footer gives them, unchecked (Read validates them). Precondition: indices in range.
  std::pair<int64_t, int64_t> ColumnChunkRange(int row_group, int column) const;
  // A hint that [offset, offset + n) (a ColumnChunkRange) will be read soon: a file on an object
  // store starts fetching exactly that range, so a reader that hints the chunks of its columns
  // fetches nothing else (projection); a local file ignores it.
  void Prefetch(int64_t offset, int64_t n) const;
  // True for a file behind a network; waits() counts its reads that waited for it
  // (io::RandomAccessFile::waits).
  bool remote() const;
  int64_t waits() const;

  struct Impl;  // implementation detail (internal/file_impl.h)

 private:
  friend class ColumnChunkReader;
  ParquetFile();
  // Reads [offset, offset + size) of the file into out[0, size) (bounds already checked).
  Status ReadAt(int64_t offset, int64_t size, uint8_t* out) const;

  std::string path_;
  int64_t file_size_ = 0;
  int64_t num_rows_ = 0;
  std::vector<ColumnSchema> columns_;
  std::unique_ptr<Impl> impl_;
};

// Reads column chunks of one file, reusing its scratch buffers (decompressed pages, levels,
// dictionary). Not thread-safe; `*file` must outlive it.
class ColumnChunkReader {
 public:
  explicit ColumnChunkReader(const ParquetFile* file);
  ~ColumnChunkReader();
  ColumnChunkReader(const ColumnChunkReader&) = delete;
  ColumnChunkReader& operator=(const ColumnChunkReader&) = delete;

  // Decodes column `column` of row group `row_group` into *out (previous contents replaced,
  // capacity kept). On error *out is unspecified. Errors as described at the top of this file.
  Status Read(int row_group, int column, ColumnData* out);

  // With true, later Reads leave a chunk that has a dictionary page in dictionary form
  // (ColumnData::indexed); chunks without one are read as usual. Default false.
  void set_dictionary_form(bool on) { dictionary_form_ = on; }

  struct Scratch;  // implementation detail (column_reader.cc)

 private:
  const ParquetFile* file_;
  bool dictionary_form_ = false;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace rectrain::io::parquet
