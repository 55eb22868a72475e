#include "rectrain/io/parquet/internal/thrift_compact.h"

#include <cstring>
#include <sstream>

#include "rectrain/base/check.h"

namespace rectrain::io::parquet::internal {
namespace {

Status Truncated(const char* what) {
  return DataLossError(std::string("thrift: truncated ") + what);
}

bool IsIntType(TType t) { return t == TType::kByte || t == TType::kI16 || t == TType::kI32; }

}  // namespace

Status ThriftReader::ReadVarint(uint64_t* out) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= end_) return Truncated("varint");
    uint8_t byte = *pos_++;
    if (shift == 63 && (byte & 0x7e) != 0) return DataLossError("thrift: varint overflows 64 bits");
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = result;
      return OkStatus();
    }
  }
  return DataLossError("thrift: varint longer than 10 bytes");
}

Status ThriftReader::ReadZigzag(int64_t* out) {
  uint64_t v;
  RECTRAIN_RETURN_IF_ERROR(ReadVarint(&v));
  *out = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  return OkStatus();
}

Status ThriftReader::ExpectType(TType type, bool ok, const char* what) {
  if (ok) return OkStatus();
  std::ostringstream msg;
  msg << "thrift: field of type " << static_cast<int>(type) << " where " << what << " was expected";
  return DataLossError(msg.str());
}

Status ThriftReader::BeginStruct() {
  if (depth_ >= kMaxDepth) return DataLossError("thrift: structs nested too deeply");
  ++depth_;
  last_field_id_[depth_] = 0;
  return OkStatus();
}

void ThriftReader::EndStruct() {
  if (depth_ > 0) --depth_;
}

Status ThriftReader::ReadFieldHeader(TType* type, int16_t* field_id) {
  if (pos_ >= end_) return Truncated("struct (missing field stop)");
  uint8_t byte = *pos_++;
  uint8_t t = byte & 0x0f;
  if (t == 0) {
    *type = TType::kStop;
    *field_id = 0;
    return OkStatus();
  }
  if (t > static_cast<uint8_t>(TType::kStruct)) {
    return DataLossError("thrift: invalid field type " + std::to_string(t));
  }
  *type = static_cast<TType>(t);
  uint8_t delta = byte >> 4;
  if (delta != 0) {
    *field_id = static_cast<int16_t>(last_field_id_[depth_] + delta);
  } else {
    int64_t id;
    RECTRAIN_RETURN_IF_ERROR(ReadZigzag(&id));
    if (id < INT16_MIN || id > INT16_MAX) return DataLossError("thrift: field id out of range");
    *field_id = static_cast<int16_t>(id);
  }
  last_field_id_[depth_] = *field_id;
  return OkStatus();
}

Status ThriftReader::ReadBool(TType type, bool* out) {
  RECTRAIN_RETURN_IF_ERROR(
      ExpectType(type, type == TType::kTrue || type == TType::kFalse, "a bool"));
  *out = type == TType::kTrue;
  return OkStatus();
}

Status ThriftReader::ReadI32(TType type, int32_t* out) {
  RECTRAIN_RETURN_IF_ERROR(ExpectType(type, IsIntType(type), "an i32"));
  int64_t v;
  if (type == TType::kByte) {
    if (pos_ >= end_) return Truncated("byte");
    v = static_cast<int8_t>(*pos_++);
  } else {
    RECTRAIN_RETURN_IF_ERROR(ReadZigzag(&v));
  }
  if (v < INT32_MIN || v > INT32_MAX) return DataLossError("thrift: i32 value out of range");
  *out = static_cast<int32_t>(v);
  return OkStatus();
}

Status ThriftReader::ReadI64(TType type, int64_t* out) {
  RECTRAIN_RETURN_IF_ERROR(ExpectType(type, IsIntType(type) || type == TType::kI64, "an i64"));
  if (type == TType::kByte) {
    if (pos_ >= end_) return Truncated("byte");
    *out = static_cast<int8_t>(*pos_++);
    return OkStatus();
  }
  return ReadZigzag(out);
}

Status ThriftReader::ReadString(TType type, std::string* out) {
  RECTRAIN_RETURN_IF_ERROR(ExpectType(type, type == TType::kBinary, "a string"));
  uint64_t len;
  RECTRAIN_RETURN_IF_ERROR(ReadVarint(&len));
  if (len > static_cast<uint64_t>(remaining())) {
    return DataLossError("thrift: string of " + std::to_string(len) + " bytes exceeds the " +
                         std::to_string(remaining()) + " bytes left");
  }
  out->assign(reinterpret_cast<const char*>(pos_), len);
  pos_ += len;
  return OkStatus();
}

Status ThriftReader::ReadListHeader(TType type, TType* elem_type, int64_t* size) {
  RECTRAIN_RETURN_IF_ERROR(
      ExpectType(type, type == TType::kList || type == TType::kSet, "a list"));
  if (pos_ >= end_) return Truncated("list header");
  uint8_t byte = *pos_++;
  uint8_t t = byte & 0x0f;
  if (t == 0 || t > static_cast<uint8_t>(TType::kStruct)) {
    return DataLossError("thrift: invalid list element type " + std::to_string(t));
  }
  *elem_type = static_cast<TType>(t);
  uint64_t n = byte >> 4;
  if (n == 15) {
    RECTRAIN_RETURN_IF_ERROR(ReadVarint(&n));
  }
  // Every element takes at least one byte, so a count above the remaining bytes is corrupt.
  if (n > static_cast<uint64_t>(remaining())) {
    return DataLossError("thrift: list of " + std::to_string(n) + " elements exceeds the " +
                         std::to_string(remaining()) + " bytes left");
  }
  *size = static_cast<int64_t>(n);
  return OkStatus();
}

