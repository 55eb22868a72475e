#include "rectrain/io/parquet/internal/metadata.h"

#include <utility>

namespace rectrain::io::parquet::internal {
namespace {

// Iterates the fields of a struct: calls on_field(type, id) for each; on_field must consume the
// value (or return Skip).
template <typename F>
Status ForEachField(ThriftReader& r, F&& on_field) {
  RECTRAIN_RETURN_IF_ERROR(r.BeginStruct());
  while (true) {
    TType type;
    int16_t id;
    RECTRAIN_RETURN_IF_ERROR(r.ReadFieldHeader(&type, &id));
    if (type == TType::kStop) break;
    RECTRAIN_RETURN_IF_ERROR(on_field(type, id));
  }
  r.EndStruct();
  return OkStatus();
}

template <typename F>
Status ForEachListElement(ThriftReader& r, TType type, F&& on_elem) {
  TType elem;
  int64_t n;
  RECTRAIN_RETURN_IF_ERROR(r.ReadListHeader(type, &elem, &n));
  for (int64_t i = 0; i < n; ++i) RECTRAIN_RETURN_IF_ERROR(on_elem(elem));
  return OkStatus();
}

Status ExpectStruct(TType type) {
  if (type != TType::kStruct) return DataLossError("thrift: expected a struct field");
  return OkStatus();
}

Status ReadLogicalType(ThriftReader& r, SchemaElement* e) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    if (t != TType::kStruct) return r.Skip(t);
    e->logical_type = id;
    if (id == kLInteger) {
      return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
        if (fid == 1) {
          int32_t w;
          RECTRAIN_RETURN_IF_ERROR(r.ReadI32(ft, &w));
          e->int_bit_width = w;
          return OkStatus();
        }
        if (fid == 2) return r.ReadBool(ft, &e->int_signed);
        return r.Skip(ft);
      });
    }
    if (id == kLDecimal) {
      return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
        if (fid == 1) return r.ReadI32(ft, &e->scale);
        if (fid == 2) return r.ReadI32(ft, &e->precision);
        return r.Skip(ft);
      });
    }
    return r.Skip(t);
  });
}

Status ReadSchemaElement(ThriftReader& r, SchemaElement* e) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    int32_t v;
    switch (id) {
      case 1:
        RECTRAIN_RETURN_IF_ERROR(r.ReadI32(t, &v));
        e->type = v;
        return OkStatus();
      case 2:
        return r.ReadI32(t, &e->type_length);
      case 3:
        RECTRAIN_RETURN_IF_ERROR(r.ReadI32(t, &v));
        e->repetition_type = v;
        return OkStatus();
      case 4:
        return r.ReadString(t, &e->name);
      case 5:
        return r.ReadI32(t, &e->num_children);
      case 6:
        RECTRAIN_RETURN_IF_ERROR(r.ReadI32(t, &v));
        e->converted_type = v;
        return OkStatus();
      case 7:
        return r.ReadI32(t, &e->scale);
      case 8:
        return r.ReadI32(t, &e->precision);
      case 10:
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        return ReadLogicalType(r, e);
      default:
        return r.Skip(t);
    }
  });
}

Status ReadColumnMetaData(ThriftReader& r, ColumnMetaData* m) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    switch (id) {
      case 1:
        return r.ReadI32(t, &m->type);
      case 2:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          int32_t enc;
          RECTRAIN_RETURN_IF_ERROR(r.ReadListI32(et, &enc));
          m->encodings.push_back(enc);
          return OkStatus();
        });
      case 3:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          std::string s;
          RECTRAIN_RETURN_IF_ERROR(r.ReadListString(et, &s));
          m->path_in_schema.push_back(std::move(s));
          return OkStatus();
        });
      case 4:
        return r.ReadI32(t, &m->codec);
      case 5:
        return r.ReadI64(t, &m->num_values);
      case 6:
        return r.ReadI64(t, &m->total_uncompressed_size);
      case 7:
        return r.ReadI64(t, &m->total_compressed_size);
      case 9:
        return r.ReadI64(t, &m->data_page_offset);
      case 11: {
        int64_t v;
        RECTRAIN_RETURN_IF_ERROR(r.ReadI64(t, &v));
        m->dictionary_page_offset = v;
        return OkStatus();
      }
      default:
        return r.Skip(t);
    }
  });
}

