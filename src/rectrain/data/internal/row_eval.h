// rectrain/data/internal/row_eval.h (internal to data/): evaluates one row of raw field values
// through a ParsePlan (filters, label, dense and sparse features with their transforms, group
// key, downsampling) into a RowBlock. Shared by the text parser and the Parquet decoder, so that
// the same values give the same Batch row from either format.
//
// A Row type provides:
//   RawValue Get(int slot) const;                 // the field (kMissing for empty/null)
//   bool IsList(int slot) const;                  // a Parquet list column
//   int64_t ListSize(int slot) const;             // list elements of this row (0 for null)
//   RawValue ListElement(int slot, int64_t k) const;
//   int64_t FieldColumn(int slot) const;          // 1-based byte column for messages (0: none)
//   uint64_t RowKey() const;                      // identifies the row (downsampling)
// Thread safety: stateless functions; the scratch belongs to the calling thread.
#pragma once

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "rectrain/base/random.h"
#include "rectrain/data/internal/text_parser.h"

namespace rectrain::data::internal {

struct RawValue {
  enum class Kind : uint8_t { kMissing, kText, kInt, kDouble, kBool };
  Kind kind = Kind::kMissing;
  std::string_view text;
  int64_t i = 0;
  double d = 0;

  static RawValue Text(std::string_view t) {
    RawValue v;
    v.kind = t.empty() ? Kind::kMissing : Kind::kText;
    v.text = t;
    return v;
  }
};

enum class EvalResult : uint8_t { kOk, kBad, kFiltered, kDownsampled };


// Text form of a value: the text itself, an integer's decimal digits, a double's shortest
// round-trip form, "true"/"false". `buf` holds at least 32 bytes.
inline std::string_view TokenText(const RawValue& v, char* buf) {
  switch (v.kind) {
    case RawValue::Kind::kMissing:
      return {};
    case RawValue::Kind::kText:
      return v.text;
    case RawValue::Kind::kInt: {
      auto r = std::to_chars(buf, buf + 32, v.i);
      return {buf, static_cast<size_t>(r.ptr - buf)};
    }
    case RawValue::Kind::kDouble: {
      auto r = std::to_chars(buf, buf + 32, v.d);
      return {buf, static_cast<size_t>(r.ptr - buf)};
    }
    case RawValue::Kind::kBool:
      return v.i ? std::string_view("true") : std::string_view("false");
  }
  return {};
}

// A number's token after numeric steps: integers (|x| < 1e15) as digits, else shortest form.
inline std::string_view NumberToken(double x, char* buf) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) {
    auto r = std::to_chars(buf, buf + 32, static_cast<int64_t>(x));
    return {buf, static_cast<size_t>(r.ptr - buf)};
  }
  auto r = std::to_chars(buf, buf + 32, x);
  return {buf, static_cast<size_t>(r.ptr - buf)};
}

// Parses a finite number from a non-missing value; false if it is not one.
inline bool NumberOf(const RawValue& v, double* out) {
  switch (v.kind) {
    case RawValue::Kind::kText: {
      auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), *out);
      return ec == std::errc() && p == v.text.data() + v.text.size() && std::isfinite(*out);
    }
    case RawValue::Kind::kInt:
    case RawValue::Kind::kBool:
      *out = static_cast<double>(v.i);
      return true;
    case RawValue::Kind::kDouble:
      *out = v.d;
      return std::isfinite(v.d);
    case RawValue::Kind::kMissing:
      return false;
  }
  return false;
}

inline uint64_t FoldId(const FeaturePlan& f, uint64_t id) { return f.hash_mod ? id % f.hash_mod : id; }

// Exactly 16 hex digits (either case) -> the id they spell; false otherwise (step hex_id).
inline bool ParseHexId(std::string_view t, uint64_t* id) {
  if (t.size() != 16) return false;
  uint64_t v = 0;
  for (const char c : t) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      d = static_cast<unsigned>((c | 0x20) - 'a' + 10);
    } else {
      return false;
    }
    v = v << 4 | d;
  }
  *id = v;
  return true;
}

// The id of one (non-list) value of sparse feature f; false if a numeric feature's value is not
// a number.
[[gnu::always_inline]] inline bool SparseId(const FeaturePlan& f, const RawValue& v, EvalScratch* s, uint64_t* id) {
  if (f.hex_id) [[unlikely]] {
    if (v.kind == RawValue::Kind::kMissing) {
      *id = f.missing_id;
      return true;
    }
    uint64_t raw;
    if (!ParseHexId(TokenText(v, s->num_a), &raw)) return false;
    *id = FoldId(f, raw);
    return true;
  }
  if (f.numeric) {
    double x;
    if (v.kind == RawValue::Kind::kMissing) {
      if (!f.has_fill) {
        *id = f.missing_id;
        return true;
      }
      x = f.fill;
    } else if (!NumberOf(v, &x)) {
      return false;
    }
    *id = FoldId(f, HashPremixed(NumberToken(f.Eval(x), s->num_a), f.premixed));
    return true;
  }
  if (v.kind == RawValue::Kind::kText) {
    *id = FoldId(f, HashPremixed(v.text, f.premixed));
  } else if (v.kind == RawValue::Kind::kMissing) {
    *id = f.missing_id;
  } else {
    *id = FoldId(f, HashPremixed(TokenText(v, s->num_a), f.premixed));
  }
  return true;
}

