#include "rectrain/data/internal/text_parser.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "rectrain/base/random.h"
#include "rectrain/data/errors.h"

namespace rectrain::data::internal {

static_assert(std::endian::native == std::endian::little,
              "HashPremixed loads little-endian words; add a byte swap for big-endian hosts");

uint64_t PremixSeed(uint64_t seed) { return 0xcbf29ce484222325ULL ^ Mix64(seed); }

uint64_t HashPremixed(std::string_view bytes, uint64_t premixed) {
  // Must equal rectrain::HashBytes (base/random.h) bit for bit: ids are stored in checkpoints.
  uint64_t h = premixed;
  const char* p = bytes.data();
  size_t n = bytes.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  for (int b = 0; i < n; ++i, ++b) {
    tail |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * b);
  }
  h = (h ^ tail ^ (uint64_t(n) << 56)) * 0x100000001b3ULL;
  return Mix64(h);
}

float ParsePlan::Transform(double x) const {
  if (x < transform.clip_min) x = transform.clip_min;
  if (transform.clip_max > transform.clip_min && x > transform.clip_max) x = transform.clip_max;
  if (transform.log1p) x = std::log1p(std::max(x, 0.0));
  return static_cast<float>(x);
}

namespace {

std::string RangeName(char prefix, int n) {
  if (n == 1) return std::string(1, prefix) + "1";
  return std::string(1, prefix) + "1.." + prefix + std::to_string(n);
}

std::string Layout(const std::vector<ColumnPlan>& cols) {
  std::string s;
  const size_t n = cols.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > 8 && i == 4) {
      s += ", ...";
      i = n - 2;
      continue;
    }
    if (!s.empty()) s += ", ";
    s += cols[i].name;
  }
  return s;
}

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

