// rectrain/data/row_parser.cc: see row_parser.h.
#include "rectrain/data/row_parser.h"

#include <algorithm>

#include "rectrain/data/internal/text_parser.h"

namespace rectrain::data {

struct RowParser::Impl {
  internal::ParsePlan plan;
  std::vector<std::string> columns;
  std::unique_ptr<internal::LineParser> parser;
  internal::RowBlock block;
};

RowParser::RowParser(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RowParser::~RowParser() = default;

Result<std::unique_ptr<RowParser>> RowParser::Create(DataConfig config, const RowLayout& layout) {
  if (layout.format == "parquet" || layout.format == "cache") {
    return InvalidArgumentError("a model trained on " + layout.format +
                                " files cannot parse rows of text; train on criteo, csv, tsv, libsvm or libffm "
                                "files (rectrain data convert --to tsv) to serve it");
  }
  config.schema.format = layout.format;
  config.filters.clear();               // every request row gets an answer
  config.negative_downsampling = 1.0;
  config.schema.group_key.clear();
  config.feature_stats = layout.stats;
  auto impl = std::make_unique<Impl>();
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
    return InvalidArgumentError("a " + plan.format + " model takes rows as lines of text, not by column name");
  }
  if (fields.size() != impl_->columns.size()) {
    return InvalidArgumentError("expected " + std::to_string(impl_->columns.size()) + " fields, got " +
                                std::to_string(fields.size()));
  }
  std::string line;
  for (size_t c = 0; c < fields.size(); ++c) {
    if (c > 0) line += plan.delimiter;
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
                                  plan.format + " layout cannot hold; remove it");
    }
  }
  return line;
}

Status RowParser::ParseLines(std::span<const std::string> lines, std::string_view source, Batch* out) {
  const internal::ParsePlan& plan = impl_->plan;
  internal::RowBlock& block = impl_->block;
  block.Reset();
  block.Reserve(plan, static_cast<int64_t>(lines.size()));
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t line_no = static_cast<int64_t>(i) + 1;
    std::string_view line = lines[i];
    if (line.find('\n') != std::string_view::npos) {
      return InvalidArgumentError(std::string(source) + ":" + std::to_string(line_no) +
                                  ": a row is one line; it contains a line break");
    }
    if (!impl_->parser->ParseLine(line, line_no, false, &block) || !block.bad.empty()) {
      return InvalidArgumentError(internal::FormatBadRow(plan, block.bad.front(), source, line_no));
    }
  }
  const int64_t n = block.rows;
  const int nd = plan.num_dense(), ns = plan.num_sparse();
  out->size = n;
  out->num_dense = nd;
  out->labels.assign(block.labels.begin(), block.labels.begin() + n);
  out->dense.assign(block.dense.begin(), block.dense.begin() + n * nd);
  out->sparse.resize(static_cast<size_t>(ns));
  out->group_keys.clear();
  out->source = std::string(source);
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
  return OkStatus();
}

}  // namespace rectrain::data
