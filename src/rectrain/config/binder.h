// rectrain/config/binder.h: strict, typed binding of a YAML document to program settings.
//
// A ConfigBinder holds one parsed YAML document (a tree of maps, lists and scalars) plus any
// `--set path=value` overrides. Code binds settings by calling typed getters (Int, Float,
// String, ...) with a dotted path, a default and a valid range. Every getter records the path
// as known and its effective value (for ResolvedYaml()). A getter never fails: on a wrong
// type or an out-of-range value it records an error and returns the default, so one pass
// collects every problem. Finish() then adds an error for every key present in the document
// that no getter read (naming its full path, e.g. `model.hiden`, and the nearest known key by
// edit distance) and returns all errors together in one InvalidArgument Status.
//
// Error lines look like (one per problem, in document order for unknown keys):
//   model.hiden: unknown key; did you mean model.hidden? (config.yaml:7:3)
//   train.epochs: -1 is out of range [1, 1000000] (config.yaml:12:11)
//   model.hidden: expected a list of integers, got "abc" (--set model.hidden=abc)
//   model.type: "deepfn" is not one of lr, fm, wide_deep, deepfm, dcn_v2; did you mean deepfm? (...)
// The message of the Status returned by Finish() is "invalid configuration: <line>" for one
// error, or "invalid configuration (N errors):\n  <line>\n  <line>..." for several.
//
// Thread safety: a ConfigBinder is used by one thread.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(ConfigBinder b, ConfigBinder::FromYamlFile("run.yaml"));
//   RECTRAIN_RETURN_IF_ERROR(b.ApplySet("model.hidden=[256,128]"));
//   int64_t epochs = b.Int("train.epochs", 1, Range::Closed(1, 1000000));
//   std::string type = b.String("model.type", "deepfm", {"lr", "fm", "deepfm"});
//   RECTRAIN_RETURN_IF_ERROR(b.Finish());
//   WriteFile("config.yaml", b.ResolvedYaml());
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::config {

// Limits of a config document (docs/config.md "Limits"). They apply while the text is parsed,
// before any value is bound, so a hostile document (a YAML alias bomb, a deep alias chain, a
// huge or endless file) is refused in milliseconds with bounded memory:
//   - kMaxConfigBytes: the text of one file or --set value;
//   - kMaxConfigValues: the values of a document counted after expanding YAML aliases (every
//     map, list and scalar is one): yaml-cpp shares an aliased node, our tree copies it, so
//     ten lines of anchors can name 10^6 values;
//   - kMaxConfigDepth: maps and lists nested in each other (an alias chain nests as deep as
//     it is long), also the segments of a --set path;
//   - kMaxReportedErrors: error lines in one Finish() message; more are counted, not listed.
inline constexpr int64_t kMaxConfigBytes = int64_t{4} << 20;
inline constexpr int64_t kMaxConfigValues = 100000;
inline constexpr int kMaxConfigDepth = 64;
inline constexpr int kMaxReportedErrors = 50;

// Valid numeric interval; formats itself as "[1, 100]", "(0, +inf)", ...
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;  // min itself is excluded
  bool max_open = false;

  static Range Any() { return {}; }
  static Range Closed(double lo, double hi) { return {lo, hi, false, false}; }
  static Range AtLeast(double lo) { return {lo, std::numeric_limits<double>::infinity(), false, false}; }
  static Range Positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
  // [lo, hi)
  static Range HalfOpen(double lo, double hi) { return {lo, hi, false, true}; }

  bool Contains(double v) const;
  // The same for an integer, compared exactly (a double holds integers exactly only to 2^53).
  bool ContainsInteger(int64_t v) const;
  std::string ToString() const;
};

// Parses a byte size: an integer, or a number with a unit B, KB, MB, GB, TB (powers of 1000)
// or KiB, MiB, GiB, TiB (powers of 1024); case-insensitive, optional space ("8GiB", "1.5 GB").
Result<int64_t> ParseByteSize(std::string_view text);
// Formats a byte count the way ParseByteSize reads it back exactly ("8GiB", "1536MiB", "1000").
std::string FormatByteSize(int64_t bytes);

// Levenshtein distance (used for "did you mean" suggestions).
int EditDistance(std::string_view a, std::string_view b);

// What one getter declared about its key: the schema as bound, in binding order (each path
// once). Tests hold it against docs/config.md and try every number at its range's edges.
struct KeySpec {
  enum class Type : uint8_t { kInt, kFloat, kDouble, kBool, kString, kStringList, kIntList, kDoubleList, kIntMap,
                              kStringMap, kBytes };
  std::string path;
  Type type = Type::kString;
  Range range;                       // numbers: of the value, of every item, of every map value
  std::vector<std::string> choices;  // kString, kStringMap: the valid values (empty: any text)

