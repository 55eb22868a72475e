// rectrain/io/parquet/internal/thrift_compact.h: private to io/parquet. A bounds-checked reader of
// the Thrift compact protocol (the encoding of Parquet's footer and page headers).
// Every read checks the remaining input; nesting is limited (kMaxDepth) so hostile input cannot
// overflow the stack; element counts are bounded by the remaining bytes. Errors are DataLoss
// Statuses describing the problem; callers add file/column context.
// Thread safety: a ThriftReader is a cursor over caller-owned bytes; use one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace rectrain::io::parquet::internal