// Dense value of f from v; false if v is not a number.
[[gnu::always_inline]] inline bool DenseValue(const FeaturePlan& f, const RawValue& v, float* out) {
  switch (v.kind) {
    case RawValue::Kind::kMissing:
      *out = f.missing_value;
      return true;
    case RawValue::Kind::kText: {
      // Fast path: a small non-negative decimal integer, transformed by table lookup.
      const char* q = v.text.data();
      const char* e = q + v.text.size();
      uint32_t k = 0;
      while (q < e && static_cast<unsigned>(*q - '0') < 10u &&
             k < static_cast<uint32_t>(FeaturePlan::kIntTableSize)) {
        k = k * 10 + static_cast<unsigned>(*q - '0');
        ++q;
      }
      if (q == e && k < static_cast<uint32_t>(FeaturePlan::kIntTableSize)) {
        *out = f.int_table[k];
        return true;
      }
      double x;
      if (!NumberOf(v, &x)) return false;
      *out = static_cast<float>(f.Eval(x));
      return true;
    }
    case RawValue::Kind::kInt:
    case RawValue::Kind::kBool:
      if (v.i >= 0 && v.i < FeaturePlan::kIntTableSize) {
        *out = f.int_table[v.i];
      } else {
        *out = static_cast<float>(f.Eval(static_cast<double>(v.i)));
      }
      return true;
    case RawValue::Kind::kDouble:
      if (!std::isfinite(v.d)) return false;
      *out = static_cast<float>(f.Eval(v.d));
      return true;
  }
  return false;
}

// Label in {0, 1}; false otherwise.
inline bool LabelValue(const ParsePlan& plan, const RawValue& v, float* out) {
  if (plan.label_transform.steps.empty()) {
    switch (v.kind) {
      case RawValue::Kind::kText:
        if (v.text.size() == 1 && (v.text[0] == '0' || v.text[0] == '1')) {
          *out = v.text[0] == '1' ? 1.0f : 0.0f;
          return true;
        }
        return false;
      case RawValue::Kind::kInt:
      case RawValue::Kind::kBool:
        if (v.i == 0 || v.i == 1) {
          *out = static_cast<float>(v.i);
          return true;
        }
        return false;
      case RawValue::Kind::kDouble:
        if (v.d == 0.0 || v.d == 1.0) {
          *out = static_cast<float>(v.d);
          return true;
        }
        return false;
      case RawValue::Kind::kMissing:
        return false;
    }
    return false;
  }
  double x;
  if (!NumberOf(v, &x)) return false;
  x = ApplyNumericSteps(plan.label_transform, 0, plan.label_transform.steps.size(), x, FeatureStats{});
  if (x != 0.0 && x != 1.0) return false;
  *out = static_cast<float>(x);
  return true;
}

