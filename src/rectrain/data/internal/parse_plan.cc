// The read plan of every input format: the columns each format defines, then the roles the
// config gives them (label, features with their transforms, group key, filters).
#include "rectrain/data/internal/parse_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "rectrain/base/random.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/row_eval.h"

namespace rectrain::data::internal {

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
                                            const std::string& list_key, DataFormat format) {
  const std::string what = format == DataFormat::kLibffm ? "field" : "index";
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
          list_key + ": \"" + name + "\" is not " + (format == DataFormat::kLibffm ? "a " : "an ") + what +
          ": for format " + FormatName(format) +
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

// ---- Columns: what the format defines, and the features the config declares over them ----

struct DeclaredFeatures {
  std::vector<std::string> dense;
  std::vector<std::string> sparse;
  std::string where;  // where the column names come from, for messages ("the header", ...)
};

Status PlanCriteoColumns(const SchemaConfig& schema, ParsePlan& plan, DeclaredFeatures& declared) {
  if (schema.criteo_dense < 0 || schema.criteo_sparse < 0 || schema.criteo_dense + schema.criteo_sparse == 0 ||
      schema.criteo_dense + schema.criteo_sparse > 100000) {
    return InvalidArgumentError(
        "data.schema.criteo_dense and criteo_sparse must be >= 0 with a positive sum (got " +
        std::to_string(schema.criteo_dense) + " and " + std::to_string(schema.criteo_sparse) + ")");
  }
  if (schema.header) {
    return InvalidArgumentError("data.schema.header applies to format csv or tsv; criteo files have no header");
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
  if (declared.dense.empty() && declared.sparse.empty()) {
    for (int i = 0; i < schema.criteo_dense; ++i) declared.dense.push_back("I" + std::to_string(i + 1));
    for (int i = 0; i < schema.criteo_sparse; ++i) declared.sparse.push_back("C" + std::to_string(i + 1));
  }
  declared.where = "the criteo layout";
  return OkStatus();
}

// csv, tsv and Parquet: columns by name (the header, data.schema.columns or the file schema).
Status PlanNamedColumns(const SchemaConfig& schema, const std::vector<std::string>& header_columns,
                        const std::vector<bool>& list_columns, ParsePlan& plan, DeclaredFeatures& declared) {
  std::vector<std::string> names;
  if (schema.format == DataFormat::kParquet) {
    plan.delimiter = 0;
    names = header_columns;
    declared.where = "the Parquet schema";
  } else {
    plan.delimiter = schema.format == DataFormat::kTsv ? '\t' : (schema.delimiter == '\t' ? ',' : schema.delimiter);
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
        return InvalidArgumentError("format " + std::string(FormatName(schema.format)) +
                                    " needs the column names: set data.schema.header: true (first line names the "
                                    "columns) or data.schema.columns: [..]");
      }
    }
    declared.where = schema.header ? "the header" : "data.schema.columns";
  }
  for (size_t i = 0; i < names.size(); ++i) {
    ColumnPlan c;
    c.name = names[i];
    c.is_list = i < list_columns.size() && list_columns[i];
    plan.columns.push_back(std::move(c));
  }
  if (declared.dense.empty() && declared.sparse.empty()) {
    return InvalidArgumentError("format " + std::string(FormatName(schema.format)) +
                                ": declare the features in data.schema.dense and/or data.schema.sparse");
  }
  plan.layout = Layout(plan.columns);
  return OkStatus();
}