Status ThriftReader::ReadListI32(TType elem_type, int32_t* out) {
  return ReadI32(elem_type, out);
}

Status ThriftReader::ReadListString(TType elem_type, std::string* out) {
  return ReadString(elem_type, out);
}

Status ThriftReader::Skip(TType type) { return SkipDepth(type, 0); }

Status ThriftReader::SkipDepth(TType type, int depth) {
  if (depth > kMaxDepth) return DataLossError("thrift: values nested too deeply");
  switch (type) {
    case TType::kStop:
      return DataLossError("thrift: unexpected stop");
    case TType::kTrue:
    case TType::kFalse:
      // In a field, the value lives in the header. In a collection, bools take one byte; the
      // collection path below handles that.
      return OkStatus();
    case TType::kByte:
      if (pos_ >= end_) return Truncated("byte");
      ++pos_;
      return OkStatus();
    case TType::kI16:
    case TType::kI32:
    case TType::kI64: {
      uint64_t v;
      return ReadVarint(&v);
    }
    case TType::kDouble:
      if (remaining() < 8) return Truncated("double");
      pos_ += 8;
      return OkStatus();
    case TType::kBinary: {
      uint64_t len;
      RECTRAIN_RETURN_IF_ERROR(ReadVarint(&len));
      if (len > static_cast<uint64_t>(remaining())) return Truncated("binary");
      pos_ += len;
      return OkStatus();
    }
    case TType::kList:
    case TType::kSet: {
      TType elem;
      int64_t n;
      RECTRAIN_RETURN_IF_ERROR(ReadListHeader(type, &elem, &n));
      for (int64_t i = 0; i < n; ++i) {
        if (elem == TType::kTrue || elem == TType::kFalse) {
          if (pos_ >= end_) return Truncated("bool");
          ++pos_;
        } else {
          RECTRAIN_RETURN_IF_ERROR(SkipDepth(elem, depth + 1));
        }
      }
      return OkStatus();
    }
    case TType::kMap: {
      uint64_t n;
      RECTRAIN_RETURN_IF_ERROR(ReadVarint(&n));
      if (n == 0) return OkStatus();
      if (n > static_cast<uint64_t>(remaining())) return Truncated("map");
      if (pos_ >= end_) return Truncated("map header");
      uint8_t kv = *pos_++;
      TType kt = static_cast<TType>(kv >> 4), vt = static_cast<TType>(kv & 0x0f);
      if ((kv >> 4) == 0 || (kv >> 4) > 12 || (kv & 0x0f) == 0 || (kv & 0x0f) > 12) {
        return DataLossError("thrift: invalid map element types");
      }
      for (uint64_t i = 0; i < n; ++i) {
        for (TType t : {kt, vt}) {
          if (t == TType::kTrue || t == TType::kFalse) {
            if (pos_ >= end_) return Truncated("bool");
            ++pos_;
          } else {
            RECTRAIN_RETURN_IF_ERROR(SkipDepth(t, depth + 1));
          }
        }
      }
      return OkStatus();
    }
    case TType::kStruct: {
      RECTRAIN_RETURN_IF_ERROR(BeginStruct());
      while (true) {
        TType ft;
        int16_t id;
        RECTRAIN_RETURN_IF_ERROR(ReadFieldHeader(&ft, &id));
        if (ft == TType::kStop) break;
        RECTRAIN_RETURN_IF_ERROR(SkipDepth(ft, depth + 1));
      }
      EndStruct();
      return OkStatus();
    }
  }
  return DataLossError("thrift: invalid type");
}

void ThriftWriter::WriteVarint(uint64_t v) {
  while (v >= 0x80) {
    out_->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_->push_back(static_cast<char>(v));
}

void ThriftWriter::FieldHeader(int16_t id, TType type) {
  RECTRAIN_DCHECK(!last_field_id_.empty());
  const int delta = id - last_field_id_.back();
  if (delta > 0 && delta <= 15) {
    out_->push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_->push_back(static_cast<char>(type));
    WriteZigzag(id);
  }
  last_field_id_.back() = id;
}

void ThriftWriter::BeginStruct() { last_field_id_.push_back(0); }

void ThriftWriter::EndStruct() {
  RECTRAIN_DCHECK(!last_field_id_.empty());
  out_->push_back(static_cast<char>(TType::kStop));
  last_field_id_.pop_back();
}

void ThriftWriter::FieldStruct(int16_t id) {
  FieldHeader(id, TType::kStruct);
  BeginStruct();
}

void ThriftWriter::FieldBool(int16_t id, bool v) { FieldHeader(id, v ? TType::kTrue : TType::kFalse); }

void ThriftWriter::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, TType::kI32);
  WriteZigzag(v);
}

void ThriftWriter::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, TType::kI64);
  WriteZigzag(v);
}

void ThriftWriter::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, TType::kBinary);
  ListBinary(v);
}

void ThriftWriter::ListBinary(std::string_view v) {
  WriteVarint(v.size());
  out_->append(v.data(), v.size());
}

void ThriftWriter::FieldList(int16_t id, TType elem, int64_t size) {
  RECTRAIN_DCHECK(size >= 0);
  FieldHeader(id, TType::kList);
  if (size < 15) {
    out_->push_back(static_cast<char>((size << 4) | static_cast<int>(elem)));
  } else {
    out_->push_back(static_cast<char>(0xf0 | static_cast<int>(elem)));
    WriteVarint(static_cast<uint64_t>(size));
  }
}

}  // namespace rectrain::io::parquet::internal
