#include "rectrain/io/parquet/internal/metadata.h"

#include <cstdint>
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

Status ReadStatistics(ThriftReader& r, Statistics* st) {
  return ForEachField(r, [&](TType t, int16_t id) -> Status {
    std::string v;
    switch (id) {
      case 3:
        return r.ReadI64(t, &st->null_count.emplace());
      case 5:
        RECTRAIN_RETURN_IF_ERROR(r.ReadString(t, &v));
        st->max_value = std::move(v);
        return OkStatus();
      case 6:
        RECTRAIN_RETURN_IF_ERROR(r.ReadString(t, &v));
        st->min_value = std::move(v);
        return OkStatus();
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
      case 12:
        RECTRAIN_RETURN_IF_ERROR(ExpectStruct(t));
        return ReadStatistics(r, &m->statistics.emplace());
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
      case 2:
        return r.ReadI64(t, &c->file_offset);
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
      case 2:
        return r.ReadI64(t, &g->total_byte_size);
      case 3:
        return r.ReadI64(t, &g->num_rows);
      case 5:
        return r.ReadI64(t, &g->file_offset.emplace());
      case 6:
        return r.ReadI64(t, &g->total_compressed_size.emplace());
      case 7: {
        int32_t v;
        RECTRAIN_RETURN_IF_ERROR(r.ReadI32(t, &v));
        if (v < INT16_MIN || v > INT16_MAX) return DataLossError("thrift: row group ordinal out of range");
        g->ordinal = static_cast<int16_t>(v);
        return OkStatus();
      }
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
      case 5:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          RECTRAIN_RETURN_IF_ERROR(ExpectStruct(et));
          auto& kv = out->key_value_metadata.emplace_back();
          return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
            if (fid == 1) return r.ReadString(ft, &kv.first);
            if (fid == 2) return r.ReadString(ft, &kv.second);
            return r.Skip(ft);
          });
        });
      case 6:
        return r.ReadString(t, &out->created_by);
      case 7:
        return ForEachListElement(r, t, [&](TType et) -> Status {
          RECTRAIN_RETURN_IF_ERROR(ExpectStruct(et));
          return ForEachField(r, [&](TType ft, int16_t fid) -> Status {
            if (fid == 1) out->type_defined_order = true;
            return r.Skip(ft);
          });
        });
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

namespace {

void WriteLogicalType(int16_t id, ThriftWriter& w) {
  w.FieldStruct(10);
  w.FieldStruct(id);  // STRING, LIST, ...: an empty struct
  w.EndStruct();
  w.EndStruct();
}

void WriteSchemaElement(const SchemaElement& e, ThriftWriter& w) {
  w.BeginStruct();
  if (e.type) w.FieldI32(1, *e.type);
  if (e.type && *e.type == kTFixedLenByteArray) w.FieldI32(2, e.type_length);
  if (e.repetition_type) w.FieldI32(3, *e.repetition_type);
  w.FieldBinary(4, e.name);
  if (e.num_children > 0) w.FieldI32(5, e.num_children);
  if (e.converted_type) w.FieldI32(6, *e.converted_type);
  if (e.logical_type != kLNone) WriteLogicalType(e.logical_type, w);
  w.EndStruct();
}

void WriteStatistics(const Statistics& st, ThriftWriter& w) {
  w.FieldStruct(12);
  if (st.null_count) w.FieldI64(3, *st.null_count);
  if (st.max_value) w.FieldBinary(5, *st.max_value);
  if (st.min_value) w.FieldBinary(6, *st.min_value);
  w.EndStruct();
}

void WriteColumnChunk(const ColumnChunk& c, ThriftWriter& w) {
  w.BeginStruct();
  if (c.file_path) w.FieldBinary(1, *c.file_path);
  w.FieldI64(2, c.file_offset);
  const ColumnMetaData& m = c.meta_data;
  w.FieldStruct(3);
  w.FieldI32(1, m.type);
  w.FieldList(2, TType::kI32, static_cast<int64_t>(m.encodings.size()));
  for (int32_t e : m.encodings) w.ListI32(e);
  w.FieldList(3, TType::kBinary, static_cast<int64_t>(m.path_in_schema.size()));
  for (const std::string& p : m.path_in_schema) w.ListBinary(p);
  w.FieldI32(4, m.codec);
  w.FieldI64(5, m.num_values);
  w.FieldI64(6, m.total_uncompressed_size);
  w.FieldI64(7, m.total_compressed_size);
  w.FieldI64(9, m.data_page_offset);
  if (m.dictionary_page_offset) w.FieldI64(11, *m.dictionary_page_offset);
  if (m.statistics) WriteStatistics(*m.statistics, w);
  w.EndStruct();
  w.EndStruct();
}

void WriteRowGroup(const RowGroup& g, ThriftWriter& w) {
  w.BeginStruct();
  w.FieldList(1, TType::kStruct, static_cast<int64_t>(g.columns.size()));
  for (const ColumnChunk& c : g.columns) WriteColumnChunk(c, w);
  w.FieldI64(2, g.total_byte_size);
  w.FieldI64(3, g.num_rows);
  if (g.file_offset) w.FieldI64(5, *g.file_offset);
  if (g.total_compressed_size) w.FieldI64(6, *g.total_compressed_size);
  if (g.ordinal) w.FieldI32(7, *g.ordinal);  // an i16 is a zigzag varint like an i32
  w.EndStruct();
}

}  // namespace

