// rectrain/data/row_parser.h: rows handed over one by one (a serving request, a line to score)
// turned into a Batch exactly as the reader turns a file's lines into one: the same parse plan,
// transforms and feature ids. What the reader computes from the training data, the feature
// statistics of standardize / quantiles, is frozen instead (BatchReader::row_layout() at export
// time, DataConfig::feature_stats when parsing), so a row is transformed the same wherever it is parsed.
//
// Serving rows have no label to learn from and must all be answered: the parser drops the row
// filters and negative downsampling, and a row given by its fields may leave the label out.
//
// Thread safety: a RowParser is immutable after Create except for its scratch, so one parser
// belongs to one thread at a time (make one per thread; Create is cheap once stats are frozen).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/data/batch.h"
#include "rectrain/data/reader.h"
#include "rectrain/data/transform.h"

namespace rectrain::data {

class RowParser {
 public:
  // `config`: the training data config; `layout`: its reader's row_layout() (a text format:
  // criteo, csv, tsv, libsvm, libffm; Parquet rows have no text line: InvalidArgument).
  static Result<std::unique_ptr<RowParser>> Create(DataConfig config, const RowLayout& layout);
  ~RowParser();

  // The input's columns in line order (criteo: label, I1..I13, C1..C26); -1 when there is none.
  const std::vector<std::string>& columns() const;
  int label_column() const;
  const std::vector<std::string>& dense_names() const;
  const std::vector<std::string>& sparse_names() const;
  // True for criteo/csv/tsv: rows may be given by column name (LineFromFields).
  bool has_named_columns() const;

  // A line of the training layout from fields by column index; an absent field (nullopt) is
  // empty (a missing value: the feature's fill), the label defaults to 0. InvalidArgument names
  // the column when a value cannot be written into the layout (a line break; a delimiter in a
  // format without quoting).
  Result<std::string> LineFromFields(std::span<const std::optional<std::string_view>> fields) const;

  // Parses every line (the training files' layout, label included) into *out, row i from line
  // i. A bad line fails the whole call with InvalidArgument "<source>:<i+1>:<col>: ..." (the
  // reader's message: column, value and the fix).
  Status ParseLines(std::span<const std::string> lines, std::string_view source, Batch* out);

 private:
  struct Impl;
  explicit RowParser(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::data