Status ReadColumnChunk(ThriftReader& r, ColumnChunk* c) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    switch (id) {
      case 1: {
        std::string p;
        RECTRAIN_RETURN_IF_ERROR(r.ReadString(t, &p));
        c->file_path = std::move(p);
        return OkStatus();
      }
      case 3:
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        c->has_meta_data = true;
        return ReadColumnMetaData(r, &c->meta_data);
      case 8:
      case 9:
        c->encrypted = true;
        return r.Skip(t);
      default:
        return r.Skip(t);
    }
  });
}

Status ReadRowGroup(ThriftReader& r, RowGroup* g) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    switch (id) {
      case 1:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          RECTRAIN_RETURN_IF_ERROR(ExpectStruct(et));
          g->columns.emplace_back();
          return ReadColumnChunk(r, &g->columns.back());
        });
      case 3:
        return r.ReadI64(t, &g->num_rows);
      default:
        return r.Skip(t);
    }
  });
}

}  // namespace

Status ReadFileMetaData(ThriftReader& r, FileMetaData* out) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    switch (id) {
      case 1:
        return r.ReadI32(t, &out->version);
      case 2:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          RECTRAIN_RETURN_IF_ERROR(ExpectStruct(et));
          out->schema.emplace_back();
          return ReadSchemaElement(r, &out->schema.back());
        });
      case 3:
        return r.ReadI64(t, &out->num_rows);
      case 4:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          RECTRAIN_RETURN_IF_ERROR(ExpectStruct(et));
          out->row_groups.emplace_back();
          return ReadRowGroup(r, &out->row_groups.back());
        });
      case 6:
        return r.ReadString(t, &out->created_by);
      case 8:
        out->encrypted = true;
        return r.Skip(t);
      default:
        return r.Skip(t);
    }
  });
}

Status ReadPageHeader(ThriftReader& r, PageHeader* out) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    switch (id) {
      case 1:
        return r.ReadI32(t, &out->type);
      case 2:
        return r.ReadI32(t, &out->uncompressed_page_size);
      case 3:
        return r.ReadI32(t, &out->compressed_page_size);
      case 5: {
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        DataPageHeader& h = out->data_page_header.emplace();
        return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
          switch (fid) {
            case 1: return r.ReadI32(ft, &h.num_values);
            case 2: return r.ReadI32(ft, &h.encoding);
            case 3: return r.ReadI32(ft, &h.definition_level_encoding);
            case 4: return r.ReadI32(ft, &h.repetition_level_encoding);
            default: return r.Skip(ft);
          }
        });
      }
      case 7: {
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        DictionaryPageHeader& h = out->dictionary_page_header.emplace();
        return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
          switch (fid) {
            case 1: return r.ReadI32(ft, &h.num_values);
            case 2: return r.ReadI32(ft, &h.encoding);
            default: return r.Skip(ft);
          }
        });
      }
      case 8: {
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        DataPageHeaderV2& h = out->data_page_header_v2.emplace();
        return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
          switch (fid) {
            case 1: return r.ReadI32(ft, &h.num_values);
            case 2: return r.ReadI32(ft, &h.num_nulls);
            case 3: return r.ReadI32(ft, &h.num_rows);
            case 4: return r.ReadI32(ft, &h.encoding);
            case 5: return r.ReadI32(ft, &h.definition_levels_byte_length);
            case 6: return r.ReadI32(ft, &h.repetition_levels_byte_length);
            case 7: return r.ReadBool(ft, &h.is_compressed);
            default: return r.Skip(ft);
          }
        });
      }
      default:
        return r.Skip(t);
    }
  });
}

}  // namespace rectrain::io::parquet::internal