void WriteFileMetaData(const FileMetaData& meta, ThriftWriter& w) {
  w.BeginStruct();
  w.FieldI32(1, meta.version);
  w.FieldList(2, TType::kStruct, static_cast<int64_t>(meta.schema.size()));
  for (const SchemaElement& e : meta.schema) WriteSchemaElement(e, w);
  w.FieldI64(3, meta.num_rows);
  w.FieldList(4, TType::kStruct, static_cast<int64_t>(meta.row_groups.size()));
  for (const RowGroup& g : meta.row_groups) WriteRowGroup(g, w);
  if (!meta.key_value_metadata.empty()) {
    w.FieldList(5, TType::kStruct, static_cast<int64_t>(meta.key_value_metadata.size()));
    for (const auto& [key, value] : meta.key_value_metadata) {
      w.BeginStruct();
      w.FieldBinary(1, key);
      w.FieldBinary(2, value);
      w.EndStruct();
    }
  }
  if (!meta.created_by.empty()) w.FieldBinary(6, meta.created_by);
  if (meta.type_defined_order) {
    int64_t leaves = 0;
    for (const SchemaElement& e : meta.schema) leaves += e.num_children == 0 && e.type ? 1 : 0;
    w.FieldList(7, TType::kStruct, leaves);
    for (int64_t i = 0; i < leaves; ++i) {
      w.BeginStruct();  // union ColumnOrder
      w.FieldStruct(1);  // TYPE_ORDER: TypeDefinedOrder {}
      w.EndStruct();
      w.EndStruct();
    }
  }
  w.EndStruct();
}

void WritePageHeader(const PageHeader& h, ThriftWriter& w) {
  w.BeginStruct();
  w.FieldI32(1, h.type);
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.data_page_header) {
    const DataPageHeader& d = *h.data_page_header;
    w.FieldStruct(5);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.encoding);
    w.FieldI32(3, d.definition_level_encoding);
    w.FieldI32(4, d.repetition_level_encoding);
    w.EndStruct();
  }
  if (h.dictionary_page_header) {
    const DictionaryPageHeader& d = *h.dictionary_page_header;
    w.FieldStruct(7);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.encoding);
    w.EndStruct();
  }
  if (h.data_page_header_v2) {
    const DataPageHeaderV2& d = *h.data_page_header_v2;
    w.FieldStruct(8);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.num_nulls);
    w.FieldI32(3, d.num_rows);
    w.FieldI32(4, d.encoding);
    w.FieldI32(5, d.definition_levels_byte_length);
    w.FieldI32(6, d.repetition_levels_byte_length);
    w.FieldBool(7, d.is_compressed);
    w.EndStruct();
  }
  w.EndStruct();
}

}  // namespace rectrain::io::parquet::internal
