// rectrain/data/errors.h: the text of every error the data module reports, in one place so that
// tests (and users grepping logs) can match it. Each bad-row message says where (file:line:column
// and field name), what (the offending text, escaped and truncated), what was expected, and how
// to relax it (kMaxBadRowsHint). A row that is not a line of a file (a stream message) is given
// line 0: its place reads "<source>, column C".
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rectrain/data/format.h"

namespace rectrain::data::errors {

inline constexpr std::string_view kMaxBadRowsHint =
    "set data.max_bad_rows: N to skip up to N bad rows (they are counted and reported)";
inline constexpr std::string_view kExpectedLabel = "0 or 1";
inline constexpr std::string_view kExpectedDense = "a finite number, or an empty field for missing";
inline constexpr std::string_view kExpectedNumber =
    "a finite number (its features.transforms steps are numeric)";
inline constexpr std::string_view kExpectedHexId =
    "an id of 16 hex digits (features.transforms step hex_id)";
inline constexpr int kSnippetChars = 40;

// The offending text as shown in messages: bytes outside printable ASCII become \xNN (tab \t,
// CR \r), '"' and '\' are escaped, and text over kSnippetChars bytes is cut with "...".
std::string Snippet(std::string_view text);

// "<file>:<line>:<column>: field <field>: expected <expected>, got \"<snippet>\""
std::string BadField(std::string_view file, int64_t line, int64_t column, std::string_view field,
                     std::string_view expected, std::string_view text);

// Parquet: "<file>: row <row>: field <field>: expected <expected>, got \"<snippet>\"" (row is
// 1-based within the file).
std::string BadValue(std::string_view file, int64_t row, std::string_view field,
                     std::string_view expected, std::string_view text);

// "<file>:<line>:<column>: expected <expected> fields (<layout>), found <found>: \"<snippet>\""
std::string WrongColumnCount(std::string_view file, int64_t line, int64_t column, int expected,
                             int found, std::string_view layout, std::string_view line_text);

// "<file>:<line>:<column>: field <field>: unterminated or malformed quoted field: \"<snippet>\""
std::string BadQuote(std::string_view file, int64_t line, int64_t column, std::string_view field,
                     std::string_view text);

// "<file>:<line>: line is longer than <max> bytes; rows must be newline-separated text"
std::string LineTooLong(std::string_view file, int64_t line, int64_t max_bytes);

// The strict-mode error: "<bad row message>; <kMaxBadRowsHint>".
std::string StrictBadRow(std::string_view bad_row_message);

// "<count> bad rows exceed data.max_bad_rows = <max> (rejected rows are listed in <rejects>);
//  the last one: <bad row message>" — the parenthesis only when a rejects file is set.
std::string TooManyBadRows(int64_t count, int64_t max_bad_rows, std::string_view rejects_file,
                           std::string_view last_message);

// libsvm / libffm (docs/formats/libsvm.md). `format` is kLibsvm or kLibffm.
inline constexpr std::string_view kExpectedPairLabel = "0 or 1 (or -1 / +1)";
// "<file>:<line>:<column>: expected a <format> pair <index>:<value> (libffm:
//  <field>:<index>:<value>) with a non-negative integer index, got \"<snippet>\""
std::string BadPair(std::string_view file, int64_t line, int64_t column, DataFormat format,
                    std::string_view text);
// "<file>:<line>:<column>: index <index> of feature <feature> has value <value> in \"<pair>\",
//  but categorical ids carry no weight: only 1 is accepted; declare the index/field in
//  data.dense to use the value as a dense feature, or write the value as 1"
std::string BadWeight(std::string_view file, int64_t line, int64_t column, DataFormat format,
                      std::string_view feature, std::string_view text);
// "<file>:<line>:<column>: field <key> in \"<pair>\" is not declared; add \"<key>\" to
//  data.sparse or data.dense (a range such as \"0..38\" declares many fields)"
std::string UndeclaredField(std::string_view file, int64_t line, int64_t column, int64_t key,
                            std::string_view text);
// "<file>:<line>:<column>: dense <index|field> <key> appears twice in the line (\"<pair>\"); a
//  dense feature takes one value per row"
std::string DuplicateDenseKey(std::string_view file, int64_t line, int64_t column,
                              DataFormat format, int64_t key, std::string_view text);

// "<path> is empty: it has no rows" / "<path> has a header but no rows".
std::string EmptyFile(std::string_view path, bool has_header);

// "<path> is a <Parquet file | rectrain sample cache> (it starts with <magic>) but data.format is
//  <format>; set data.format: <parquet | cache> (or auto)" — a binary file given to a text format.
std::string BinaryFileAsText(std::string_view path, std::string_view kind, std::string_view magic,
                             DataFormat format, std::string_view fix);

}  // namespace rectrain::data::errors
