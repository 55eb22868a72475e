#include "rectrain/data/internal/raw_columns.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "rectrain/data/errors.h"

namespace rectrain::data::internal {

using io::parquet::ColumnData;
using io::parquet::PhysicalType;
using io::parquet::ValueKind;

namespace {

// Which uses of each plan column need its exact text, and which read it as a number.
struct Uses {
  std::vector<uint8_t> text, number, label;
};

Uses ColumnUses(const ParsePlan& plan) {
  const size_t n = plan.columns.size();
  Uses u{std::vector<uint8_t>(n, 0), std::vector<uint8_t>(n, 0), std::vector<uint8_t>(n, 0)};
  (plan.label_transform.steps.empty() ? u.label : u.number)[plan.label_column] = 1;
  for (const FeaturePlan& f : plan.dense) u.number[f.source] = 1;
  for (const FeaturePlan& f : plan.sparse) {
    if (f.source2 >= 0) {
      u.text[f.source] = u.text[f.source2] = 1;
    } else {
      (f.numeric ? u.number : u.text)[f.source] = 1;
    }
  }
  if (plan.has_group) u.text[plan.group_column] = 1;
  for (const FilterPlan& fp : plan.filters) u.text[fp.column] = 1;
  return u;
}

int GiveSlot(ParsePlan* plan, int col) {
  ColumnPlan& c = plan->columns[col];
  if (c.slot < 0) {
    c.slot = plan->num_slots();
    plan->slot_columns.push_back(col);
  }
  return c.slot;
}

bool IsIntegerText(std::string_view t, int64_t* v) {
  if (t.empty()) return false;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  if (ec != std::errc() || p != t.data() + t.size()) return false;
  // "-0" parses as 0, but the reader makes -0.0 of its text: keep such a column DOUBLE.
  return !(*v == 0 && t[0] == '-');
}

template <class T>
void Push(io::parquet::PodVector<T>* v, T x) {
  v->push_back(x);
}

// Appends entry `e` of `src` (same kind) to `dst`'s values.
void AppendEntry(const ColumnData& src, int64_t e, ColumnData* dst) {
  switch (src.kind) {
    case ValueKind::kBool: Push(&dst->bools, src.bools[e]); break;
    case ValueKind::kInt32: Push(&dst->int32s, src.int32s[e]); break;
    case ValueKind::kInt64: Push(&dst->int64s, src.int64s[e]); break;
    case ValueKind::kFloat: Push(&dst->floats, src.floats[e]); break;
    case ValueKind::kDouble: Push(&dst->doubles, src.doubles[e]); break;
    case ValueKind::kBinary: {
      const std::string_view s = src.EntryString(e);
      const size_t at = dst->bytes.size();
      dst->bytes.resize(at + s.size());
      if (!s.empty()) std::memcpy(dst->bytes.data() + at, s.data(), s.size());
      dst->offsets.push_back(static_cast<int64_t>(dst->bytes.size()));
      break;
    }
  }
}

// Empty validity vectors when nothing is null (the writer's fast path).
void DropAllValid(ColumnData* d) {
  if (std::find(d->validity.begin(), d->validity.end(), 0) == d->validity.end()) d->validity.clear();
  if (std::find(d->list_validity.begin(), d->list_validity.end(), 0) == d->list_validity.end()) {
    d->list_validity.clear();
  }
}

void Reset(ColumnData* d, ValueKind kind, bool is_list) {
  d->Clear();
  d->kind = kind;
  d->is_list = is_list;
  if (kind == ValueKind::kBinary) d->offsets.push_back(0);
  if (is_list) d->list_offsets.push_back(0);
}

// Room in `d` for as much as `like` holds (row groups are about the same size: growing the
// buffers by doubling copies them and touches fresh pages).
void ReserveLike(ColumnData* d, const ColumnData& like) {
  d->bytes.reserve(like.bytes.size());
  d->offsets.reserve(like.offsets.size());
  d->validity.reserve(std::max(like.validity.size(), like.offsets.size()));
  d->list_offsets.reserve(like.list_offsets.size());
}

}  // namespace

namespace {

// Column `name` of a Parquet input as a kTyped column, or nullopt (with a note) when the writer
// cannot hold it.
std::optional<RawColumn> TypedColumn(const io::parquet::ParquetFile& file, const std::string& name,
                                     std::vector<std::string>* notes) {
  const Result<int> leaf = file.FindColumn(name);
  const io::parquet::ColumnSchema* s = leaf.ok() ? &file.schema()[*leaf] : nullptr;
  if (s == nullptr || !s->unsupported_reason.empty()) {
    notes->push_back(name + " (not written: " + (s ? s->unsupported_reason : std::string("not a column")) + ")");
    return std::nullopt;
  }
  RawColumn c;
  c.name = name;
  c.is_list = s->is_list;
  c.kind = RawKind::kTyped;
  c.source = io::parquet::WriteColumnLike(*s);
  // INTEGER(32/64, signed) on INT32/INT64 says nothing more than the physical type.
  const bool plain_int = s->logical_type == io::parquet::LogicalType::kInteger && s->int_signed &&
                         s->int_bit_width == (s->physical_type == PhysicalType::kInt32 ? 32 : 64);
  if (s->logical_type != io::parquet::LogicalType::kNone && s->logical_type != io::parquet::LogicalType::kString &&
      !plain_int) {
    notes->push_back(name + " (written as plain " + std::string(PhysicalTypeName(c.source.type)) + ": its " +
                     std::string(io::parquet::LogicalTypeName(s->logical_type)) + " annotation is not kept)");
  }
  return c;
}

}  // namespace

std::vector<RawColumn> PlanRawColumns(ParsePlan* plan, const io::parquet::ParquetFile* parquet,
                                      std::vector<std::string>* notes) {
  const Uses uses = ColumnUses(*plan);
  std::vector<RawColumn> out;
  for (int col = 0; col < static_cast<int>(plan->columns.size()); ++col) {
    RawColumn c;
    if (parquet != nullptr) {
      std::optional<RawColumn> typed = TypedColumn(*parquet, plan->columns[col].name, notes);
      if (!typed) continue;
      c = std::move(*typed);
    } else {
      c.name = plan->columns[col].name;
      c.is_list = plan->columns[col].is_list;
      const bool text = c.is_list || uses.text[col] || (!uses.number[col] && !uses.label[col]);
      c.kind = text ? RawKind::kString : uses.number[col] ? RawKind::kNumber : RawKind::kLabel;
    }
    c.slot = GiveSlot(plan, col);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<RawColumn> ParquetRawColumns(const io::parquet::ParquetFile& file, const std::vector<std::string>& names,
                                         std::vector<std::string>* notes) {
  std::vector<RawColumn> out;
  for (const std::string& name : names) {
    std::optional<RawColumn> c = TypedColumn(file, name, notes);
    if (!c) continue;
    c->slot = static_cast<int>(out.size());
    out.push_back(std::move(*c));
  }
  return out;
}

RawRowGroup::RawRowGroup(const std::vector<RawColumn>* columns) : columns_(columns), buffers_(columns->size()) {
  for (size_t i = 0; i < columns->size(); ++i) {
    const RawColumn& c = (*columns)[i];
    const ValueKind kind = c.kind == RawKind::kTyped ? io::parquet::ValueKindOf(c.source.type) : ValueKind::kBinary;
    Reset(&buffers_[i], kind, c.kind == RawKind::kTyped ? c.source.is_list : c.is_list);
  }
}

void RawRowGroup::AppendText(ColumnData* d, const char* begin, const char* end) {
  const bool present = begin != nullptr && end > begin;
  if (present) {
    // resize + memcpy: vector::insert with this allocator constructs byte by byte.
    const size_t at = d->bytes.size();
    d->bytes.resize(at + static_cast<size_t>(end - begin));
    std::memcpy(d->bytes.data() + at, begin, static_cast<size_t>(end - begin));
  }
  d->offsets.push_back(static_cast<int64_t>(d->bytes.size()));
  d->validity.push_back(present ? 1 : 0);
  bytes_ += (present ? end - begin : 0) + 9;
}

void RawRowGroup::AddText(const TextField* fields, RowOrigin origin) {
  for (size_t i = 0; i < columns_->size(); ++i) {
    const TextField& f = fields[(*columns_)[i].slot];
    ColumnData& d = buffers_[i];
    AppendText(&d, f.begin, f.end);
    ++d.num_rows;
  }
  origins_.push_back(origin);
}

void RawRowGroup::AddPairs(const PairFields& pairs, RowOrigin origin) {
  for (size_t i = 0; i < columns_->size(); ++i) {
    const RawColumn& c = (*columns_)[i];
    ColumnData& d = buffers_[i];
    if (c.is_list) {
      for (const TextField& f : pairs.lists[c.slot]) AppendText(&d, f.begin, f.end);
      d.list_offsets.push_back(static_cast<int64_t>(d.offsets.size()) - 1);
      d.list_validity.push_back(1);
    } else {
      const TextField& f = pairs.values[c.slot];
      AppendText(&d, f.begin, f.end);
    }
    ++d.num_rows;
  }
  origins_.push_back(origin);
}

void RawRowGroup::AddParquet(const std::vector<ColumnData>& slots, int64_t row, RowOrigin origin) {
  for (size_t i = 0; i < columns_->size(); ++i) {
    const ColumnData& src = slots[(*columns_)[i].slot];
    ColumnData& d = buffers_[i];
    int64_t a = row, b = row + 1;
    if (src.is_list) {
      a = src.list_offsets[row];
      b = src.list_offsets[row + 1];
      d.list_validity.push_back(src.IsNullList(row) ? 0 : 1);
    }
    for (int64_t s = a; s < b; ++s) {
      const bool null = src.IsNull(s);
      // A null slot holds the null entry (0 / empty), which AppendEntry copies as the placeholder.
      AppendEntry(src, src.Entry(s), &d);
      d.validity.push_back(null ? 0 : 1);
      bytes_ += 9 + (src.kind == ValueKind::kBinary ? static_cast<int64_t>(src.StringAt(s).size()) : 0);
    }
    if (src.is_list) d.list_offsets.push_back(static_cast<int64_t>(d.validity.size()));
    ++d.num_rows;
  }
  origins_.push_back(origin);
}

void RawRowGroup::AddParquetRows(const std::vector<ColumnData>& slots, int64_t begin, int64_t end, RowOrigin first) {
  for (size_t i = 0; i < columns_->size(); ++i) {
    const ColumnData& src = slots[(*columns_)[i].slot];
    ColumnData& d = buffers_[i];
    int64_t a = begin, b = end;  // slots
    if (src.is_list) {
      a = src.list_offsets[begin];
      b = src.list_offsets[end];
      const int64_t shift = static_cast<int64_t>(d.validity.size()) - a;
      for (int64_t r = begin; r < end; ++r) {
        d.list_offsets.push_back(src.list_offsets[r + 1] + shift);
        d.list_validity.push_back(src.IsNullList(r) ? 0 : 1);
      }
    }
    const size_t at = d.validity.size();
    d.validity.resize(at + static_cast<size_t>(b - a));
    if (src.validity.empty()) {
      std::memset(d.validity.data() + at, 1, static_cast<size_t>(b - a));
    } else {
      std::memcpy(d.validity.data() + at, src.validity.data() + a, static_cast<size_t>(b - a));
    }
    if (src.kind == ValueKind::kBinary) {
      const int64_t from = src.offsets[a], to = src.offsets[b];
      const int64_t shift = static_cast<int64_t>(d.bytes.size()) - from;
      const size_t bytes_at = d.bytes.size();
      d.bytes.resize(bytes_at + static_cast<size_t>(to - from));
      if (to > from) std::memcpy(d.bytes.data() + bytes_at, src.bytes.data() + from, static_cast<size_t>(to - from));
      for (int64_t s = a; s < b; ++s) d.offsets.push_back(src.offsets[s + 1] + shift);
      bytes_ += to - from;
    } else {
      for (int64_t s = a; s < b; ++s) AppendEntry(src, s, &d);
    }
    bytes_ += 9 * (b - a);
    d.num_rows += end - begin;
  }
  for (int64_t r = begin; r < end; ++r) origins_.push_back(RowOrigin{first.file, first.line + (r - begin)});
}

Status RawRowGroup::Finish(bool double_numbers, const std::vector<std::string>& files,
                           std::vector<std::optional<PhysicalType>>* types, std::vector<ColumnData>* out) {
  out->resize(columns_->size());
  types->resize(columns_->size());
  for (size_t i = 0; i < columns_->size(); ++i) {
    const RawColumn& c = (*columns_)[i];
    ColumnData& in = buffers_[i];
    ColumnData& o = (*out)[i];
    if (c.kind == RawKind::kString || c.kind == RawKind::kTyped) {
      DropAllValid(&in);
      std::swap(in, o);
      Reset(&in, o.kind, o.is_list);
      ReserveLike(&in, o);
      continue;
    }
    const int64_t rows = in.num_rows;
    std::optional<PhysicalType>& type = (*types)[i];
    if (c.kind == RawKind::kLabel) type = PhysicalType::kInt32;
    if (!type) {
      type = PhysicalType::kInt64;
      int64_t v;
      for (int64_t r = 0; r < rows && !double_numbers; ++r) {
        if (in.validity[r] && !IsIntegerText(in.StringAt(r), &v)) {
          type = PhysicalType::kDouble;
          break;
        }
      }
      if (double_numbers) type = PhysicalType::kDouble;
    }
    Reset(&o, io::parquet::ValueKindOf(*type), false);
    o.num_rows = rows;
    o.validity.assign(in.validity.begin(), in.validity.end());
    for (int64_t r = 0; r < rows; ++r) {
      const std::string_view t = in.StringAt(r);
      const bool present = in.validity[r] != 0;
      bool ok = true;
      if (*type == PhysicalType::kInt32) {
        ok = !present || t == "0" || t == "1";
        o.int32s.push_back(present && t == "1" ? 1 : 0);
      } else if (*type == PhysicalType::kInt64) {
        int64_t v = 0;
        ok = !present || IsIntegerText(t, &v);
        o.int64s.push_back(v);
      } else {
        double v = 0;
        if (present) {
          const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
          ok = ec == std::errc() && p == t.data() + t.size() && std::isfinite(v);
        }
        o.doubles.push_back(v);
      }
      if (!ok) {
        const RowOrigin& at = origins_[r];
        return InvalidArgumentError(
            files[at.file] + ":" + std::to_string(at.line) + ": column " + c.name + ": \"" +
            errors::Snippet(t) + "\" is not " +
            (*type == PhysicalType::kInt64
                 ? "an integer, but the column is written as INT64 (its first row group held only integers); "
                   "convert with --numbers double to write every numeric column as DOUBLE"
                 : "a number the reader accepts (internal error: the row passed validation)"));
      }
    }
    DropAllValid(&o);
    const size_t text_bytes = in.bytes.size();
    Reset(&in, ValueKind::kBinary, false);
    in.bytes.reserve(text_bytes);
  }
  origins_.clear();
  bytes_ = 0;
  return OkStatus();
}

std::vector<io::parquet::WriteColumn> WriteColumnsOf(const std::vector<RawColumn>& columns,
                                                     const std::vector<std::optional<PhysicalType>>& types) {
  std::vector<io::parquet::WriteColumn> out;
  for (size_t i = 0; i < columns.size(); ++i) {
    const RawColumn& c = columns[i];
    if (c.kind == RawKind::kTyped) {
      out.push_back(c.source);
      continue;
    }
    io::parquet::WriteColumn w{.name = c.name, .is_list = c.is_list};
    if (c.kind == RawKind::kString) {
      w.type = PhysicalType::kByteArray;
      w.utf8 = true;
    } else {
      w.type = i < types.size() && types[i] ? *types[i] : PhysicalType::kDouble;
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace rectrain::data::internal
