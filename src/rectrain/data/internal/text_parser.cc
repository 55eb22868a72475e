#include "rectrain/data/internal/text_parser.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "rectrain/base/random.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/row_eval.h"

namespace rectrain::data::internal {

static_assert(std::endian::native == std::endian::little,
              "HashPremixed loads little-endian words; add a byte swap for big-endian hosts");

namespace {

// Reads one field starting at p (not past end). Sets *fb/*fe to the field's content. For a
// quoted field the unescaped content goes into *scratch and *fb/*fe point into it. Returns the
// position of the delimiter or `end` that terminates the field, or nullptr for a bad quote.
inline const char* ScanField(const char* p, const char* end, char delim, bool quoting,
                             std::string* scratch, const char** fb, const char** fe) {
  if (quoting && p < end && *p == '"') {
    scratch->clear();
    const char* q = p + 1;
    while (true) {
      const char* close = static_cast<const char*>(std::memchr(q, '"', static_cast<size_t>(end - q)));
      if (close == nullptr) return nullptr;  // unterminated
      scratch->append(q, close);
      if (close + 1 < end && close[1] == '"') {  // escaped quote
        scratch->push_back('"');
        q = close + 2;
        continue;
      }
      const char* after = close + 1;
      if (after != end && *after != delim) return nullptr;  // text after the closing quote
      *fb = scratch->data();
      *fe = scratch->data() + scratch->size();
      return after;
    }
  }
  const char* q = p;
  while (q < end && *q != delim) ++q;
  *fb = p;
  *fe = q;
  return q;
}

}  // namespace

std::vector<std::string> SplitHeader(std::string_view line, char delimiter, bool quoting) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> names;
  std::string scratch;
  const char* p = line.data();
  const char* end = p + line.size();
  while (true) {
    const char *fb, *fe;
    const char* next = ScanField(p, end, delimiter, quoting, &scratch, &fb, &fe);
    if (next == nullptr) {  // bad quote: keep the raw rest as one name
      names.emplace_back(p, end);
      break;
    }
    names.emplace_back(fb, fe);
    if (next == end) break;
    p = next + 1;
  }
  return names;
}

std::optional<std::string_view> NthField(std::string_view line, char delimiter, bool quoting, int column,
                                         std::string* scratch) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const char* p = line.data();
  const char* end = p + line.size();
  for (int c = 0;; ++c) {
    const char *fb, *fe;
    const char* next = ScanField(p, end, delimiter, quoting, scratch, &fb, &fe);
    if (next == nullptr) return std::nullopt;
    if (c == column) return std::string_view(fb, static_cast<size_t>(fe - fb));
    if (next == end) return std::nullopt;
    p = next + 1;
  }
}

void RowBlock::Reset() {
  rows = 0;
  bad.clear();
  filtered = 0;
  downsampled = 0;
  for (MultiColumn& m : multi) {
    if (!m.offsets.empty()) m.offsets[0] = 0;
    m.ids.clear();
  }
}

void RowBlock::Reserve(const ParsePlan& plan, int64_t rows_wanted) {
  if (rows_wanted <= capacity) return;
  const int64_t cap = std::max<int64_t>(rows_wanted, capacity * 2);
  labels.resize(cap);
  dense.resize(cap * plan.num_dense());
  ids.resize(cap * plan.num_sparse());
  if (plan.has_group) group.resize(cap);
  rel_line.resize(cap);
  if (static_cast<int>(multi.size()) != plan.num_multi()) {
    multi.resize(plan.num_multi());
    for (MultiColumn& m : multi) {
      m.offsets.assign(1, 0);
      m.ids.clear();
    }
  }
  for (MultiColumn& m : multi) m.offsets.resize(cap + 1);
  capacity = cap;
}

std::string FormatBadRow(const ParsePlan& plan, const BadRow& bad, std::string_view file,
                         int64_t line) {
  const std::string field =
      bad.plan_column >= 0 ? plan.columns[bad.plan_column].name : std::string();
  std::string_view expected;
  switch (bad.kind) {
    case BadRowKind::kColumnCount:
      return errors::WrongColumnCount(file, line, bad.column,
                                      static_cast<int>(plan.columns.size()), bad.found_fields,
                                      plan.layout, bad.text);
    case BadRowKind::kBadQuote:
      return errors::BadQuote(file, line, bad.column, field, bad.text);
    case BadRowKind::kBadDense:
      expected = plan.dense[bad.feature].has_spec ? errors::kExpectedNumber : errors::kExpectedDense;
      break;
    case BadRowKind::kBadLabel:
      expected = plan.label_expected;
      break;
    case BadRowKind::kBadNumber:
      expected = bad.feature < 0 || plan.sparse[bad.feature].hex_id ? errors::kExpectedHexId
                                                                     : errors::kExpectedNumber;
      break;
    case BadRowKind::kBadPair:
      return errors::BadPair(file, line, bad.column, plan.format, bad.text);
    case BadRowKind::kBadWeight:
      return errors::BadWeight(file, line, bad.column, plan.format, field, bad.text);
    case BadRowKind::kUndeclaredField:
      return errors::UndeclaredField(file, line, bad.column, bad.key, bad.text);
    case BadRowKind::kDuplicateKey:
      return errors::DuplicateDenseKey(file, line, bad.column, plan.format, bad.key, bad.text);
  }
  if (plan.format == DataFormat::kParquet) return errors::BadValue(file, line, field, expected, bad.text);
  return errors::BadField(file, line, bad.column, field, expected, bad.text);
}

