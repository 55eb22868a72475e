// rectrain/io/parquet/internal/thrift_compact.h: private to io/parquet. The Thrift compact
// protocol (the encoding of Parquet's footer and page headers): a bounds-checked reader and the
// writer beside it.
// Reader: every read checks the remaining input; nesting is limited (kMaxDepth) so hostile input
// cannot overflow the stack; element counts are bounded by the remaining bytes. Errors are
// DataLoss Statuses describing the problem; callers add file/column context.
// Writer: appends to a caller-owned string; what it writes comes from our own metadata structs,
// so misuse (unbalanced structs, decreasing field ids are fine) is a programming error (DCHECK).
// Thread safety: a ThriftReader / ThriftWriter is a cursor over caller-owned bytes; one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/status.h"

namespace rectrain::io::parquet::internal {

// Compact-protocol type codes (the low nibble of a field header).
enum class TType : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class ThriftReader {
 public:
  static constexpr int kMaxDepth = 64;

  ThriftReader(const uint8_t* data, int64_t size) : begin_(data), pos_(data), end_(data + size) {}

  int64_t position() const { return pos_ - begin_; }
  int64_t remaining() const { return end_ - pos_; }

  // Struct framing. ReadFieldHeader sets *type = kStop at the end of a struct.
  Status BeginStruct();
  void EndStruct();
  Status ReadFieldHeader(TType* type, int16_t* field_id);

  // Values. `type` is the field type from the header (booleans live in the header).
  Status ReadBool(TType type, bool* out);
  Status ReadI32(TType type, int32_t* out);   // accepts kByte/kI16/kI32
  Status ReadI64(TType type, int64_t* out);   // accepts kByte/kI16/kI32/kI64
  Status ReadString(TType type, std::string* out);
  // List/set header; *size is bounded by remaining bytes.
  Status ReadListHeader(TType type, TType* elem_type, int64_t* size);
  // Reads a list element of integer type.
  Status ReadListI32(TType elem_type, int32_t* out);
  Status ReadListString(TType elem_type, std::string* out);

  // Skips a value of `type` (recursively for struct/list/set/map).
  Status Skip(TType type);

 private:
  Status ReadVarint(uint64_t* out);
  Status ReadZigzag(int64_t* out);
  Status SkipDepth(TType type, int depth);
  Status ExpectType(TType type, bool ok, const char* what);

  const uint8_t* begin_;
  const uint8_t* pos_;
  const uint8_t* end_;
  int depth_ = 0;
  int16_t last_field_id_[kMaxDepth + 1] = {};
};

// Writes the compact protocol into *out (appending). Field ids are delta-encoded in the field
// header when they grow by 1..15 from the previous field of the same struct, else written in
// full (zigzag varint), exactly as ThriftReader expects.
//
// Example (a struct {1: i32 = 7, 4: string = "x"} followed by its stop byte):
//   std::string bytes;
//   ThriftWriter w(&bytes);
//   w.BeginStruct();
//   w.FieldI32(1, 7);
//   w.FieldBinary(4, "x");
//   w.EndStruct();
class ThriftWriter {
 public:
  explicit ThriftWriter(std::string* out) : out_(out) {}

  // A struct that is the whole message or a list element (no field header).
  void BeginStruct();
  // Writes the stop byte of the innermost struct.
  void EndStruct();
  // A struct-valued field: header, then the struct is open until EndStruct().
  void FieldStruct(int16_t id);

  void FieldBool(int16_t id, bool v);  // the value lives in the header's type nibble
  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldBinary(int16_t id, std::string_view v);
  // A list-valued field of `size` elements of `elem`; write the elements next with ListI32,
  // ListBinary, or BeginStruct/EndStruct per element.
  void FieldList(int16_t id, TType elem, int64_t size);
  void ListI32(int32_t v) { WriteZigzag(v); }
  void ListBinary(std::string_view v);

  int depth() const { return static_cast<int>(last_field_id_.size()); }

 private:
  void FieldHeader(int16_t id, TType type);
  void WriteVarint(uint64_t v);
  void WriteZigzag(int64_t v) { WriteVarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }

  std::string* out_;
  std::vector<int16_t> last_field_id_;  // per open struct
};

}  // namespace rectrain::io::parquet::internal
