#include "rectrain/data/internal/parquet_source.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "rectrain/base/random.h"
#include "rectrain/data/internal/row_eval.h"

namespace rectrain::data::internal {

using io::parquet::ColumnData;
using io::parquet::ValueKind;

namespace {

// The value of entry e of d's value vector (a slot when !d.indexed).
RawValue EntryValue(const ColumnData& d, int64_t e) {
  RawValue v;
  switch (d.kind) {
    case ValueKind::kBool:
      v.kind = RawValue::Kind::kBool;
      v.i = d.bools[e];
      break;
    case ValueKind::kInt32:
      v.kind = RawValue::Kind::kInt;
      v.i = d.int32s[e];
      break;
    case ValueKind::kInt64:
      v.kind = RawValue::Kind::kInt;
      v.i = d.int64s[e];
      break;
    case ValueKind::kFloat:
      v.kind = RawValue::Kind::kDouble;
      v.d = d.floats[e];
      break;
    case ValueKind::kDouble:
      v.kind = RawValue::Kind::kDouble;
      v.d = d.doubles[e];
      break;
    case ValueKind::kBinary:
      v = RawValue::Text(d.EntryString(e));
      break;
  }
  return v;
}

RawValue SlotValue(const ColumnData& d, int64_t i) {
  if (d.IsNull(i)) return RawValue();
  return EntryValue(d, d.Entry(i));
}

// Evaluates `eval(value, &result)` once per entry of an indexed column's value table (entry 0,
// the null entry, as a missing value) unless already done for this row group. Returns the
// per-entry results, or nullptr if some entry's value is bad (then the caller evaluates slot by
// slot, so that only rows that use a bad entry fail).
template <class T, class Eval>
const T* EntryResults(const ColumnData& d, int64_t generation, EntryCache<T>* cache, Eval&& eval) {
  if (cache->generation != generation) {
    cache->generation = generation;
    const int64_t n = d.num_entries();
    cache->values.resize(static_cast<size_t>(n));
    bool ok = true;
    for (int64_t e = 1; e < n; ++e) ok &= eval(EntryValue(d, e), &cache->values[e]);
    // A bad null entry (a null label) only matters if some slot is null.
    if (n > 0 && !eval(RawValue(), &cache->values[0]) && !d.validity.empty() &&
        std::memchr(d.validity.data(), 0, d.validity.size()) != nullptr) {
      ok = false;
    }
    cache->all_ok = ok;
  }
  return cache->all_ok ? cache->values.data() : nullptr;
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

// Calls fn(k, value) for slots [begin, end) with the kind switch hoisted out of the loop.
template <class Fn>
inline void ForEachValue(const ColumnData& d, int64_t begin, int64_t end, Fn&& fn) {
  if (d.indexed) {
    for (int64_t i = begin; i < end; ++i) fn(i, SlotValue(d, i));
    return;
  }
  const bool nullable = !d.validity.empty();
  RawValue v;
  switch (d.kind) {
    case ValueKind::kBinary:
      for (int64_t i = begin; i < end; ++i) {
        fn(i, (nullable && d.validity[i] == 0) ? RawValue() : RawValue::Text(d.StringAt(i)));
      }
      return;
    case ValueKind::kInt64:
      v.kind = RawValue::Kind::kInt;
      for (int64_t i = begin; i < end; ++i) {
        if (nullable && d.validity[i] == 0) {
          fn(i, RawValue());
          continue;
        }
        v.i = d.int64s[i];
        fn(i, v);
      }
      return;
    case ValueKind::kInt32:
      v.kind = RawValue::Kind::kInt;
      for (int64_t i = begin; i < end; ++i) {
        if (nullable && d.validity[i] == 0) {
          fn(i, RawValue());
          continue;
        }
        v.i = d.int32s[i];
        fn(i, v);
      }
      return;
    default:
      for (int64_t i = begin; i < end; ++i) fn(i, SlotValue(d, i));
      return;
  }
}

}  // namespace

RowGroupDecoder::RowGroupDecoder(const ParsePlan* plan)
    : plan_(plan),
      data_(plan->num_slots()),
      float_cache_(1 + plan->num_dense()),
      id_cache_(plan->num_sparse() + 1) {
  columnar_ = plan->filters.empty() && !plan->downsample;
  for (const FeaturePlan& f : plan->sparse) {
    if (f.source2 >= 0 || f.split_sep != 0) columnar_ = false;
  }
}
RowGroupDecoder::~RowGroupDecoder() = default;

Status RowGroupDecoder::DecodeRowGroup(const io::parquet::ParquetFile& file,
                                       const std::vector<int>& file_columns, int row_group) {
  if (file_ != &file) {
    reader_ = std::make_unique<io::parquet::ColumnChunkReader>(&file);
    reader_->set_dictionary_form(true);
    file_ = &file;
  }
  ++generation_;  // the per-entry caches belong to the previous row group
  const int64_t rows = file.row_group_num_rows(row_group);
  for (int slot = 0; slot < plan_->num_slots(); ++slot) {
    // The reader sizes d's vectors per chunk (with headroom); capacity is kept for later row
    // groups.
    ColumnData& d = data_[slot];
    RECTRAIN_RETURN_IF_ERROR(reader_->Read(row_group, file_columns[slot], &d));
    if (data_[slot].num_rows != rows) {
      return DataLossError(file.path() + ": column '" + plan_->columns[plan_->slot_columns[slot]].name +
                           "' (row group " + std::to_string(row_group) + ") has " +
                           std::to_string(data_[slot].num_rows) + " rows, the row group " +
                           std::to_string(rows));
    }
  }
  return OkStatus();
}

bool RowGroupDecoder::EvalColumns(int64_t begin, int64_t end, RowBlock* block) {
  const ParsePlan& plan = *plan_;
  const int64_t n = end - begin;
  block->Reserve(plan, n);
  bool ok = true;
  // A column in dictionary form is evaluated once per distinct value (EntryResults), then each
  // slot takes its entry's result.
  {
    const ColumnData& d = data_[plan.columns[plan.label_column].slot];
    float* out = block->labels.data() - begin;
    auto eval = [&](const RawValue& v, float* o) { return LabelValue(plan, v, o); };
    const float* per_entry =
        d.indexed ? EntryResults(d, generation_, &float_cache_[0], eval) : nullptr;
    if (per_entry) {
      const uint32_t* idx = d.indices.data();
      for (int64_t i = begin; i < end; ++i) out[i] = per_entry[idx[i]];
    } else {
      ForEachValue(d, begin, end, [&](int64_t i, const RawValue& v) { ok &= eval(v, &out[i]); });
    }
  }
  const int nd = plan.num_dense();
  for (int j = 0; j < nd && ok; ++j) {
    const FeaturePlan& f = plan.dense[j];
    const ColumnData& d = data_[plan.columns[f.source].slot];
    float* out = block->dense.data() + j - begin * nd;
    auto eval = [&](const RawValue& v, float* o) { return DenseValue(f, v, o); };
    const float* per_entry =
        d.indexed ? EntryResults(d, generation_, &float_cache_[1 + j], eval) : nullptr;
    if (per_entry) {
      const uint32_t* idx = d.indices.data();
      for (int64_t i = begin; i < end; ++i) out[i * nd] = per_entry[idx[i]];
    } else {
      ForEachValue(d, begin, end, [&](int64_t i, const RawValue& v) { ok &= eval(v, &out[i * nd]); });
    }
  }
  const int ns = plan.num_sparse();
  for (int j = 0; j < ns && ok; ++j) {
    const FeaturePlan& f = plan.sparse[j];
    const ColumnData& d = data_[plan.columns[f.source].slot];
    auto eval = [&](const RawValue& v, uint64_t* id) { return SparseId(f, v, &scratch_, id); };
    const uint64_t* per_entry =
        d.indexed ? EntryResults(d, generation_, &id_cache_[j], eval) : nullptr;
    const uint32_t* idx = d.indices.data();
    if (f.multi) {
      MultiColumn& mc = block->multi[f.multi_index];
      const int64_t max_len = f.max_len > 0 ? f.max_len : INT64_MAX;
      for (int64_t r = begin; r < end && ok; ++r) {
        const int64_t a = d.list_offsets[r];
        const int64_t b = a + std::min(d.list_offsets[r + 1] - a, max_len);
        const size_t start = mc.ids.size();
        if (per_entry) {
          for (int64_t k = a; k < b; ++k) mc.ids.push_back(per_entry[idx[k]]);
        } else {
          ForEachValue(d, a, b, [&](int64_t, const RawValue& v) {
            uint64_t id = 0;
            ok &= eval(v, &id);
            mc.ids.push_back(id);
          });
        }
        if (mc.ids.size() == start) mc.ids.push_back(f.missing_id);
        mc.offsets[r - begin + 1] = static_cast<int32_t>(mc.ids.size());
      }
      continue;
    }
    uint64_t* out = block->ids.data() + j - begin * ns;
    if (per_entry) {
      for (int64_t i = begin; i < end; ++i) out[i * ns] = per_entry[idx[i]];
    } else {
      ForEachValue(d, begin, end, [&](int64_t i, const RawValue& v) { ok &= eval(v, &out[i * ns]); });
    }
  }
  if (ok && plan.has_group) {
    const ColumnData& d = data_[plan.columns[plan.group_column].slot];
    uint64_t* out = block->group.data() - begin;
    auto eval = [&](const RawValue& v, uint64_t* key) {
      *key = HashPremixed(TokenText(v, scratch_.num_a), plan.group_premixed);
      return true;
    };
    const uint64_t* per_entry =
        d.indexed ? EntryResults(d, generation_, &id_cache_[ns], eval) : nullptr;
    if (per_entry) {
      const uint32_t* idx = d.indices.data();
      for (int64_t i = begin; i < end; ++i) out[i] = per_entry[idx[i]];
    } else {
      ForEachValue(d, begin, end, [&](int64_t i, const RawValue& v) { eval(v, &out[i]); });
    }
  }
  if (!ok) return false;
  for (int64_t k = 0; k < n; ++k) block->rel_line[k] = static_cast<int32_t>(k + 1);
  block->rows = n;
  return true;
}

bool RowGroupDecoder::EvalRows(int64_t begin, int64_t end, uint64_t file_key, int64_t first_row,
                               int64_t max_bad_rows, bool keep_raw, RowBlock* block) {
  block->Reserve(*plan_, end - begin);
  // Column at a time (cache-friendly) when no row can be dropped; any bad value redoes the
  // slice row by row, which reports it.
  if (columnar_) {
    if (EvalColumns(begin, end, block)) return true;
    block->Reset();
  }
  int64_t bad = 0;
  for (int64_t r = begin; r < end; ++r) {
    ParquetRow row{data_.data(), r, first_row + (r - begin), file_key};
    if (EvalRow(*plan_, row, r - begin + 1, keep_raw, std::string_view(), &scratch_, block) ==
        EvalResult::kBad) {
      if (++bad > max_bad_rows) return false;
    }
  }
  return true;
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