// libsvm / libffm (docs/formats/libsvm.md): declared dense keys become dense features (the
// pair's value); libffm sparse fields and the libsvm bag become multi-valued categorical
// features whose ids are the pairs' indices (value 1 only).
Status PlanPairColumns(const SchemaConfig& schema, ParsePlan& plan, DeclaredFeatures& declared) {
  const bool ffm = schema.format == DataFormat::kLibffm;
  plan.pairs = true;
  plan.ffm = ffm;
  plan.delimiter = ' ';
  if (schema.header) {
    return InvalidArgumentError("data.schema.header applies to format csv or tsv; " + std::string(FormatName(schema.format)) + " files have no header");
  }
  RECTRAIN_ASSIGN_OR_RETURN(declared.dense, ExpandKeys(schema.dense, "data.dense", schema.format));
  if (ffm) {
    RECTRAIN_ASSIGN_OR_RETURN(declared.sparse, ExpandKeys(schema.sparse, "data.sparse", schema.format));
    if (declared.dense.empty() && declared.sparse.empty()) {
      return InvalidArgumentError(
          "format libffm: declare the fields in data.sparse (categorical) and/or data.dense, "
          "e.g. data.sparse: [\"0..38\"]");
    }
  } else {
    int64_t unused;
    if (declared.sparse.empty()) declared.sparse = {"features"};
    if (declared.sparse.size() != 1 || ParseKey(declared.sparse[0], &unused) ||
        declared.sparse[0].find("..") != std::string::npos) {
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
    (void)ParseKey(key, &k);  // ExpandKeys made every declared key a valid one
    max_key = std::max(max_key, k);
    plan.columns.push_back({key, -1, is_list});
  };
  for (const std::string& k : declared.dense) add_key(k, false);
  if (ffm) {
    for (const std::string& k : declared.sparse) add_key(k, true);
  } else {
    plan.columns.push_back({declared.sparse[0], -1, true});
    plan.bag_column = static_cast<int>(plan.columns.size()) - 1;
  }
  plan.key_column.assign(static_cast<size_t>(max_key + 1), -1);
  for (size_t i = 1; i < plan.columns.size(); ++i) {
    if (static_cast<int>(i) == plan.bag_column) continue;
    int64_t k = 0;
    (void)ParseKey(plan.columns[i].name, &k);
    plan.key_column[static_cast<size_t>(k)] = static_cast<int>(i);  // duplicates fail later
  }
  plan.layout = Layout(plan.columns);
  declared.where = std::string("the declared ") + (ffm ? "fields" : "indices");
  return OkStatus();
}

Result<DeclaredFeatures> PlanColumns(const SchemaConfig& schema, const std::vector<std::string>& header_columns,
                                     const std::vector<bool>& list_columns, ParsePlan& plan) {
  DeclaredFeatures declared{schema.dense, schema.sparse, ""};
  const DataFormat format = schema.format;
  if (format == DataFormat::kCriteo) {
    RECTRAIN_RETURN_IF_ERROR(PlanCriteoColumns(schema, plan, declared));
  } else if (format == DataFormat::kCsv || format == DataFormat::kTsv || format == DataFormat::kParquet) {
    RECTRAIN_RETURN_IF_ERROR(PlanNamedColumns(schema, header_columns, list_columns, plan, declared));
  } else if (format == DataFormat::kLibsvm || format == DataFormat::kLibffm) {
    RECTRAIN_RETURN_IF_ERROR(PlanPairColumns(schema, plan, declared));
  } else {
    return InvalidArgumentError(std::string("format ") + FormatName(format) + " has no text columns to plan");
  }
  return declared;
}

// ---- Roles: the label, the features, the group key and the filters over those columns ----

// Fills a ParsePlan whose columns are planned: each method plans one role, in the order
// BuildParsePlan calls them (errors name the first bad setting of that order).
class RolePlanner {
 public:
  RolePlanner(const DataConfig& config, ParsePlan& plan, std::string where)
      : config_(config), plan_(plan), where_(std::move(where)), unused_transforms_(config.transforms),
        direct_role_(plan.columns.size(), 0) {}

  Status IndexColumns() {
    for (size_t i = 0; i < plan_.columns.size(); ++i) {
      if (!by_name_.emplace(plan_.columns[i].name, static_cast<int>(i)).second) {
        return InvalidArgumentError("column \"" + plan_.columns[i].name + "\" appears twice in " +
                                    (config_.schema.header ? std::string("the header") : where_));
      }
    }
    return OkStatus();
  }

  Status PlanLabel();
  Result<FeaturePlan> CompileFeature(const std::string& name, bool dense, int index);
  // features.transforms.<group_key> (only hex_id), then every transform must have been used.
  Status CheckTransformsUsed(bool* group_hex);
  // hash_as targets, seeds, missing ids and the multi-valued list of the planned features.
  Status FinishFeatures();
  Status PlanGroupKey(bool group_hex, bool stats_pass);
  Status PlanFilters();

 private:
  Result<int> Find(const std::string& name, const std::string& key) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      return InvalidArgumentError(key + " names column \"" + name + "\", which is not in " + where_ +
                                  " (columns: " + Layout(plan_.columns) + ")");
    }
    return it->second;
  }
  // Marks a column as read: it gets the next slot.
  void Use(int col) {
    if (plan_.columns[col].slot < 0) {
      plan_.columns[col].slot = static_cast<int>(plan_.slot_columns.size());
      plan_.slot_columns.push_back(col);
    }
  }
  // The feature's column(s): col(name), cross(a, b) or the feature's own name. `*first` is the
  // first step that is a transform (after col/cross).
  Status ResolveSources(FeaturePlan& f, const std::string& key, const std::string& list_key, size_t* first);
  Status AddDefaultDenseSteps(FeaturePlan& f) const;
  // Reads the steps from `first` into the plan's fields (fill, split, max_len, hash, hex_id,
  // hash_as, the stats step) and checks their combinations.
  Status ReadSteps(FeaturePlan& f, size_t first, const std::string& key) const;

  const DataConfig& config_;
  ParsePlan& plan_;
  const std::string where_;
  std::unordered_map<std::string, int> by_name_;            // column name -> index
  std::map<std::string, std::string> unused_transforms_;  // features.transforms not yet used
  std::unordered_map<std::string, int> feature_names_;
  std::vector<int> direct_role_;  // columns named directly as a feature (or the label)
};

