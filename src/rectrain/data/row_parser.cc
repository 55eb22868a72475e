// rectrain/data/row_parser.cc: see row_parser.h.
#include "rectrain/data/row_parser.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "rectrain/data/internal/text_parser.h"

namespace rectrain::data {

struct RowParser::Impl {
  internal::ParsePlan plan;
  std::vector<std::string> columns;
  std::unique_ptr<internal::LineParser> parser;
  internal::RowBlock block;
  bool training = false;
  std::string field_scratch;  // Field(): an unescaped quoted field
};

RowParser::RowParser(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RowParser::~RowParser() = default;

Result<std::unique_ptr<RowParser>> RowParser::Create(DataConfig config, const RowLayout& layout, Options options) {
  if (layout.format == DataFormat::kParquet || layout.format == DataFormat::kCache) {
    return InvalidArgumentError(std::string("a model trained on ") + FormatName(layout.format) +
                                " files cannot parse rows of text; train on criteo, csv, tsv, libsvm or libffm "
                                "files (rectrain data convert --to tsv) to serve it");
  }
  config.schema.format = layout.format;
  if (!options.training) {
    config.filters.clear();  // every request row gets an answer
    config.negative_downsampling = 1.0;
    config.schema.group_key.clear();
  }
  config.feature_stats = layout.stats;
  auto impl = std::make_unique<Impl>();
  impl->training = options.training;
  RECTRAIN_ASSIGN_OR_RETURN(impl->plan, internal::BuildParsePlan(config, layout.header));
  if (impl->plan.NeedsStats()) {
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<FeatureStats> stats, internal::CheckFrozenStats(impl->plan, layout.stats));
    internal::FillStats(&impl->plan, stats);
  }
  for (const auto& c : impl->plan.columns) impl->columns.push_back(c.name);
  impl->parser = std::make_unique<internal::LineParser>(&impl->plan);
  return std::unique_ptr<RowParser>(new RowParser(std::move(impl)));
}

const std::vector<std::string>& RowParser::columns() const { return impl_->columns; }
int RowParser::label_column() const { return impl_->plan.label_column; }
const std::vector<std::string>& RowParser::dense_names() const { return impl_->plan.dense_names; }
const std::vector<std::string>& RowParser::sparse_names() const { return impl_->plan.sparse_names; }
bool RowParser::has_named_columns() const { return !impl_->plan.pairs; }

Result<std::string> RowParser::LineFromFields(std::span<const std::optional<std::string_view>> fields) const {
  const internal::ParsePlan& plan = impl_->plan;
  if (plan.pairs) {
    return InvalidArgumentError("a " + std::string(FormatName(plan.format)) + " model takes rows as lines of text, not by column name");
  }
  if (fields.size() != impl_->columns.size()) {
    return InvalidArgumentError("expected " + std::to_string(impl_->columns.size()) + " fields, got " +
                                std::to_string(fields.size()));
  }
  std::string line;
  for (size_t c = 0; c < fields.size(); ++c) {
    if (c > 0) line += plan.delimiter;
    if (impl_->training && static_cast<int>(c) == plan.label_column && !fields[c].has_value()) {
      return InvalidArgumentError("the label '" + impl_->columns[c] + "' is missing; a training row needs it");
    }
    std::string_view v = fields[c].value_or(static_cast<int>(c) == plan.label_column ? "0" : "");
    if (v.find_first_of("\n\r") != std::string_view::npos) {
      return InvalidArgumentError("field '" + impl_->columns[c] + "' contains a line break; a row is one line of text");
    }
    const bool special = v.find_first_of(std::string{plan.delimiter, '"'}) != std::string_view::npos;
    if (!special) {
      line += v;
    } else if (plan.quoting) {
      line += '"';
      for (char ch : v) {
        if (ch == '"') line += '"';
        line += ch;
      }
      line += '"';
    } else if (v.find(plan.delimiter) == std::string_view::npos) {
      line += v;  // a quote is plain text in a format without quoting
    } else {
      return InvalidArgumentError("field '" + impl_->columns[c] + "' contains the delimiter, which the " +
                                  FormatName(plan.format) + " layout cannot hold; remove it");
    }
  }
  return line;
}

namespace {

// The text of a JSON value as a field: a string as is, a number as written; else *ok = false.
std::string FieldText(const nlohmann::json& v, bool* ok) {
  *ok = true;
  switch (v.type()) {
    case nlohmann::json::value_t::string: return v.get<std::string>();
    case nlohmann::json::value_t::number_integer: return std::to_string(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return std::to_string(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float: {
      char buf[32];
      auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v.get<double>());
      return std::string(buf, p);
    }
    default: *ok = false; return {};
  }
}

std::string ColumnList(const std::vector<std::string>& cols) {
  std::string s;
  for (size_t i = 0; i < cols.size() && i < 12; ++i) s += (i ? ", " : "") + cols[i];
  if (cols.size() > 12) s += ", ... (" + std::to_string(cols.size()) + " columns)";
  return s;
}

}  // namespace

Result<std::string> RowParser::LineFromJson(std::string_view object_text) const {
  if (!has_named_columns()) {
    return InvalidArgumentError("a " + std::string(FormatName(impl_->plan.format)) + " layout has no named columns: send rows as lines of text");
  }
  nlohmann::json j = nlohmann::json::parse(object_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("not valid JSON");
  if (!j.is_object()) return InvalidArgumentError("expected a JSON object of column: value");
  const std::vector<std::string>& cols = impl_->columns;
  std::vector<std::string> values(cols.size());
  std::vector<std::optional<std::string_view>> fields(cols.size());
  for (const auto& [key, value] : j.items()) {
    const auto it = std::find(cols.begin(), cols.end(), key);
    if (it == cols.end()) return InvalidArgumentError("unknown field \"" + key + "\"; the columns are " + ColumnList(cols));
    if (value.is_null()) continue;
    const size_t c = static_cast<size_t>(it - cols.begin());
    bool ok = false;
    values[c] = FieldText(value, &ok);
    if (!ok) return InvalidArgumentError("field \"" + key + "\": expected a string, a number or null");
    fields[c] = values[c];
  }
  return LineFromFields(fields);
}

Result<std::string_view> RowParser::Field(std::string_view line, int column) {
  const internal::ParsePlan& plan = impl_->plan;
  if (plan.pairs || column < 0 || column >= static_cast<int>(impl_->columns.size())) {
    return InvalidArgumentError("no column " + std::to_string(column) + " in a " + FormatName(plan.format) + " row");
  }
  std::optional<std::string_view> f = internal::NthField(line, plan.delimiter, plan.quoting, column, &impl_->field_scratch);
  if (!f) return InvalidArgumentError("no field " + impl_->columns[static_cast<size_t>(column)] + " (the row has fewer fields, or a bad quote)");
  return *f;
}

void RowParser::BeginBatch(int64_t expected_rows) {
  impl_->block.Reset();
  impl_->block.Reserve(impl_->plan, std::max<int64_t>(1, expected_rows));
}

int64_t RowParser::rows() const { return impl_->block.rows; }
int64_t RowParser::rows_filtered() const { return impl_->block.filtered; }
int64_t RowParser::rows_downsampled() const { return impl_->block.downsampled; }

Status RowParser::AddLine(std::string_view line, std::string_view source, int64_t line_no, bool* kept) {
  internal::RowBlock& block = impl_->block;
  *kept = false;
  if (line.find('\n') != std::string_view::npos) {
    return InvalidArgumentError(std::string(source) + (line_no > 0 ? ":" + std::to_string(line_no) : std::string()) +
                                ": a row is one line; it contains a line break");
  }
  if (block.rows == block.capacity) block.Reserve(impl_->plan, 2 * block.capacity);
  const int64_t before = block.rows;
  if (!impl_->parser->ParseLine(line, 1, false, &block) || !block.bad.empty()) {
    const internal::BadRow bad = block.bad.front();
    block.bad.clear();
    block.rows = before;
    return InvalidArgumentError(internal::FormatBadRow(impl_->plan, bad, source, line_no));
  }
  *kept = block.rows > before;
  return OkStatus();
}

void RowParser::FinishBatch(Batch* out) {
  const internal::ParsePlan& plan = impl_->plan;
  const internal::RowBlock& block = impl_->block;
  const int64_t n = block.rows;
  const int nd = plan.num_dense(), ns = plan.num_sparse();
  out->size = n;
  out->num_dense = nd;
  out->labels.assign(block.labels.begin(), block.labels.begin() + n);
  out->dense.assign(block.dense.begin(), block.dense.begin() + n * nd);
  out->sparse.resize(static_cast<size_t>(ns));
  if (plan.has_group) {
    out->group_keys.assign(block.group.begin(), block.group.begin() + n);
  } else {
    out->group_keys.clear();
  }
  out->first_line = 1;
  std::vector<int> multi_of(static_cast<size_t>(ns), -1);
  for (int k = 0; k < plan.num_multi(); ++k) multi_of[static_cast<size_t>(plan.multi_fields[static_cast<size_t>(k)])] = k;
  for (int f = 0; f < ns; ++f) {
    SparseColumn& col = out->sparse[static_cast<size_t>(f)];
    if (const int k = multi_of[static_cast<size_t>(f)]; k >= 0) {
      const internal::MultiColumn& m = block.multi[static_cast<size_t>(k)];
      col.offsets.assign(m.offsets.begin(), m.offsets.begin() + n + 1);
      col.ids.assign(m.ids.begin(), m.ids.begin() + m.offsets[static_cast<size_t>(n)]);
    } else {
      col.offsets.clear();
      col.ids.resize(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) col.ids[static_cast<size_t>(r)] = block.ids[static_cast<size_t>(r * ns + f)];
    }
  }
}

Status RowParser::ParseLines(std::span<const std::string> lines, std::string_view source, Batch* out) {
  BeginBatch(static_cast<int64_t>(lines.size()));
  for (size_t i = 0; i < lines.size(); ++i) {
    bool kept = false;
    RECTRAIN_RETURN_IF_ERROR(AddLine(lines[i], source, static_cast<int64_t>(i) + 1, &kept));
  }
  FinishBatch(out);
  out->source = std::string(source);
  return OkStatus();
}

}  // namespace rectrain::data
