#include "rectrain/data/internal/text_parser.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "rectrain/base/random.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/row_eval.h"

namespace rectrain::data::internal {

static_assert(std::endian::native == std::endian::little,
              "HashPremixed loads little-endian words; add a byte swap for big-endian hosts");

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


bool ParsePlan::NeedsStats() const {
  for (const FeaturePlan& f : dense) {
    if (f.stats_step >= 0) return true;
  }
  for (const FeaturePlan& f : sparse) {
    if (f.stats_step >= 0) return true;
  }
  return false;
}

namespace {

const char* StepName(StepOp op) {
  switch (op) {
    case StepOp::kCol: return "col";
    case StepOp::kCross: return "cross";
    case StepOp::kFill: return "fill";
    case StepOp::kClip: return "clip";
    case StepOp::kLog1p: return "log1p";
    case StepOp::kStandardize: return "standardize";
    case StepOp::kBucketize: return "bucketize";
    case StepOp::kQuantiles: return "quantiles";
    case StepOp::kHourOfDay: return "hour_of_day";
    case StepOp::kDayOfWeek: return "day_of_week";
    case StepOp::kBinarize: return "binarize";
    case StepOp::kSplit: return "split";
    case StepOp::kMaxLen: return "max_len";
    case StepOp::kHash: return "hash";
    case StepOp::kHexId: return "hex_id";
    case StepOp::kHashAs: return "hash_as";
  }
  return "?";
}

// libsvm / libffm keys: the largest index or field a feature may be declared with (key_column
// is a vector indexed by key) and the most keys one range may declare.
constexpr int64_t kMaxPairKey = 10'000'000;
constexpr int64_t kMaxRangeKeys = 100'000;

// A non-negative decimal integer without sign or spaces; leading zeros allowed.
bool ParseKey(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// data.dense / data.sparse of libsvm / libffm: keys ("3") and ranges ("0..12") -> key names in
// canonical decimal ("007" -> "7").
Result<std::vector<std::string>> ExpandKeys(const std::vector<std::string>& names,
                                            const std::string& list_key, const std::string& format) {
  const std::string what = format == "libffm" ? "field" : "index";
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const size_t dots = name.find("..");
    int64_t lo = 0, hi = 0;
    const bool ok = dots == std::string::npos
                        ? ParseKey(name, &lo) && (hi = lo, true)
                        : ParseKey(std::string_view(name).substr(0, dots), &lo) &&
                              ParseKey(std::string_view(name).substr(dots + 2), &hi);
    if (!ok || lo > hi) {
      return InvalidArgumentError(
          list_key + ": \"" + name + "\" is not " + (format == "libffm" ? "a " : "an ") + what +
          ": for format " + format +
          " features are named by their " + what + ", a non-negative integer (\"3\") or an "
          "ascending range (\"0..12\")");
    }
    if (hi > kMaxPairKey || hi - lo >= kMaxRangeKeys) {
      return InvalidArgumentError(list_key + ": \"" + name + "\": " + what + " keys must be <= " +
                                  std::to_string(kMaxPairKey) + " and a range may hold at most " +
                                  std::to_string(kMaxRangeKeys) + " keys");
    }
    for (int64_t k = lo; k <= hi; ++k) out.push_back(std::to_string(k));
  }
  return out;
}

// Rebuilds the tables of a dense feature that depend on its steps and statistics.
void FinishDense(FeaturePlan* f) {
  f->int_table.resize(FeaturePlan::kIntTableSize);
  for (int k = 0; k < FeaturePlan::kIntTableSize; ++k) {
    f->int_table[k] = static_cast<float>(f->Eval(k));
  }
  f->missing_value = static_cast<float>(f->Eval(f->fill));
}

}  // namespace

Result<ParsePlan> BuildPlan(const DataConfig& config, const std::vector<std::string>& header_columns,
                            const std::vector<bool>& list_columns, bool stats_pass) {
  const SchemaConfig& schema = config.schema;
  ParsePlan plan;
  plan.format = schema.format;
  std::vector<std::string> dense_features = schema.dense;
  std::vector<std::string> sparse_features = schema.sparse;
  std::string where;
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
    plan.columns.push_back({"label"});
    for (int i = 0; i < schema.criteo_dense; ++i) plan.columns.push_back({"I" + std::to_string(i + 1)});
    for (int i = 0; i < schema.criteo_sparse; ++i) plan.columns.push_back({"C" + std::to_string(i + 1)});
    plan.layout = "label";
    if (schema.criteo_dense > 0) plan.layout += ", " + RangeName('I', schema.criteo_dense);
    if (schema.criteo_sparse > 0) plan.layout += ", " + RangeName('C', schema.criteo_sparse);
    // The criteo layout names its features; data.dense / data.sparse may re-select or add
    // derived ones.
    if (dense_features.empty() && sparse_features.empty()) {
      for (int i = 0; i < schema.criteo_dense; ++i) dense_features.push_back("I" + std::to_string(i + 1));
      for (int i = 0; i < schema.criteo_sparse; ++i) sparse_features.push_back("C" + std::to_string(i + 1));
    }
    where = "the criteo layout";
  } else if (schema.format == "csv" || schema.format == "tsv" || schema.format == "parquet") {
    std::vector<std::string> names;
    if (schema.format == "parquet") {
      plan.delimiter = 0;
      names = header_columns;
      where = "the Parquet schema";
    } else {
      plan.delimiter = schema.format == "tsv" ? '\t' : (schema.delimiter == '\t' ? ',' : schema.delimiter);
      if (plan.delimiter == '\n' || plan.delimiter == '\r' || plan.delimiter == '"') {
        return InvalidArgumentError("data.schema.delimiter cannot be a newline or a quote");
      }
      plan.quoting = true;
      plan.header = schema.header;
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
      where = schema.header ? "the header" : "data.schema.columns";
    }
    for (size_t i = 0; i < names.size(); ++i) {
      ColumnPlan c;
      c.name = names[i];
      c.is_list = i < list_columns.size() && list_columns[i];
      plan.columns.push_back(std::move(c));
    }
    if (dense_features.empty() && sparse_features.empty()) {
      return InvalidArgumentError("format " + schema.format +
                                  ": declare the features in data.schema.dense and/or "
                                  "data.schema.sparse");
    }
    plan.layout = Layout(plan.columns);
  } else if (schema.format == "libsvm" || schema.format == "libffm") {
    // docs/formats/libsvm.md: declared dense keys become dense features (the pair's value);
    // libffm sparse fields and the libsvm bag become multi-valued categorical features whose ids
    // are the pairs' indices (value 1 only).
    const bool ffm = schema.format == "libffm";
    plan.pairs = true;
    plan.ffm = ffm;
    plan.delimiter = ' ';
    if (schema.header) {
      return InvalidArgumentError("data.schema.header applies to format csv or tsv; " + schema.format +
                                  " files have no header");
    }
    RECTRAIN_ASSIGN_OR_RETURN(dense_features, ExpandKeys(schema.dense, "data.dense", schema.format));
    if (ffm) {
      RECTRAIN_ASSIGN_OR_RETURN(sparse_features, ExpandKeys(schema.sparse, "data.sparse", schema.format));
      if (dense_features.empty() && sparse_features.empty()) {
        return InvalidArgumentError(
            "format libffm: declare the fields in data.sparse (categorical) and/or data.dense, "
            "e.g. data.sparse: [\"0..38\"]");
      }
    } else {
      int64_t unused;
      if (sparse_features.empty()) sparse_features = {"features"};
      if (sparse_features.size() != 1 || ParseKey(sparse_features[0], &unused) ||
          sparse_features[0].find("..") != std::string::npos) {
        return InvalidArgumentError(
            "format libsvm: data.sparse names the one categorical feature that holds every index "
            "not in data.dense (default [features]); libsvm has no fields: use format libffm for "
            "field-aware input");
      }
    }
    plan.columns.push_back({schema.label});
    int64_t max_key = -1;
    auto add_key = [&](const std::string& key, bool is_list) {
      int64_t k = 0;
      (void)ParseKey(key, &k);
      max_key = std::max(max_key, k);
      plan.columns.push_back({key, -1, is_list});
    };
    for (const std::string& k : dense_features) add_key(k, false);
    if (ffm) {
      for (const std::string& k : sparse_features) add_key(k, true);
    } else {
      plan.columns.push_back({sparse_features[0], -1, true});
      plan.bag_column = static_cast<int>(plan.columns.size()) - 1;
    }
    plan.key_column.assign(static_cast<size_t>(max_key + 1), -1);
    for (size_t i = 1; i < plan.columns.size(); ++i) {
      if (static_cast<int>(i) == plan.bag_column) continue;
      int64_t k = 0;
      (void)ParseKey(plan.columns[i].name, &k);
      plan.key_column[static_cast<size_t>(k)] = static_cast<int>(i);  // duplicates fail below
    }
    plan.layout = Layout(plan.columns);
    where = std::string("the declared ") + (ffm ? "fields" : "indices");
  } else {
    return InvalidArgumentError("unknown data.schema.format \"" + schema.format +
                                "\"; expected auto, criteo, csv, tsv, parquet, libsvm or libffm");
  }
  std::unordered_map<std::string, int> by_name;
  for (size_t i = 0; i < plan.columns.size(); ++i) {
    if (!by_name.emplace(plan.columns[i].name, static_cast<int>(i)).second) {
      return InvalidArgumentError("column \"" + plan.columns[i].name + "\" appears twice in " +
                                  (schema.header ? std::string("the header") : where));
    }
  }
  auto find = [&](const std::string& name, const std::string& key) -> Result<int> {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return InvalidArgumentError(key + " names column \"" + name + "\", which is not in " +
                                  where + " (columns: " + Layout(plan.columns) + ")");
    }
    return it->second;
  };
  auto use = [&](int col) {
    if (plan.columns[col].slot < 0) {
      plan.columns[col].slot = static_cast<int>(plan.slot_columns.size());
      plan.slot_columns.push_back(col);
    }
  };

  // Label.
  RECTRAIN_ASSIGN_OR_RETURN(plan.label_column, find(schema.label, "data.schema.label"));
  if (plan.columns[plan.label_column].is_list) {
    return InvalidArgumentError("data.schema.label: column \"" + schema.label + "\" is a list");
  }
  use(plan.label_column);
  plan.label_expected =
      std::string(plan.pairs ? errors::kExpectedPairLabel : errors::kExpectedLabel);
  std::map<std::string, std::string> unused_transforms = config.transforms;
  if (auto it = config.transforms.find(schema.label); it != config.transforms.end()) {
    unused_transforms.erase(schema.label);
    Result<FeatureTransform> t = ParseTransform(it->second);
    if (!t.ok()) return t.status().WithContext("features.transforms." + schema.label);
    for (const TransformStep& s : t->steps) {
      if (!s.IsNumeric() || s.NeedsStats()) {
        return InvalidArgumentError("features.transforms." + schema.label + ": step " +
                                    StepName(s.op) +
                                    " cannot transform the label (use numeric steps such as binarize(t))");
      }
    }
    plan.label_transform = std::move(t).value();
    plan.label_expected = "a number that \"" + plan.label_transform.text + "\" maps to 0 or 1";
  }

  // Features.
  std::unordered_map<std::string, int> feature_names;
  std::vector<int> direct_role(plan.columns.size(), 0);  // columns named directly as a feature
  auto compile = [&](const std::string& name, bool dense, int index) -> Result<FeaturePlan> {
    const std::string list_key = dense ? "data.schema.dense" : "data.schema.sparse";
    if (!feature_names.emplace(name, index).second) {
      return InvalidArgumentError(list_key + ": feature \"" + name + "\" is declared twice");
    }
    FeaturePlan f;
    f.name = name;
    f.dense = dense;
    f.index = index;
    const std::string key = "features.transforms." + name;
    auto it = config.transforms.find(name);
    if (it != config.transforms.end()) {
      unused_transforms.erase(name);
      Result<FeatureTransform> t = ParseTransform(it->second);
      if (!t.ok()) return t.status().WithContext(key);
      f.transform = std::move(t).value();
      f.has_spec = true;
    }
    std::string source = name;
    size_t first = 0;
    if (!f.transform.steps.empty() && f.transform.steps[0].op == StepOp::kCol) {
      source = f.transform.steps[0].names[0];
      first = 1;
    }
    if (!f.transform.steps.empty() && f.transform.steps[0].op == StepOp::kCross) {
      if (dense) return InvalidArgumentError(key + ": cross(...) makes a sparse feature; list " + name + " in data.sparse");
      RECTRAIN_ASSIGN_OR_RETURN(f.source, find(f.transform.steps[0].names[0], key + ": cross"));
      RECTRAIN_ASSIGN_OR_RETURN(f.source2, find(f.transform.steps[0].names[1], key + ": cross"));
      for (int c : {f.source, f.source2}) {
        if (plan.columns[c].is_list) {
          return InvalidArgumentError(key + ": cross of list column \"" + plan.columns[c].name + "\" is not supported");
        }
      }
      first = 1;
    } else if (first == 1) {
      RECTRAIN_ASSIGN_OR_RETURN(f.source, find(source, key + ": col"));
    } else {
      RECTRAIN_ASSIGN_OR_RETURN(f.source, find(source, list_key));
      if (direct_role[f.source] != 0 || f.source == plan.label_column) {
        return InvalidArgumentError(list_key + ": column \"" + source +
                                    "\" already has another role (label, dense or sparse)");
      }
      direct_role[f.source] = 1;
    }
    const bool is_list = plan.columns[f.source].is_list;
    if (dense && is_list) {
      return InvalidArgumentError(list_key + ": column \"" + plan.columns[f.source].name +
                                  "\" is a list; list columns can only be sparse features");
    }
    if (!f.has_spec && dense) {
      // The global default transform (features.fill / clip_min / clip_max / log1p).
      const DenseTransformConfig& d = config.dense;
      if (!std::isfinite(d.fill) || !std::isfinite(d.clip_min) || !std::isfinite(d.clip_max)) {
        return InvalidArgumentError("data.dense fill, clip_min and clip_max must be finite numbers");
      }
      TransformStep clip;
      clip.op = StepOp::kClip;
      clip.args = {d.clip_min, d.clip_max > d.clip_min ? static_cast<double>(d.clip_max)
                                                       : std::numeric_limits<double>::infinity()};
      f.transform.steps.push_back(clip);
      if (d.log1p) {
        TransformStep l;
        l.op = StepOp::kLog1p;
        f.transform.steps.push_back(l);
      }
    }
    f.fill = config.dense.fill;
    bool any_numeric = false;
    for (size_t i = first; i < f.transform.steps.size(); ++i) {
      const TransformStep& s = f.transform.steps[i];
      const std::string step = std::string("step ") + StepName(s.op);
      switch (s.op) {
        case StepOp::kFill:
          f.fill = s.args[0];
          f.has_fill = true;
          break;
        case StepOp::kSplit:
        case StepOp::kMaxLen:
        case StepOp::kHash:
          if (dense) return InvalidArgumentError(key + ": " + step + " applies to sparse features");
          if (s.op == StepOp::kSplit) {
            if (f.split_sep != 0) return InvalidArgumentError(key + ": split appears twice");
            f.split_sep = s.sep[0];
            f.max_len = static_cast<int64_t>(s.args[0]);
            f.multi = true;
          } else if (s.op == StepOp::kMaxLen) {
            f.max_len = static_cast<int64_t>(s.args[0]);
          } else {
            f.hash_mod = static_cast<uint64_t>(s.args[0]);
          }
          break;
        case StepOp::kHexId:
          if (dense) return InvalidArgumentError(key + ": " + step + " applies to sparse features");
          if (f.source2 >= 0) return InvalidArgumentError(key + ": " + step + " cannot follow cross(...)");
          f.hex_id = true;
          break;
        case StepOp::kHashAs:
          if (dense) return InvalidArgumentError(key + ": " + step + " applies to sparse features");
          f.hash_as = s.names[0];
          break;
        default:
          if (f.source2 >= 0) {
            return InvalidArgumentError(key + ": " + step + " cannot follow cross(...) (only hash(n))");
          }
          any_numeric = true;
          if (s.NeedsStats()) f.stats_step = static_cast<int>(i);
          break;
      }
    }
    if (f.hex_id && any_numeric) {
      return InvalidArgumentError(key + ": hex_id takes the token as the id; it cannot be combined with numeric steps");
    }
    if (f.source2 >= 0 && f.has_fill) {
      return InvalidArgumentError(key + ": fill cannot follow cross(...) (only hash(n))");
    }
    if (is_list) f.multi = true;
    if (f.max_len > 0 && !f.multi) {
      return InvalidArgumentError(key + ": max_len needs a list: split(sep) or a Parquet list column");
    }
    if (is_list && f.split_sep != 0) {
      return InvalidArgumentError(key + ": split applies to text; column \"" + plan.columns[f.source].name +
                                  "\" is already a list");
    }
    f.numeric = !dense && any_numeric;
    f.end_step = f.transform.steps.size();
    use(f.source);
    if (f.source2 >= 0) use(f.source2);
    return f;
  };
  std::vector<FeaturePlan> dense, sparse;
  for (size_t i = 0; i < dense_features.size(); ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(FeaturePlan f, compile(dense_features[i], true, static_cast<int>(i)));
    dense.push_back(std::move(f));
  }
  for (size_t i = 0; i < sparse_features.size(); ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(FeaturePlan f, compile(sparse_features[i], false, static_cast<int>(i)));
    sparse.push_back(std::move(f));
  }
  bool group_hex = false;
  if (!schema.group_key.empty()) {
    auto it = unused_transforms.find(schema.group_key);
    if (it != unused_transforms.end()) {
      Result<FeatureTransform> t = ParseTransform(it->second);
      if (!t.ok()) return t.status().WithContext("features.transforms." + schema.group_key);
      if (t->steps.size() != 1 || t->steps[0].op != StepOp::kHexId) {
        return InvalidArgumentError("features.transforms." + schema.group_key +
                                    ": the group key column takes only \"hex_id\" (its ids unhashed), got \"" +
                                    it->second + "\"");
      }
      group_hex = true;
      unused_transforms.erase(it);
    }
  }
  if (!unused_transforms.empty()) {
    std::string names;
    for (const auto& [n, spec] : unused_transforms) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgumentError("features.transforms names " + names +
                                ", which is neither a feature (data.dense, data.sparse) nor the label");
  }
  if (stats_pass) {
    // Only the features with a stats step, as dense values up to that step.
    for (std::vector<FeaturePlan>* list : {&dense, &sparse}) {
      for (FeaturePlan& f : *list) {
        if (f.stats_step < 0) continue;
        f.dense = true;
        f.index = static_cast<int>(plan.dense.size());
        f.end_step = static_cast<size_t>(f.stats_step);
        f.multi = false;
        f.stats_step = -1;
        plan.dense.push_back(std::move(f));
      }
    }
  } else {
    plan.dense = std::move(dense);
    plan.sparse = std::move(sparse);
  }
  for (FeaturePlan& f : plan.dense) {
    plan.dense_names.push_back(f.name);
    FinishDense(&f);
  }
  for (FeaturePlan& f : plan.sparse) {
    plan.sparse_names.push_back(f.name);
    int hash_index = f.index;
    if (!f.hash_as.empty()) {
      auto it = std::find_if(plan.sparse.begin(), plan.sparse.end(), [&](const FeaturePlan& o) { return o.name == f.hash_as; });
      if (it == plan.sparse.end() || it->name == f.name) {
        std::string names;
        for (const FeaturePlan& o : plan.sparse) names += (names.empty() ? "" : ", ") + o.name;
        return InvalidArgumentError("features.transforms." + f.name + ": hash_as(" + f.hash_as + ") names " +
                                    (it == plan.sparse.end() ? "no other sparse feature" : "the feature itself") +
                                    "; the sparse features are " + names);
      }
      if (!it->hash_as.empty()) {
        return InvalidArgumentError("features.transforms." + f.name + ": hash_as(" + f.hash_as + ") names a feature that is itself hash_as(" +
                                    it->hash_as + "); hash_as does not chain: name the item feature itself");
      }
      if (it->hex_id != f.hex_id) {
        return InvalidArgumentError("features.transforms." + f.name + ": hash_as(" + f.hash_as + "): one of the two is hex_id and the other is not, so equal tokens would not get equal ids");
      }
      hash_index = it->index;
    }
    f.premixed = PremixSeed(DeriveSeed(config.hash_seed, static_cast<uint64_t>(hash_index)));
    f.missing_id = FoldId(f, HashPremixed("", f.premixed));
    if (f.multi) {
      f.multi_index = static_cast<int>(plan.multi_fields.size());
      plan.multi_fields.push_back(f.index);
    }
  }

  // Group key and filters.
  if (!schema.group_key.empty()) {
    auto it = by_name.find(schema.group_key);
    if (it == by_name.end()) {
      return InvalidArgumentError("data.schema.group_key names column \"" + schema.group_key +
                                  "\", which is not among the columns (" + plan.layout + ")");
    }
    if (it->second == plan.label_column) {
      return InvalidArgumentError("data.schema.group_key cannot be the label column");
    }
    if (plan.columns[it->second].is_list) {
      return InvalidArgumentError("data.schema.group_key: column \"" + schema.group_key + "\" is a list");
    }
    plan.group_column = it->second;
    plan.has_group = !stats_pass;
    plan.group_hex = group_hex;
    use(plan.group_column);
  }
  for (const std::string& text : config.filters) {
    Result<RowFilter> rf = ParseRowFilter(text);
    if (!rf.ok()) return rf.status().WithContext("data.filters");
    FilterPlan fp;
    fp.filter = std::move(rf).value();
    RECTRAIN_ASSIGN_OR_RETURN(fp.column, find(fp.filter.column, "data.filters: \"" + fp.filter.text + "\""));
    if (plan.columns[fp.column].is_list) {
      return InvalidArgumentError("data.filters: \"" + fp.filter.text + "\": column \"" +
                                  fp.filter.column + "\" is a list");
    }
    use(fp.column);
    plan.filters.push_back(std::move(fp));
  }
  const double rate = config.negative_downsampling;  // validated by the reader
  if (rate < 1 && !stats_pass) {
    plan.downsample = true;
    plan.keep_negative_below = static_cast<uint64_t>(std::ldexp(rate, 64) >= 18446744073709551615.0
                                                         ? 18446744073709551615.0
                                                         : std::ldexp(rate, 64));
    plan.downsample_seed = DeriveSeed(config.hash_seed, 0x646f776eULL);  // "down"
  }
  plan.group_premixed = PremixSeed(config.hash_seed);
  return plan;
}

void FillStats(ParsePlan* plan, const std::vector<FeatureStats>& stats) {
  size_t k = 0;
  for (FeaturePlan& f : plan->dense) {
    if (f.stats_step >= 0 && k < stats.size()) {
      f.stats = stats[k++];
      FinishDense(&f);
    }
  }
  for (FeaturePlan& f : plan->sparse) {
    if (f.stats_step >= 0 && k < stats.size()) f.stats = stats[k++];
  }
}

Result<std::vector<FeatureStats>> CheckFrozenStats(const ParsePlan& plan, const std::vector<FeatureStats>& stats) {
  size_t wanted = 0;
  for (const auto* features : {&plan.dense, &plan.sparse}) {
    for (const FeaturePlan& f : *features) wanted += f.stats_step >= 0 ? 1 : 0;
  }
  if (wanted != stats.size()) {
    return InvalidArgumentError("the frozen feature statistics cover " + std::to_string(stats.size()) +
                                " features, but the config has " + std::to_string(wanted) +
                                " with a standardize or quantiles step (re-export the model)");
  }
  return stats;
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
  if (plan.format == "parquet") return errors::BadValue(file, line, field, expected, bad.text);
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