Result<ParsePlan> BuildPlan(const DataConfig& config,
                            const std::vector<std::string>& header_columns) {
  const SchemaConfig& schema = config.schema;
  ParsePlan plan;
  plan.format = schema.format;
  if (schema.format == "criteo") {
    if (schema.criteo_dense < 0 || schema.criteo_sparse < 0 ||
        schema.criteo_dense + schema.criteo_sparse == 0 ||
        schema.criteo_dense + schema.criteo_sparse > 100000) {
      return InvalidArgumentError(
          "data.schema.criteo_dense and criteo_sparse must be >= 0 with a positive sum (got " +
          std::to_string(schema.criteo_dense) + " and " + std::to_string(schema.criteo_sparse) + ")");
    }
    if (schema.header) {
      return InvalidArgumentError(
          "data.schema.header applies to format csv or tsv; criteo files have no header");
    }
    plan.delimiter = '\t';
    plan.quoting = false;
    plan.columns.push_back({"label", ColumnRole::kLabel, 0, false});
    for (int i = 0; i < schema.criteo_dense; ++i) {
      plan.columns.push_back({"I" + std::to_string(i + 1), ColumnRole::kDense, i, false});
    }
    for (int i = 0; i < schema.criteo_sparse; ++i) {
      plan.columns.push_back({"C" + std::to_string(i + 1), ColumnRole::kSparse, i, false});
    }
    plan.layout = "label";
    if (schema.criteo_dense > 0) plan.layout += ", " + RangeName('I', schema.criteo_dense);
    if (schema.criteo_sparse > 0) plan.layout += ", " + RangeName('C', schema.criteo_sparse);
  } else if (schema.format == "csv" || schema.format == "tsv") {
    plan.delimiter = schema.format == "tsv" ? '\t' : (schema.delimiter == '\t' ? ',' : schema.delimiter);
    if (plan.delimiter == '\n' || plan.delimiter == '\r' || plan.delimiter == '"') {
      return InvalidArgumentError("data.schema.delimiter cannot be a newline or a quote");
    }
    plan.quoting = true;
    plan.header = schema.header;
    std::vector<std::string> names;
    if (schema.header) {
      names = header_columns;
      if (!schema.columns.empty() && schema.columns != names) {
        return InvalidArgumentError(
            "data.schema.columns does not match the file header; drop data.schema.columns "
            "when data.schema.header is true");
      }
    } else {
      names = schema.columns;
      if (names.empty()) {
        return InvalidArgumentError(
            "format " + schema.format +
            " needs the column names: set data.schema.header: true (first line names the "
            "columns) or data.schema.columns: [..]");
      }
    }
    std::unordered_map<std::string, int> by_name;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!by_name.emplace(names[i], static_cast<int>(i)).second) {
        return InvalidArgumentError("column \"" + names[i] + "\" appears twice in the " +
                                    (schema.header ? "header" : "data.schema.columns"));
      }
      plan.columns.push_back({names[i], ColumnRole::kIgnore, -1, false});
    }
    const std::string where = schema.header ? "the header" : "data.schema.columns";
    auto find = [&](const std::string& name, const std::string& key) -> Result<int> {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        return InvalidArgumentError(key + " names column \"" + name + "\", which is not in " +
                                    where + " (columns: " + Layout(plan.columns) + ")");
      }
      return it->second;
    };
    auto assign = [&](int col, ColumnRole role, int index, const std::string& key) -> Status {
      if (plan.columns[col].role != ColumnRole::kIgnore) {
        return InvalidArgumentError(key + ": column \"" + plan.columns[col].name +
                                    "\" already has another role (label, dense or sparse)");
      }
      plan.columns[col].role = role;
      plan.columns[col].index = index;
      return OkStatus();
    };
    RECTRAIN_ASSIGN_OR_RETURN(int label_col, find(schema.label, "data.schema.label"));
    RECTRAIN_RETURN_IF_ERROR(assign(label_col, ColumnRole::kLabel, 0, "data.schema.label"));
    for (size_t i = 0; i < schema.dense.size(); ++i) {
      RECTRAIN_ASSIGN_OR_RETURN(int c, find(schema.dense[i], "data.schema.dense"));
      RECTRAIN_RETURN_IF_ERROR(assign(c, ColumnRole::kDense, static_cast<int>(i), "data.schema.dense"));
    }
    for (size_t i = 0; i < schema.sparse.size(); ++i) {
      RECTRAIN_ASSIGN_OR_RETURN(int c, find(schema.sparse[i], "data.schema.sparse"));
      RECTRAIN_RETURN_IF_ERROR(assign(c, ColumnRole::kSparse, static_cast<int>(i), "data.schema.sparse"));
    }
    if (schema.dense.empty() && schema.sparse.empty()) {
      return InvalidArgumentError("format " + schema.format +
                                  ": declare the features in data.schema.dense and/or "
                                  "data.schema.sparse");
    }
    plan.layout = Layout(plan.columns);
  } else {
    return InvalidArgumentError("unknown data.schema.format \"" + schema.format +
                                "\"; expected criteo, csv or tsv");
  }
  if (!schema.group_key.empty()) {
    bool found = false;
    for (ColumnPlan& c : plan.columns) {
      if (c.name == schema.group_key) {
        if (c.role == ColumnRole::kLabel) {
          return InvalidArgumentError("data.schema.group_key cannot be the label column");
        }
        c.group = true;
        found = true;
      }
    }
    if (!found) {
      return InvalidArgumentError("data.schema.group_key names column \"" + schema.group_key +
                                  "\", which is not among the columns (" + plan.layout + ")");
    }
    plan.has_group = true;
  }
  for (const ColumnPlan& c : plan.columns) {
    if (c.role == ColumnRole::kDense) {
      if (plan.dense_names.size() <= static_cast<size_t>(c.index)) plan.dense_names.resize(c.index + 1);
      plan.dense_names[c.index] = c.name;
    } else if (c.role == ColumnRole::kSparse) {
      if (plan.sparse_names.size() <= static_cast<size_t>(c.index)) plan.sparse_names.resize(c.index + 1);
      plan.sparse_names[c.index] = c.name;
    }
  }
  plan.transform = config.dense;
  if (!std::isfinite(plan.transform.fill) || !std::isfinite(plan.transform.clip_min) ||
      !std::isfinite(plan.transform.clip_max)) {
    return InvalidArgumentError("data.dense fill, clip_min and clip_max must be finite numbers");
  }
  plan.transformed_fill = plan.Transform(plan.transform.fill);
  plan.int_table.resize(ParsePlan::kIntTableSize);
  for (int k = 0; k < ParsePlan::kIntTableSize; ++k) plan.int_table[k] = plan.Transform(k);
  for (int f = 0; f < plan.num_sparse(); ++f) {
    const uint64_t premixed = PremixSeed(DeriveSeed(config.hash_seed, static_cast<uint64_t>(f)));
    plan.field_premixed.push_back(premixed);
    plan.missing_ids.push_back(HashPremixed("", premixed));
  }
  plan.group_premixed = PremixSeed(config.hash_seed);
  return plan;
}

void RowBlock::Reserve(const ParsePlan& plan, int64_t rows_wanted) {
  if (rows_wanted <= capacity) return;
  const int64_t cap = std::max<int64_t>(rows_wanted, capacity * 2);
  labels.resize(cap);
  dense.resize(cap * plan.num_dense());
  ids.resize(cap * plan.num_sparse());
  if (plan.has_group) group.resize(cap);
  rel_line.resize(cap);
  capacity = cap;
}

