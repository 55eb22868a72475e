// rectrain/cli/flags.h: a small strict command-line flag parser for the subcommands.
// Flags are `--name value` or `--name=value`; boolean flags take no value. Unknown flags,
// missing values, malformed integers and missing positionals are InvalidArgument errors that
// name the flag (and the nearest known one). `-h` / `--help` sets help_requested().
// Thread safety: single-threaded use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/named_enum.h"
#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::cli {

class FlagParser {
 public:
  // `command` is e.g. "rectrain train"; `synopsis` the usage line after it.
  FlagParser(std::string command, std::string synopsis, std::string description);

  void String(const std::string& name, std::string* out, const std::string& help);
  void Int(const std::string& name, int64_t* out, const std::string& help);
  void Repeated(const std::string& name, std::vector<std::string>* out, const std::string& help);
  void Bool(const std::string& name, bool* out, const std::string& help);
  // A mode, parsed here at the edge: the value must be one of `names` ("flag --precision: "x"
  // is not one of fp32, bf16"); *out keeps its value when the flag is absent. The help lists
  // the names. `names` must outlive the parser (the NamedEnum tables are constexpr globals).
  template <typename E, typename Out>
  void Enum(const std::string& name, Out* out, const NamedEnum<E>& names, const std::string& help) {
    AddParsed(name, help + " (" + names.List() + ")", [out, &names, name](const std::string& value) -> Status {
      RECTRAIN_ASSIGN_OR_RETURN(E v, names.Parse(value, "flag --" + name));
      *out = v;
      return OkStatus();
    });
  }
  // Positionals are filled in order; `required` ones must be present.
  void Positional(const std::string& name, std::string* out, bool required, const std::string& help);

  [[nodiscard]] Status Parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  std::string Help() const;

 private:
  enum class Kind { kString, kInt, kRepeated, kBool, kParsed };
  struct Flag {
    std::string name;
    Kind kind;
    void* out;
    std::string help;
    bool seen = false;
    std::function<Status(const std::string&)> parse;  // kParsed
  };
  void AddParsed(const std::string& name, const std::string& help, std::function<Status(const std::string&)> parse);
  struct Pos {
    std::string name;
    std::string* out;
    bool required;
    std::string help;
  };
  Flag* Find(const std::string& name);
  // "unknown flag --x for <command>; did you mean --y?"
  std::string UnknownFlag(const std::string& name) const;
  // Stores a flag's value (InvalidArgument for a value its kind does not take).
  static Status Store(Flag& f, const std::string& value);
  std::string command_, synopsis_, description_;
  std::vector<Flag> flags_;
  std::vector<Pos> positionals_;
  bool help_requested_ = false;
};

// Parses `args` into `flags` for `command` ("rectrain train"): nullopt when the command goes on;
// else the exit code to return at once: 0 after printing --help to stdout, or a usage error's
// code after ReportError printed it.
std::optional<int> ParseOrExit(FlagParser& flags, const std::vector<std::string>& args, std::string_view command);

// The time of an --until flag, relative to `now`: a duration ("90s", "30m", "2h", "1d", with or
// without a leading '+'), a local date and time ("2026-12-05T10:00" or with ":SS"; a trailing
// 'Z' means UTC), or a local time of day ("18:30": today, or tomorrow once it has passed).
// InvalidArgument shows the accepted forms.
Result<std::chrono::system_clock::time_point> ParseUntil(std::string_view text, std::chrono::system_clock::time_point now);

}  // namespace rectrain::cli
