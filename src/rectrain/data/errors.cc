#include "rectrain/data/errors.h"

namespace rectrain::data::errors {

std::string Snippet(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t n = std::min<size_t>(text.size(), kSnippetChars);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > n) out += "...";
  return out;
}

static std::string Where(std::string_view file, int64_t line, int64_t column) {
  std::string s(file);
  if (line <= 0) {  // a row that is not a line of a file (a stream message): "<source>, column C"
    if (column > 0) s += ", column " + std::to_string(column);
    return s;
  }
  s += ':' + std::to_string(line);
  if (column > 0) s += ':' + std::to_string(column);
  return s;
}

std::string BadField(std::string_view file, int64_t line, int64_t column, std::string_view field,
                     std::string_view expected, std::string_view text) {
  return Where(file, line, column) + ": field " + std::string(field) + ": expected " +
         std::string(expected) + ", got \"" + Snippet(text) + "\"";
}

std::string BadValue(std::string_view file, int64_t row, std::string_view field,
                     std::string_view expected, std::string_view text) {
  return std::string(file) + ": row " + std::to_string(row) + ": field " + std::string(field) +
         ": expected " + std::string(expected) + ", got \"" + Snippet(text) + "\"";
}

std::string WrongColumnCount(std::string_view file, int64_t line, int64_t column, int expected,
                             int found, std::string_view layout, std::string_view line_text) {
  return Where(file, line, column) + ": expected " + std::to_string(expected) + " fields (" +
         std::string(layout) + "), found " + std::to_string(found) + ": \"" +
         Snippet(line_text) + "\"";
}

std::string BadQuote(std::string_view file, int64_t line, int64_t column, std::string_view field,
                     std::string_view text) {
  return Where(file, line, column) + ": field " + std::string(field) +
         ": unterminated or malformed quoted field: \"" + Snippet(text) + "\"";
}

std::string LineTooLong(std::string_view file, int64_t line, int64_t max_bytes) {
  return Where(file, line, 0) + ": line is longer than " + std::to_string(max_bytes) +
         " bytes; rows must be newline-separated text";
}

std::string StrictBadRow(std::string_view bad_row_message) {
  return std::string(bad_row_message) + "; " + std::string(kMaxBadRowsHint);
}

std::string TooManyBadRows(int64_t count, int64_t max_bad_rows, std::string_view rejects_file,
                           std::string_view last_message) {
  std::string s = std::to_string(count) + " bad rows exceed data.max_bad_rows = " +
                  std::to_string(max_bad_rows);
  if (!rejects_file.empty()) {
    s += " (rejected rows are listed in " + std::string(rejects_file) + ")";
  }
  s += "; the last one: " + std::string(last_message);
  return s;
}

std::string BadPair(std::string_view file, int64_t line, int64_t column, DataFormat format,
                    std::string_view text) {
  const bool ffm = format == DataFormat::kLibffm;
  return Where(file, line, column) + ": expected a " + std::string(FormatName(format)) + " pair " +
         (ffm ? "<field>:<index>:<value> (e.g. \"3:17:1\")" : "<index>:<value> (e.g. \"17:1\")") +
         " with non-negative integer " + (ffm ? "field and index" : "index") +
         " and a finite value, got \"" + Snippet(text) + "\"";
}

std::string BadWeight(std::string_view file, int64_t line, int64_t column, DataFormat format,
                      std::string_view feature, std::string_view text) {
  return Where(file, line, column) + ": categorical pair \"" + Snippet(text) + "\" of feature " +
         std::string(feature) +
         " has a value other than 1, but rectrain ids carry no weight: only 1 is accepted; "
         "declare the " + (format == DataFormat::kLibffm ? "field" : "index") +
         " in data.dense to use the value as a dense feature, or write the value as 1";
}

std::string UndeclaredField(std::string_view file, int64_t line, int64_t column, int64_t key,
                            std::string_view text) {
  const std::string k = std::to_string(key);
  return Where(file, line, column) + ": field " + k + " in \"" + Snippet(text) +
         "\" is not declared; add \"" + k +
         "\" to data.sparse or data.dense (a range such as \"0..38\" declares many fields)";
}

std::string DuplicateDenseKey(std::string_view file, int64_t line, int64_t column,
                              DataFormat format, int64_t key, std::string_view text) {
  return Where(file, line, column) + ": dense " + (format == DataFormat::kLibffm ? "field " : "index ") +
         std::to_string(key) + " appears twice in the line (\"" + Snippet(text) +
         "\"); a dense feature takes one value per row";
}

std::string EmptyFile(std::string_view path, bool has_header) {
  return has_header ? std::string(path) + " has a header but no rows"
                    : std::string(path) + " is empty: it has no rows";
}

std::string BinaryFileAsText(std::string_view path, std::string_view kind, std::string_view magic,
                             DataFormat format, std::string_view fix) {
  return std::string(path) + " is a " + std::string(kind) + " (it starts with " + std::string(magic) +
         ") but data.format is " + std::string(FormatName(format)) + "; set data.format: " + std::string(fix) +
         " (or auto), or point data.train/data.valid at the text files";
}

}  // namespace rectrain::data::errors