namespace {

// The fields of one text line, by plan slot (see row_eval.h for the Row contract).
struct TextRow {
  const TextField* fields;
  std::string_view line;
  RawValue Get(int slot) const {
    return RawValue::Text(std::string_view(fields[slot].begin, fields[slot].end - fields[slot].begin));
  }
  bool IsList(int) const { return false; }
  int64_t ListSize(int) const { return 0; }
  RawValue ListElement(int, int64_t) const { return {}; }
  int64_t FieldColumn(int slot) const { return fields[slot].column; }
  uint64_t RowKey() const { return HashPremixed(line, 0); }
};

// The fields of one libsvm / libffm line (see PairFields).
struct PairRow {
  const ParsePlan* plan;
  const PairFields* fields;
  std::string_view line;
  RawValue Get(int slot) const {
    const TextField& t = fields->values[slot];
    if (t.begin == nullptr) return {};
    return RawValue::Text(std::string_view(t.begin, t.end - t.begin));
  }
  bool IsList(int slot) const { return plan->columns[plan->slot_columns[slot]].is_list; }
  int64_t ListSize(int slot) const { return static_cast<int64_t>(fields->lists[slot].size()); }
  RawValue ListElement(int slot, int64_t k) const {
    const TextField& t = fields->lists[slot][k];
    return RawValue::Text(std::string_view(t.begin, t.end - t.begin));
  }
  int64_t FieldColumn(int slot) const {
    if (fields->values[slot].begin != nullptr) return fields->values[slot].column;
    return fields->lists[slot].empty() ? 0 : fields->lists[slot][0].column;
  }
  uint64_t RowKey() const { return HashPremixed(line, 0); }
};

inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Reads the digits of a key at *p (up to ':' or `end`); false if there are none, too many, or
// another character.
inline bool ScanKey(const char** p, const char* end, int64_t* key, const char** kb, const char** ke) {
  const char* q = *p;
  int64_t v = 0;
  *kb = q;
  while (q < end && static_cast<unsigned>(*q - '0') < 10u) {
    // At most 18 digits are accumulated (< 2^63): a longer index is rejected below, and must
    // not overflow first (found by text_reader_fuzzer; LibsvmErrorTest.LongIndexIsABadPair).
    if (q - *kb < 18) v = v * 10 + (*q - '0');
    ++q;
  }
  if (q == *kb || q - *kb > 18) return false;
  *ke = q;
  *key = v;
  *p = q;
  return true;
}

}  // namespace