Status RolePlanner::PlanLabel() {
  const std::string& label = config_.schema.label;
  RECTRAIN_ASSIGN_OR_RETURN(plan_.label_column, Find(label, "data.schema.label"));
  if (plan_.columns[plan_.label_column].is_list) {
    return InvalidArgumentError("data.schema.label: column \"" + label + "\" is a list");
  }
  Use(plan_.label_column);
  plan_.label_expected = std::string(plan_.pairs ? errors::kExpectedPairLabel : errors::kExpectedLabel);
  auto it = config_.transforms.find(label);
  if (it == config_.transforms.end()) return OkStatus();
  unused_transforms_.erase(label);
  Result<FeatureTransform> t = ParseTransform(it->second);
  if (!t.ok()) return t.status().WithContext("features.transforms." + label);
  for (const TransformStep& s : t->steps) {
    if (!s.IsNumeric() || s.NeedsStats()) {
      return InvalidArgumentError("features.transforms." + label + ": step " + StepName(s.op) +
                                  " cannot transform the label (use numeric steps such as binarize(t))");
    }
  }
  plan_.label_transform = std::move(t).value();
  plan_.label_expected = "a number that \"" + plan_.label_transform.text + "\" maps to 0 or 1";
  return OkStatus();
}

Status RolePlanner::ResolveSources(FeaturePlan& f, const std::string& key, const std::string& list_key,
                                   size_t* first) {
  const std::vector<TransformStep>& steps = f.transform.steps;
  if (!steps.empty() && steps[0].op == StepOp::kCross) {
    if (f.dense) return InvalidArgumentError(key + ": cross(...) makes a sparse feature; list " + f.name + " in data.sparse");
    RECTRAIN_ASSIGN_OR_RETURN(f.source, Find(steps[0].names[0], key + ": cross"));
    RECTRAIN_ASSIGN_OR_RETURN(f.source2, Find(steps[0].names[1], key + ": cross"));
    for (int c : {f.source, f.source2}) {
      if (plan_.columns[c].is_list) {
        return InvalidArgumentError(key + ": cross of list column \"" + plan_.columns[c].name + "\" is not supported");
      }
    }
    *first = 1;
  } else if (!steps.empty() && steps[0].op == StepOp::kCol) {
    RECTRAIN_ASSIGN_OR_RETURN(f.source, Find(steps[0].names[0], key + ": col"));
    *first = 1;
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(f.source, Find(f.name, list_key));
    if (direct_role_[f.source] != 0 || f.source == plan_.label_column) {
      return InvalidArgumentError(list_key + ": column \"" + f.name + "\" already has another role (label, dense or sparse)");
    }
    direct_role_[f.source] = 1;
    *first = 0;
  }
  if (f.dense && plan_.columns[f.source].is_list) {
    return InvalidArgumentError(list_key + ": column \"" + plan_.columns[f.source].name +
                                "\" is a list; list columns can only be sparse features");
  }
  return OkStatus();
}