template <class Row>
EvalResult EvalRow(const ParsePlan& plan, const Row& row, int64_t rel_line, bool keep_raw,
                   std::string_view raw_line, EvalScratch* scratch, RowBlock* block) {
  const int64_t r = block->rows;
  if (r >= block->capacity) block->Reserve(plan, r + 1);

  for (const FilterPlan& fp : plan.filters) {
    const RawValue v = row.Get(plan.columns[fp.column].slot);
    bool keep;
    if (fp.filter.kind == RowFilter::Kind::kNotNull) {
      keep = v.kind != RawValue::Kind::kMissing;
    } else {
      const std::string_view t = TokenText(v, scratch->num_a);
      const bool in = std::binary_search(fp.filter.values.begin(), fp.filter.values.end(), t);
      keep = (fp.filter.kind == RowFilter::Kind::kIn) == in;
    }
    if (!keep) {
      ++block->filtered;
      return EvalResult::kFiltered;
    }
  }

  // The first bad field in column order is reported (a stable choice across formats).
  int bad_col = INT_MAX;
  BadRowKind bad_kind = BadRowKind::kBadDense;
  int bad_feature = -1;
  RawValue bad_value;
  auto fail = [&](BadRowKind kind, int col, const RawValue& v, int feature) {
    if (col >= bad_col) return;
    bad_col = col;
    bad_kind = kind;
    bad_feature = feature;
    bad_value = v;
  };

  float label = 0;
  {
    const RawValue v = row.Get(plan.columns[plan.label_column].slot);
    if (LabelValue(plan, v, &label)) {
      if (plan.downsample && label == 0.0f &&
          Mix64(row.RowKey() ^ plan.downsample_seed) > plan.keep_negative_below) {
        ++block->downsampled;
        return EvalResult::kDownsampled;
      }
      block->labels[r] = label;
    } else {
      fail(BadRowKind::kBadLabel, plan.label_column, v, -1);
    }
  }
  const int nd = plan.num_dense();
  float* dense_out = block->dense.data() + r * nd;
  for (int j = 0; j < nd; ++j) {
    const FeaturePlan& f = plan.dense[j];
    const RawValue v = row.Get(plan.columns[f.source].slot);
    if (!DenseValue(f, v, &dense_out[j])) fail(BadRowKind::kBadDense, f.source, v, j);
  }
  const int ns = plan.num_sparse();
  uint64_t* ids_out = block->ids.data() + r * ns;
  for (int j = 0; j < ns; ++j) {
    const FeaturePlan& f = plan.sparse[j];
    const int slot = plan.columns[f.source].slot;
    if (f.source2 >= 0) {  // cross
      const RawValue a = row.Get(slot);
      const RawValue b = row.Get(plan.columns[f.source2].slot);
      if (a.kind == RawValue::Kind::kMissing || b.kind == RawValue::Kind::kMissing) {
        ids_out[j] = f.missing_id;
      } else {
        scratch->cross.assign(TokenText(a, scratch->num_a));
        scratch->cross.push_back('\x1f');
        scratch->cross.append(TokenText(b, scratch->num_b));
        ids_out[j] = FoldId(f, HashPremixed(scratch->cross, f.premixed));
      }
      continue;
    }
    if (!f.multi) {
      const RawValue v = row.Get(slot);
      if (!SparseId(f, v, scratch, &ids_out[j])) fail(BadRowKind::kBadNumber, f.source, v, j);
      continue;
    }
    MultiColumn& mc = block->multi[f.multi_index];
    const size_t start = mc.ids.size();
    const int64_t max_len = f.max_len > 0 ? f.max_len : INT64_MAX;
    if (row.IsList(slot)) {
      const int64_t n = std::min(row.ListSize(slot), max_len);
      for (int64_t k = 0; k < n; ++k) {
        const RawValue v = row.ListElement(slot, k);
        uint64_t id;
        if (!SparseId(f, v, scratch, &id)) {
          fail(BadRowKind::kBadNumber, f.source, v, j);
          break;
        }
        mc.ids.push_back(id);
      }
    } else {
      const RawValue v = row.Get(slot);
      if (v.kind != RawValue::Kind::kMissing) {
        char buf[32];
        const std::string_view text = TokenText(v, buf);
        const char* p = text.data();
        const char* end = p + text.size();
        for (int64_t k = 0; k < max_len; ++k) {
          const char* q = f.split_sep ? static_cast<const char*>(std::memchr(p, f.split_sep, end - p))
                                      : nullptr;
          if (q == nullptr) q = end;
          uint64_t id;
          const RawValue piece = RawValue::Text(std::string_view(p, q - p));
          if (!SparseId(f, piece, scratch, &id)) {
            fail(BadRowKind::kBadNumber, f.source, v, j);
            break;
          }
          mc.ids.push_back(id);
          if (q == end) break;
          p = q + 1;
        }
      }
    }
    if (mc.ids.size() == start) mc.ids.push_back(f.missing_id);  // null or empty: the missing id
  }
  if (plan.has_group) {
    const RawValue v = row.Get(plan.columns[plan.group_column].slot);
    if (!plan.group_hex) {
      block->group[r] = HashPremixed(TokenText(v, scratch->num_a), plan.group_premixed);
    } else if (!ParseHexId(TokenText(v, scratch->num_a), &block->group[r])) {
      fail(BadRowKind::kBadNumber, plan.group_column, v, -1);
    }
  }
  if (bad_col != INT_MAX) {
    for (int m = 0; m < plan.num_multi(); ++m) {
      MultiColumn& mc = block->multi[m];
      mc.ids.resize(static_cast<size_t>(mc.offsets[r]));
    }
    BadRow bad;
    bad.kind = bad_kind;
    bad.plan_column = bad_col;
    bad.feature = bad_feature;
    bad.column = row.FieldColumn(plan.columns[bad_col].slot);
    bad.text.assign(TokenText(bad_value, scratch->num_b).substr(0, 64));
    bad.rel_line = rel_line;
    if (keep_raw) bad.raw_line.assign(raw_line);
    block->bad.push_back(std::move(bad));
    return EvalResult::kBad;
  }
  for (int m = 0; m < plan.num_multi(); ++m) {
    MultiColumn& mc = block->multi[m];
    mc.offsets[r + 1] = static_cast<int32_t>(mc.ids.size());
  }
  block->rel_line[r] = static_cast<int32_t>(rel_line);
  block->rows = r + 1;
  return EvalResult::kOk;
}

}  // namespace rectrain::data::internal