bool SplitPairLine(const ParsePlan& plan, std::string_view line, PairFields* out, BadRow* bad) {
  static constexpr char kZero[] = "0";
  static constexpr char kOne[] = "1";
  const int nslots = plan.num_slots();
  out->values.assign(static_cast<size_t>(nslots), TextField{});
  if (static_cast<int>(out->lists.size()) != nslots) out->lists.resize(static_cast<size_t>(nslots));
  for (std::vector<TextField>& l : out->lists) l.clear();
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  const char* p = begin;
  while (p < end && IsBlank(*p)) ++p;
  // The label (an empty or commented-out one is reported by EvalRow as a bad label).
  const char* lb = p;
  while (p < end && !IsBlank(*p)) ++p;
  const char* le = p;
  if (lb < le && *lb == '#') le = lb;
  if (le - lb == 2 && lb[1] == '1' && (lb[0] == '+' || lb[0] == '-') &&
      plan.label_transform.steps.empty()) {
    const char* v = lb[0] == '+' ? kOne : kZero;
    out->values[plan.columns[plan.label_column].slot] = TextField{v, v + 1, (lb - begin) + 1};
  } else {
    if (lb < le && *lb == '+') ++lb;  // from_chars reads no '+'
    out->values[plan.columns[plan.label_column].slot] =
        TextField{lb < le ? lb : nullptr, lb < le ? le : nullptr, (lb - begin) + 1};
  }
  if (le == lb && p < end) p = end;  // "# comment" only
  const int64_t nkeys = static_cast<int64_t>(plan.key_column.size());
  while (true) {
    while (p < end && IsBlank(*p)) ++p;
    if (p == end || *p == '#') return true;
    const char* tb = p;
    while (p < end && !IsBlank(*p)) ++p;
    const char* te = p;
    auto fail = [&](BadRowKind kind, int column, int64_t key) {
      bad->kind = kind;
      bad->column = (tb - begin) + 1;
      bad->plan_column = column;
      bad->key = key;
      bad->text.assign(tb, static_cast<size_t>(std::min<ptrdiff_t>(te - tb, 64)));
      return false;
    };
    const char* q = tb;
    int64_t key = 0, unused = 0;
    const char *ib, *ie;
    if (!ScanKey(&q, te, &key, &ib, &ie) || q == te || *q != ':') return fail(BadRowKind::kBadPair, -1, -1);
    ++q;
    if (plan.ffm) {
      if (!ScanKey(&q, te, &unused, &ib, &ie) || q == te || *q != ':') {
        return fail(BadRowKind::kBadPair, -1, -1);
      }
      ++q;
    }
    const char* vb = q;
    if (vb == te) return fail(BadRowKind::kBadPair, -1, -1);
    int column = key < nkeys ? plan.key_column[static_cast<size_t>(key)] : -1;
    if (column < 0) {
      if (plan.ffm) return fail(BadRowKind::kUndeclaredField, -1, key);
      column = plan.bag_column;
    }
    const int slot = plan.columns[column].slot;
    if (plan.columns[column].is_list) {
      if (!(te - vb == 1 && *vb == '1')) {
        double v;
        auto [ptr, ec] = std::from_chars(vb, te, v);
        if (ec != std::errc() || ptr != te || !std::isfinite(v)) return fail(BadRowKind::kBadPair, -1, -1);
        if (v != 1.0) return fail(BadRowKind::kBadWeight, column, key);
      }
      while (ie - ib > 1 && *ib == '0') ++ib;  // "007" and "7" are one index
      out->lists[slot].push_back(TextField{ib, ie, (tb - begin) + 1});
    } else {
      TextField& f = out->values[slot];
      if (f.begin != nullptr) return fail(BadRowKind::kDuplicateKey, column, key);
      f = TextField{vb, te, (vb - begin) + 1};
    }
  }
}

LineParser::LineParser(const ParsePlan* plan)
    : plan_(plan), fields_(plan->num_slots()), scratch_(plan->num_slots()) {}

bool LineParser::ParseLine(std::string_view line, int64_t rel_line, bool keep_raw,
                           RowBlock* block) {
  const ParsePlan& plan = *plan_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (plan.pairs) {
    BadRow bad;
    if (!SplitPairLine(plan, line, &pairs_, &bad)) {
      bad.rel_line = rel_line;
      if (keep_raw) bad.raw_line.assign(line);
      block->bad.push_back(std::move(bad));
      return false;
    }
    return EvalRow(plan, PairRow{plan_, &pairs_, line}, rel_line, keep_raw, line, &eval_scratch_,
                   block) != EvalResult::kBad;
  }
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  const int ncols = static_cast<int>(plan.columns.size());
  const char delim = plan.delimiter;
  const bool quoting = plan.quoting;

  auto reject = [&](BadRow bad) {
    bad.rel_line = rel_line;
    if (keep_raw) bad.raw_line.assign(line);
    block->bad.push_back(std::move(bad));
    return false;
  };
  auto count_error = [&](int found, const char* at) {
    BadRow bad;
    bad.kind = BadRowKind::kColumnCount;
    bad.found_fields = found;
    bad.column = (at - begin) + 1;
    bad.text.assign(line.substr(0, 64));
    return reject(std::move(bad));
  };

  const char* p = begin;
  int col = 0;
  while (true) {
    if (col == ncols) {  // every column read but the line goes on: too many fields
      const int extra = 1 + static_cast<int>(std::count(p, end, delim));
      return count_error(ncols + extra, p);
    }
    const int slot = plan.columns[col].slot;
    const char *fb, *fe;
    const char* next = ScanField(p, end, delim, quoting, slot >= 0 ? &scratch_[slot] : &ignored_,
                                 &fb, &fe);
    if (next == nullptr) {
      BadRow bad;
      bad.kind = BadRowKind::kBadQuote;
      bad.plan_column = col;
      bad.column = (p - begin) + 1;
      bad.text.assign(std::string_view(p, end - p).substr(0, 64));
      return reject(std::move(bad));
    }
    if (slot >= 0) fields_[slot] = TextField{fb, fe, (p - begin) + 1};
    ++col;
    if (next == end) break;
    p = next + 1;
  }
  if (col < ncols) return count_error(col, end);
  EvalScratch& scratch = eval_scratch_;
  return EvalRow(plan, TextRow{fields_.data(), line}, rel_line, keep_raw, line, &scratch, block) !=
         EvalResult::kBad;
}

}  // namespace rectrain::data::internal