// A dense feature without its own transform gets the global default (data.dense: fill,
// clip_min / clip_max, log1p).
Status RolePlanner::AddDefaultDenseSteps(FeaturePlan& f) const {
  const DenseTransformConfig& d = config_.dense;
  if (!std::isfinite(d.fill) || !std::isfinite(d.clip_min) || !std::isfinite(d.clip_max)) {
    return InvalidArgumentError("data.dense fill, clip_min and clip_max must be finite numbers");
  }
  TransformStep clip;
  clip.op = StepOp::kClip;
  clip.args = {d.clip_min, d.clip_max > d.clip_min ? static_cast<double>(d.clip_max) : std::numeric_limits<double>::infinity()};
  f.transform.steps.push_back(clip);
  if (d.log1p) {
    TransformStep l;
    l.op = StepOp::kLog1p;
    f.transform.steps.push_back(l);
  }
  return OkStatus();
}

Status RolePlanner::ReadSteps(FeaturePlan& f, size_t first, const std::string& key) const {
  bool any_numeric = false;
  for (size_t i = first; i < f.transform.steps.size(); ++i) {
    const TransformStep& s = f.transform.steps[i];
    const std::string step = std::string("step ") + StepName(s.op);
    const bool sparse_only = s.op == StepOp::kSplit || s.op == StepOp::kMaxLen || s.op == StepOp::kHash ||
                             s.op == StepOp::kHexId || s.op == StepOp::kHashAs;
    if (sparse_only && f.dense) return InvalidArgumentError(key + ": " + step + " applies to sparse features");
    switch (s.op) {
      case StepOp::kFill:
        f.fill = s.args[0];
        f.has_fill = true;
        break;
      case StepOp::kSplit:
        if (f.split_sep != 0) return InvalidArgumentError(key + ": split appears twice");
        f.split_sep = s.sep[0];
        f.max_len = static_cast<int64_t>(s.args[0]);
        f.multi = true;
        break;
      case StepOp::kMaxLen: f.max_len = static_cast<int64_t>(s.args[0]); break;
      case StepOp::kHash: f.hash_mod = static_cast<uint64_t>(s.args[0]); break;
      case StepOp::kHexId:
        if (f.source2 >= 0) return InvalidArgumentError(key + ": " + step + " cannot follow cross(...)");
        f.hex_id = true;
        break;
      case StepOp::kHashAs: f.hash_as = s.names[0]; break;
      default:
        if (f.source2 >= 0) return InvalidArgumentError(key + ": " + step + " cannot follow cross(...) (only hash(n))");
        any_numeric = true;
        if (s.NeedsStats()) f.stats_step = static_cast<int>(i);
        break;
    }
  }
  if (f.hex_id && any_numeric) {
    return InvalidArgumentError(key + ": hex_id takes the token as the id; it cannot be combined with numeric steps");
  }
  if (f.source2 >= 0 && f.has_fill) return InvalidArgumentError(key + ": fill cannot follow cross(...) (only hash(n))");
  const bool is_list = plan_.columns[f.source].is_list;
  if (is_list) f.multi = true;
  if (f.max_len > 0 && !f.multi) {
    return InvalidArgumentError(key + ": max_len needs a list: split(sep) or a Parquet list column");
  }
  if (is_list && f.split_sep != 0) {
    return InvalidArgumentError(key + ": split applies to text; column \"" + plan_.columns[f.source].name + "\" is already a list");
  }
  f.numeric = !f.dense && any_numeric;
  return OkStatus();
}