  // kInt, kFloat, kDouble, kIntList, kDoubleList, kIntMap, kBytes.
  bool numeric() const;
};

class ConfigBinder {
 public:
  // Parses `text` as one YAML document. `source` names it in messages ("config.yaml"). An
  // empty document is an empty map. Errors: InvalidArgument with source:line:col for syntax
  // errors, a second document, or when the top level is not a map; InvalidArgument naming the
  // limit when the text passes one of the limits above.
  static Result<ConfigBinder> FromYamlString(std::string_view text, std::string source);
  // Reads (at most kMaxConfigBytes + 1 bytes: a FIFO or /dev/zero is refused, not read
  // forever) and parses a file. NotFound if it cannot be opened.
  static Result<ConfigBinder> FromYamlFile(const std::string& path);

  ConfigBinder(ConfigBinder&&) noexcept;
  ConfigBinder& operator=(ConfigBinder&&) noexcept;
  ~ConfigBinder();

  // Applies one override `a.b.c=value`; value is parsed as YAML (scalar, [list] or {map});
  // text that is not valid YAML is taken as a plain string. Intermediate maps are created.
  // Errors (InvalidArgument, immediately): no '=', an empty path or segment, a path of more
  // than kMaxConfigDepth segments, a value past the limits above, or a path that runs through
  // a scalar or list. A path that names no known key is reported by Finish().
  [[nodiscard]] Status ApplySet(std::string_view assignment);

  // Typed getters. Each marks `path` as known and records its effective value and its KeySpec.
  // Missing key (or an explicit YAML null for lists/maps/strings) -> default. Wrong type / out
  // of range -> error recorded, default returned. Numbers must be finite (".inf" and ".nan"
  // are errors whatever the range), and a Float within the range of a 32-bit float.
  int64_t Int(std::string_view path, int64_t def, Range range = Range::Any());
  double Double(std::string_view path, double def, Range range = Range::Any());
  float Float(std::string_view path, float def, Range range = Range::Any());
  bool Bool(std::string_view path, bool def);
  // `choices` non-empty: the value must be one of them (error suggests the nearest).
  std::string String(std::string_view path, std::string def,
                     const std::vector<std::string>& choices = {});
  // A list of strings; a single scalar is accepted as a one-element list.
  std::vector<std::string> StringList(std::string_view path, std::vector<std::string> def);
  std::vector<int64_t> IntList(std::string_view path, std::vector<int64_t> def,
                               Range range = Range::Any());
  // A list of numbers; a single number is accepted as a one-element list.
  std::vector<double> DoubleList(std::string_view path, std::vector<double> def, Range range = Range::Any());
  // A map from arbitrary keys to integers (all of its children count as known).
  std::map<std::string, int64_t> IntMap(std::string_view path, std::map<std::string, int64_t> def,
                                        Range range = Range::Any());
  // A map from arbitrary keys to strings; `choices` non-empty restricts the values.
  std::map<std::string, std::string> StringMap(std::string_view path,
                                               std::map<std::string, std::string> def,
                                               const std::vector<std::string>& choices = {});
  // A byte size (ParseByteSize); the resolved config shows it as FormatByteSize.
  int64_t Bytes(std::string_view path, int64_t def, Range range = Range::AtLeast(0));

  // True if `path` is present in the document (does not mark it known).
  bool Has(std::string_view path) const;
  // Records a validation error for `path` (the key's location is appended when present).
  void AddError(std::string_view path, std::string_view message);

  // Adds an error per unknown key and returns every error recorded, or OK (the message lists
  // the first kMaxReportedErrors and counts the rest).
  [[nodiscard]] Status Finish();
  // Every key read, with its effective value, as YAML (keys in the order they were bound).
  std::string ResolvedYaml() const;
  // Individual error lines recorded so far (after Finish(): including unknown keys).
  const std::vector<std::string>& errors() const;
  // Every key a getter read, with its type, range and choices (see KeySpec).
  const std::vector<KeySpec>& keys() const;

 private:
  struct Impl;
  explicit ConfigBinder(std::unique_ptr<Impl> impl);
  template <typename T, typename Parse, typename Format>
  std::vector<T> NumberList(std::string_view path, std::vector<T> def, Range range, KeySpec::Type list_type,
                            const char* what, Parse parse,
                            Format format);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::config
