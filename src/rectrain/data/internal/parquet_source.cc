#include "rectrain/data/internal/parquet_source.h"

#include "rectrain/base/random.h"
#include "rectrain/data/internal/row_eval.h"

namespace rectrain::data::internal {

using io::parquet::ColumnData;
using io::parquet::ValueKind;

namespace {

RawValue SlotValue(const ColumnData& d, int64_t i) {
  RawValue v;
  if (d.IsNull(i)) return v;
  switch (d.kind) {
    case ValueKind::kBool:
      v.kind = RawValue::Kind::kBool;
      v.i = d.bools[i];
      break;
    case ValueKind::kInt32:
      v.kind = RawValue::Kind::kInt;
      v.i = d.int32s[i];
      break;
    case ValueKind::kInt64:
      v.kind = RawValue::Kind::kInt;
      v.i = d.int64s[i];
      break;
    case ValueKind::kFloat:
      v.kind = RawValue::Kind::kDouble;
      v.d = d.floats[i];
      break;
    case ValueKind::kDouble:
      v.kind = RawValue::Kind::kDouble;
      v.d = d.doubles[i];
      break;
    case ValueKind::kBinary:
      v = RawValue::Text(d.StringAt(i));
      break;
  }
  return v;
}

// One row of decoded column chunks (see row_eval.h for the Row contract).
struct ParquetRow {
  const ColumnData* data;
  int64_t row;       // within the row group
  int64_t file_row;  // within the file
  uint64_t key;
  RawValue Get(int slot) const {
    const ColumnData& d = data[slot];
    if (d.is_list) return {};
    return SlotValue(d, row);
  }
  bool IsList(int slot) const { return data[slot].is_list; }
  int64_t ListSize(int slot) const {
    const ColumnData& d = data[slot];
    return d.list_offsets[row + 1] - d.list_offsets[row];
  }
  RawValue ListElement(int slot, int64_t k) const {
    const ColumnData& d = data[slot];
    return SlotValue(d, d.list_offsets[row] + k);
  }
  int64_t FieldColumn(int) const { return 0; }
  uint64_t RowKey() const { return DeriveSeed(key, static_cast<uint64_t>(file_row)); }
};

}  // namespace

RowGroupDecoder::RowGroupDecoder(const ParsePlan* plan) : plan_(plan), data_(plan->num_slots()) {}
RowGroupDecoder::~RowGroupDecoder() = default;

Status RowGroupDecoder::Decode(const io::parquet::ParquetFile& file,
                               const std::vector<int>& file_columns, int row_group,
                               uint64_t file_key, int64_t first_row, int64_t max_bad_rows,
                               bool keep_raw, RowBlock* block, bool* complete) {
  *complete = false;
  if (file_ != &file) {
    reader_ = std::make_unique<io::parquet::ColumnChunkReader>(&file);
    file_ = &file;
  }
  const int64_t rows = file.row_group_num_rows(row_group);
  for (int slot = 0; slot < plan_->num_slots(); ++slot) {
    RECTRAIN_RETURN_IF_ERROR(reader_->Read(row_group, file_columns[slot], &data_[slot]));
    if (data_[slot].num_rows != rows) {
      return DataLossError(file.path() + ": column '" + plan_->columns[plan_->slot_columns[slot]].name +
                           "' (row group " + std::to_string(row_group) + ") has " +
                           std::to_string(data_[slot].num_rows) + " rows, the row group " +
                           std::to_string(rows));
    }
  }
  block->Reserve(*plan_, rows);
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    ParquetRow row{data_.data(), r, first_row + r, file_key};
    if (EvalRow(*plan_, row, r + 1, keep_raw, std::string_view(), &scratch_, block) == EvalResult::kBad) {
      if (++bad > max_bad_rows) return OkStatus();
    }
  }
  *complete = true;
  return OkStatus();
}

Result<std::vector<int>> MapParquetColumns(const ParsePlan& plan,
                                           const io::parquet::ParquetFile& file) {
  std::vector<int> out(plan.num_slots(), -1);
  for (int slot = 0; slot < plan.num_slots(); ++slot) {
    const ColumnPlan& cp = plan.columns[plan.slot_columns[slot]];
    Result<int> col = file.FindColumn(cp.name);
    if (!col.ok()) {
      return InvalidArgumentError(file.path() + " has no column \"" + cp.name +
                                  "\" (the config reads it; every file must have the columns of the first)");
    }
    const io::parquet::ColumnSchema& cs = file.schema()[*col];
    if (!cs.unsupported_reason.empty()) {
      return UnimplementedError(file.path() + ": column \"" + cp.name +
                                "\" cannot be read: " + cs.unsupported_reason);
    }
    if (cs.is_list != cp.is_list) {
      return InvalidArgumentError(file.path() + ": column \"" + cp.name + "\" is " +
                                  (cs.is_list ? "a list" : "not a list") + " here but " +
                                  (cp.is_list ? "a list" : "not a list") + " in the first file");
    }
    out[slot] = *col;
  }
  return out;
}

}  // namespace rectrain::data::internal