Result<FeaturePlan> RolePlanner::CompileFeature(const std::string& name, bool dense, int index) {
  const std::string list_key = dense ? "data.schema.dense" : "data.schema.sparse";
  if (!feature_names_.emplace(name, index).second) {
    return InvalidArgumentError(list_key + ": feature \"" + name + "\" is declared twice");
  }
  FeaturePlan f;
  f.name = name;
  f.dense = dense;
  f.index = index;
  const std::string key = "features.transforms." + name;
  if (auto it = config_.transforms.find(name); it != config_.transforms.end()) {
    unused_transforms_.erase(name);
    Result<FeatureTransform> t = ParseTransform(it->second);
    if (!t.ok()) return t.status().WithContext(key);
    f.transform = std::move(t).value();
    f.has_spec = true;
  }
  size_t first = 0;
  RECTRAIN_RETURN_IF_ERROR(ResolveSources(f, key, list_key, &first));
  if (!f.has_spec && dense) {
    RECTRAIN_RETURN_IF_ERROR(AddDefaultDenseSteps(f));
  }
  f.fill = config_.dense.fill;
  RECTRAIN_RETURN_IF_ERROR(ReadSteps(f, first, key));
  f.end_step = f.transform.steps.size();
  Use(f.source);
  if (f.source2 >= 0) Use(f.source2);
  return f;
}

Status RolePlanner::CheckTransformsUsed(bool* group_hex) {
  *group_hex = false;
  const std::string& group_key = config_.schema.group_key;
  if (auto it = unused_transforms_.find(group_key); !group_key.empty() && it != unused_transforms_.end()) {
    Result<FeatureTransform> t = ParseTransform(it->second);
    if (!t.ok()) return t.status().WithContext("features.transforms." + group_key);
    if (t->steps.size() != 1 || t->steps[0].op != StepOp::kHexId) {
      return InvalidArgumentError("features.transforms." + group_key +
                                  ": the group key column takes only \"hex_id\" (its ids unhashed), got \"" + it->second + "\"");
    }
    *group_hex = true;
    unused_transforms_.erase(it);
  }
  if (unused_transforms_.empty()) return OkStatus();
  std::string names;
  for (const auto& [n, spec] : unused_transforms_) names += (names.empty() ? "" : ", ") + n;
  return InvalidArgumentError("features.transforms names " + names +
                              ", which is neither a feature (data.dense, data.sparse) nor the label");
}

Status RolePlanner::FinishFeatures() {
  for (FeaturePlan& f : plan_.dense) {
    plan_.dense_names.push_back(f.name);
    FinishDense(&f);
  }
  for (FeaturePlan& f : plan_.sparse) {
    plan_.sparse_names.push_back(f.name);
    int hash_index = f.index;
    if (!f.hash_as.empty()) {
      auto it = std::find_if(plan_.sparse.begin(), plan_.sparse.end(), [&](const FeaturePlan& o) { return o.name == f.hash_as; });
      const std::string key = "features.transforms." + f.name + ": hash_as(" + f.hash_as + ")";
      if (it == plan_.sparse.end() || it->name == f.name) {
        std::string names;
        for (const FeaturePlan& o : plan_.sparse) names += (names.empty() ? "" : ", ") + o.name;
        return InvalidArgumentError(key + " names " + (it == plan_.sparse.end() ? "no other sparse feature" : "the feature itself") +
                                    "; the sparse features are " + names);
      }
      if (!it->hash_as.empty()) {
        return InvalidArgumentError(key + " names a feature that is itself hash_as(" + it->hash_as +
                                    "); hash_as does not chain: name the item feature itself");
      }
      if (it->hex_id != f.hex_id) {
        return InvalidArgumentError(key + ": one of the two is hex_id and the other is not, so equal tokens would not get equal ids");
      }
      hash_index = it->index;
    }
    f.premixed = PremixSeed(DeriveSeed(config_.hash_seed, static_cast<uint64_t>(hash_index)));
    f.missing_id = FoldId(f, HashPremixed("", f.premixed));
    if (f.multi) {
      f.multi_index = static_cast<int>(plan_.multi_fields.size());
      plan_.multi_fields.push_back(f.index);
    }
  }
  return OkStatus();
}

