// rectrain/data/row_parser.h: rows handed over one by one (a serving request, a line to score)
// turned into a Batch exactly as the reader turns a file's lines into one: the same parse plan,
// transforms and feature ids. What the reader computes from the training data, the feature
// statistics of standardize / quantiles, is frozen instead (BatchReader::row_layout() at export
// time, DataConfig::feature_stats when parsing), so a row is transformed the same wherever it is parsed.
//
// Serving rows have no label to learn from and must all be answered: the parser drops the row
// filters and negative downsampling, and a row given by its fields may leave the label out.
// Training rows that arrive one by one (a stream, stream/) are the other use: Options::training
// keeps the filters, downsampling and group key of the config and requires the label, and rows
// are added one at a time (BeginBatch, AddLine, FinishBatch) so that a bad one is reported alone.
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
  struct Options {
    // false (serving): no filters, downsampling or group key; a row by fields may omit the label.
    // true (training): the config's filters, negative downsampling and group key apply, and a
    // row by fields (LineFromFields, LineFromJson) without its label is an error.
    bool training = false;
  };
  // `config`: the training data config; `layout`: its reader's row_layout() (a text format:
  // criteo, csv, tsv, libsvm, libffm; Parquet rows have no text line: InvalidArgument).
  static Result<std::unique_ptr<RowParser>> Create(DataConfig config, const RowLayout& layout,
                                                   Options options);
  static Result<std::unique_ptr<RowParser>> Create(DataConfig config, const RowLayout& layout) {
    return Create(std::move(config), layout, Options{});
  }
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
  // A line of the training layout from a JSON object of column: value (a string, a number or
  // null = missing), as `rectrain serve` takes rows. InvalidArgument names the problem: not an
  // object, an unknown column (listing the known ones), a value of another type, or (training)
  // no label.
  Result<std::string> LineFromJson(std::string_view object_text) const;

  // The text of column `column` (an index of columns()) in a line of the training layout, a
  // quoted field unescaped (valid until the next call), or InvalidArgument when the line has no
  // such field. Named-column layouts only (criteo, csv, tsv; has_named_columns()).
  Result<std::string_view> Field(std::string_view line, int column);

  // Parses every line (the training files' layout, label included) into *out, row i from line
  // i. A bad line fails the whole call with InvalidArgument "<source>:<i+1>:<col>: ..." (the
  // reader's message: column, value and the fix).
  Status ParseLines(std::span<const std::string> lines, std::string_view source, Batch* out);

  // Row by row: BeginBatch, then AddLine per line, then FinishBatch writes the rows added since
  // BeginBatch into *out (its buffers are reused). AddLine returns InvalidArgument for a bad
  // line, "<source>:<line_no>:<column>: ..." (the reader's message; line_no 0: "<source>,
  // column C: ..."), and adds nothing; a line that a filter or downsampling drops (training) is
  // OK with *kept false.
  void BeginBatch(int64_t expected_rows);
  Status AddLine(std::string_view line, std::string_view source, int64_t line_no, bool* kept);
  int64_t rows() const;
  // Lines dropped since BeginBatch by the row filters / negative downsampling (training).
  int64_t rows_filtered() const;
  int64_t rows_downsampled() const;
  void FinishBatch(Batch* out);

 private:
  struct Impl;
  explicit RowParser(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::data