std::string FormatBadRow(const ParsePlan& plan, const BadRow& bad, std::string_view file,
                         int64_t line) {
  const std::string field =
      bad.plan_column >= 0 ? plan.columns[bad.plan_column].name : std::string();
  switch (bad.kind) {
    case BadRowKind::kColumnCount:
      return errors::WrongColumnCount(file, line, bad.column,
                                      static_cast<int>(plan.columns.size()), bad.found_fields,
                                      plan.layout, bad.text);
    case BadRowKind::kBadDense:
      return errors::BadField(file, line, bad.column, field, errors::kExpectedDense, bad.text);
    case BadRowKind::kBadLabel:
      return errors::BadField(file, line, bad.column, field, errors::kExpectedLabel, bad.text);
    case BadRowKind::kBadQuote:
      return errors::BadQuote(file, line, bad.column, field, bad.text);
  }
  return "bad row";
}

bool LineParser::ParseLine(std::string_view line, int64_t rel_line, bool keep_raw,
                           RowBlock* block) {
  const ParsePlan& plan = *plan_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const int64_t row = block->rows;
  if (row >= block->capacity) block->Reserve(plan, row + 1);
  const int num_dense = plan.num_dense();
  const int num_sparse = plan.num_sparse();
  float* dense_out = block->dense.data() + row * num_dense;
  uint64_t* ids_out = block->ids.data() + row * num_sparse;

  const char* const begin = line.data();
  const char* const end = begin + line.size();
  const int ncols = static_cast<int>(plan.columns.size());
  const char delim = plan.delimiter;
  const bool quoting = plan.quoting;

  // The first field error is remembered but the row is still split to the end, so that a wrong
  // column count (the more fundamental problem) is reported instead when both apply.
  bool failed = false;
  BadRow bad;
  auto fail_field = [&](BadRowKind kind, int col, const char* field_begin, std::string_view text) {
    failed = true;
    bad.kind = kind;
    bad.plan_column = col;
    bad.column = (field_begin - begin) + 1;
    bad.text.assign(text.substr(0, 64));
  };
  auto reject = [&]() {
    bad.rel_line = rel_line;
    if (keep_raw) bad.raw_line.assign(line);
    block->bad.push_back(std::move(bad));
    return false;
  };
  auto count_error = [&](int found, const char* at) {
    bad = BadRow();
    bad.kind = BadRowKind::kColumnCount;
    bad.found_fields = found;
    bad.column = (at - begin) + 1;
    bad.text.assign(line.substr(0, 64));
    return reject();
  };

  const char* p = begin;
  int col = 0;
  while (true) {
    if (col == ncols) {  // every column read but the line goes on: too many fields
      const int extra = 1 + static_cast<int>(std::count(p, end, delim));
      return count_error(ncols + extra, p);
    }
    const char *fb, *fe;
    const char* next = ScanField(p, end, delim, quoting, &scratch_, &fb, &fe);
    if (next == nullptr) {
      fail_field(BadRowKind::kBadQuote, col, p, std::string_view(p, end - p));
      return reject();
    }
    if (!failed) {
      const ColumnPlan& cp = plan.columns[col];
      const std::string_view text(fb, fe - fb);
      switch (cp.role) {
        case ColumnRole::kIgnore:
          break;
        case ColumnRole::kLabel:
          if (text.size() == 1 && (text[0] == '0' || text[0] == '1')) {
            block->labels[row] = text[0] == '1' ? 1.0f : 0.0f;
          } else {
            fail_field(BadRowKind::kBadLabel, col, p, text);
          }
          break;
        case ColumnRole::kDense: {
          float v;
          if (fb == fe) {
            v = plan.transformed_fill;
          } else {
            // Fast path: a small non-negative decimal integer, transformed by table lookup.
            const char* q = fb;
            uint32_t k = 0;
            while (q < fe && static_cast<unsigned>(*q - '0') < 10u &&
                   k < static_cast<uint32_t>(ParsePlan::kIntTableSize)) {
              k = k * 10 + static_cast<unsigned>(*q - '0');
              ++q;
            }
            if (q == fe && k < static_cast<uint32_t>(ParsePlan::kIntTableSize)) {
              v = plan.int_table[k];
            } else {
              double x = 0;
              auto [ptr, ec] = std::from_chars(fb, fe, x);
              if (ec != std::errc() || ptr != fe || !std::isfinite(x)) {
                fail_field(BadRowKind::kBadDense, col, p, text);
                break;
              }
              v = plan.Transform(x);
            }
          }
          dense_out[cp.index] = v;
          break;
        }
        case ColumnRole::kSparse:
          ids_out[cp.index] = fb == fe ? plan.missing_ids[cp.index]
                                       : HashPremixed(text, plan.field_premixed[cp.index]);
          break;
      }
      if (cp.group) block->group[row] = HashPremixed(text, plan.group_premixed);
    }
    ++col;
    if (next == end) break;
    p = next + 1;
  }
  if (col < ncols) return count_error(col, end);
  if (failed) return reject();
  block->rel_line[row] = static_cast<int32_t>(rel_line);
  block->rows = row + 1;
  return true;
}

}  // namespace rectrain::data::internal