Status RolePlanner::PlanGroupKey(bool group_hex, bool stats_pass) {
  const std::string& group_key = config_.schema.group_key;
  if (group_key.empty()) return OkStatus();
  auto it = by_name_.find(group_key);
  if (it == by_name_.end()) {
    return InvalidArgumentError("data.schema.group_key names column \"" + group_key +
                                "\", which is not among the columns (" + plan_.layout + ")");
  }
  if (it->second == plan_.label_column) return InvalidArgumentError("data.schema.group_key cannot be the label column");
  if (plan_.columns[it->second].is_list) {
    return InvalidArgumentError("data.schema.group_key: column \"" + group_key + "\" is a list");
  }
  plan_.group_column = it->second;
  plan_.has_group = !stats_pass;
  plan_.group_hex = group_hex;
  Use(plan_.group_column);
  return OkStatus();
}

Status RolePlanner::PlanFilters() {
  for (const std::string& text : config_.filters) {
    Result<RowFilter> rf = ParseRowFilter(text);
    if (!rf.ok()) return rf.status().WithContext("data.filters");
    FilterPlan fp;
    fp.filter = std::move(rf).value();
    RECTRAIN_ASSIGN_OR_RETURN(fp.column, Find(fp.filter.column, "data.filters: \"" + fp.filter.text + "\""));
    if (plan_.columns[fp.column].is_list) {
      return InvalidArgumentError("data.filters: \"" + fp.filter.text + "\": column \"" + fp.filter.column + "\" is a list");
    }
    Use(fp.column);
    plan_.filters.push_back(std::move(fp));
  }
  return OkStatus();
}

// The stats pass reads only the features with a stats step, as dense values up to that step.
void KeepStatsFeatures(std::vector<FeaturePlan> dense, std::vector<FeaturePlan> sparse, ParsePlan& plan) {
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
}

void PlanDownsampling(const DataConfig& config, ParsePlan& plan) {
  const double rate = config.negative_downsampling;  // validated by the reader
  if (!(rate < 1)) return;  // also NaN, as the reader refuses it
  plan.downsample = true;
  plan.keep_negative_below = static_cast<uint64_t>(std::ldexp(rate, 64) >= 18446744073709551615.0 ? 18446744073709551615.0
                                                                                                 : std::ldexp(rate, 64));
  plan.downsample_seed = DeriveSeed(config.hash_seed, 0x646f776eULL);  // "down"
}

}  // namespace

Result<ParsePlan> BuildParsePlan(const DataConfig& config, const std::vector<std::string>& header_columns,
                                 const std::vector<bool>& list_columns, bool stats_pass) {
  ParsePlan plan;
  plan.format = config.schema.format;
  RECTRAIN_ASSIGN_OR_RETURN(DeclaredFeatures declared, PlanColumns(config.schema, header_columns, list_columns, plan));
  RolePlanner roles(config, plan, declared.where);
  RECTRAIN_RETURN_IF_ERROR(roles.IndexColumns());
  RECTRAIN_RETURN_IF_ERROR(roles.PlanLabel());
  std::vector<FeaturePlan> dense, sparse;
  for (size_t i = 0; i < declared.dense.size(); ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(FeaturePlan f, roles.CompileFeature(declared.dense[i], true, static_cast<int>(i)));
    dense.push_back(std::move(f));
  }
  for (size_t i = 0; i < declared.sparse.size(); ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(FeaturePlan f, roles.CompileFeature(declared.sparse[i], false, static_cast<int>(i)));
    sparse.push_back(std::move(f));
  }
  bool group_hex = false;
  RECTRAIN_RETURN_IF_ERROR(roles.CheckTransformsUsed(&group_hex));
  if (stats_pass) {
    KeepStatsFeatures(std::move(dense), std::move(sparse), plan);
  } else {
    plan.dense = std::move(dense);
    plan.sparse = std::move(sparse);
  }
  RECTRAIN_RETURN_IF_ERROR(roles.FinishFeatures());
  RECTRAIN_RETURN_IF_ERROR(roles.PlanGroupKey(group_hex, stats_pass));
  RECTRAIN_RETURN_IF_ERROR(roles.PlanFilters());
  if (!stats_pass) PlanDownsampling(config, plan);
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

}  // namespace rectrain::data::internal
