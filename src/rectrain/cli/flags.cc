#include "rectrain/cli/flags.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "rectrain/cli/exit_codes.h"
#include "rectrain/config/binder.h"

namespace rectrain::cli {

FlagParser::FlagParser(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

void FlagParser::String(const std::string& name, std::string* out, const std::string& help) {
  flags_.push_back({name, Kind::kString, out, help});
}
void FlagParser::Int(const std::string& name, int64_t* out, const std::string& help) {
  flags_.push_back({name, Kind::kInt, out, help});
}
void FlagParser::Repeated(const std::string& name, std::vector<std::string>* out, const std::string& help) {
  flags_.push_back({name, Kind::kRepeated, out, help});
}
void FlagParser::Bool(const std::string& name, bool* out, const std::string& help) {
  flags_.push_back({name, Kind::kBool, out, help});
}
void FlagParser::AddParsed(const std::string& name, const std::string& help,
                           std::function<Status(const std::string&)> parse) {
  flags_.push_back({name, Kind::kParsed, nullptr, help, false, std::move(parse)});
}
void FlagParser::Positional(const std::string& name, std::string* out, bool required,
                            const std::string& help) {
  positionals_.push_back({name, out, required, help});
}

FlagParser::Flag* FlagParser::Find(const std::string& name) {
  for (auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string FlagParser::UnknownFlag(const std::string& name) const {
  std::string msg = "unknown flag --" + name + " for " + command_;
  int best = 1 << 30;
  std::string best_name;
  for (const auto& g : flags_) {
    int d = config::EditDistance(name, g.name);
    if (d < best) {
      best = d;
      best_name = g.name;
    }
  }
  if (!best_name.empty() && best <= std::max<int>(2, static_cast<int>(name.size()) / 2)) {
    msg += "; did you mean --" + best_name + "?";
  }
  return msg;
}

Status FlagParser::Store(Flag& f, const std::string& value) {
  switch (f.kind) {
    case Kind::kString:
      *static_cast<std::string*>(f.out) = value;
      break;
    case Kind::kRepeated:
      static_cast<std::vector<std::string>*>(f.out)->push_back(value);
      break;
    case Kind::kInt: {
      int64_t v = 0;
      auto res = std::from_chars(value.data(), value.data() + value.size(), v);
      if (res.ec != std::errc() || res.ptr != value.data() + value.size()) {
        return InvalidArgumentError("flag --" + f.name + " expects an integer, got \"" + value + "\"");
      }
      *static_cast<int64_t*>(f.out) = v;
      break;
    }
    case Kind::kParsed:
      return f.parse(value);
    case Kind::kBool:
      *static_cast<bool*>(f.out) = true;
      break;
  }
  return OkStatus();
}

Status FlagParser::Parse(const std::vector<std::string>& args) {
  size_t next_pos = 0;
  const std::string usage_hint = " (see " + command_ + " --help)";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      help_requested_ = true;
      return OkStatus();
    }
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2);
      std::string value;
      bool has_value = false;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      Flag* f = Find(name);
      if (f == nullptr) return InvalidArgumentError(UnknownFlag(name) + usage_hint);
      if (f->kind == Kind::kBool) {
        if (has_value) return InvalidArgumentError("flag --" + name + " takes no value" + usage_hint);
        *static_cast<bool*>(f->out) = true;
        f->seen = true;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= args.size()) {
          return InvalidArgumentError("flag --" + name + " needs a value" + usage_hint);
        }
        value = args[++i];
      }
      if (f->seen && f->kind != Kind::kRepeated) {
        return InvalidArgumentError("flag --" + name + " given twice" + usage_hint);
      }
      f->seen = true;
      RECTRAIN_RETURN_IF_ERROR(Store(*f, value));
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return InvalidArgumentError("unknown flag " + arg + " for " + command_ + usage_hint);
    }
    if (next_pos >= positionals_.size()) {
      return InvalidArgumentError("unexpected argument \"" + arg + "\" for " + command_ + usage_hint);
    }
    *positionals_[next_pos++].out = arg;
  }
  for (size_t p = next_pos; p < positionals_.size(); ++p) {
    if (positionals_[p].required) {
      return InvalidArgumentError(command_ + " needs " + positionals_[p].name + usage_hint);
    }
  }
  return OkStatus();
}

std::string FlagParser::Help() const {
  std::string out = "usage: " + command_ + " " + synopsis_ + "\n\n" + description_ + "\n";
  if (!positionals_.empty() || !flags_.empty()) out += "\n";
  auto line = [&](const std::string& left, const std::string& help) {
    std::string l = "  " + left;
    if (l.size() < 26) l.resize(26, ' ');
    else l += "  ";
    out += l + help + "\n";
  };
  for (const auto& p : positionals_) line(p.name, p.help);
  for (const auto& f : flags_) {
    std::string left = "--" + f.name;
    if (f.kind == Kind::kInt) left += " N";
    if (f.kind == Kind::kString || f.kind == Kind::kRepeated || f.kind == Kind::kParsed) left += " VALUE";
    line(left, f.help + (f.kind == Kind::kRepeated ? " (repeatable)" : ""));
  }
  line("-h, --help", "show this help");
  return out;
}

std::optional<int> ParseOrExit(FlagParser& flags, const std::vector<std::string>& args, std::string_view command) {
  if (Status s = flags.Parse(args); !s.ok()) return ReportError(command, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

Result<std::chrono::system_clock::time_point> ParseUntil(std::string_view text, std::chrono::system_clock::time_point now) {
  auto bad = [&]() {
    return InvalidArgumentError("--until \"" + std::string(text) +
                                "\": expected a duration (90s, 30m, 2h, 1d), a local date and time "
                                "(2026-12-05T10:00[:SS], Z for UTC) or a time of day (18:30)");
  };
  std::string t(text);
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  // A duration: digits and a unit.
  if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0])) && std::string("smhd").find(t.back()) != std::string::npos &&
      t.find_first_not_of("0123456789") == t.size() - 1) {
    const int64_t n = std::stoll(t.substr(0, t.size() - 1));
    const int64_t unit = t.back() == 's' ? 1 : t.back() == 'm' ? 60 : t.back() == 'h' ? 3600 : 86400;
    if (n <= 0 || n > 3650LL * 86400 / unit) return bad();
    return now + std::chrono::seconds(n * unit);
  }
  std::tm tm{};
  const time_t now_t = std::chrono::system_clock::to_time_t(now);
  localtime_r(&now_t, &tm);
  const bool utc = !t.empty() && t.back() == 'Z';
  if (utc) t.pop_back();
  const char* end = nullptr;
  if (t.size() == 5 && t[2] == ':') {  // HH:MM today (or tomorrow)
    end = strptime(t.c_str(), "%H:%M", &tm);
    if (end == nullptr || *end != '\0') return bad();
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    auto at = std::chrono::system_clock::from_time_t(mktime(&tm));
    return at > now ? at : at + std::chrono::hours(24);
  }
  tm = std::tm{};
  end = strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) end = strptime(t.c_str(), "%Y-%m-%dT%H:%M", &tm);
  if (end == nullptr || *end != '\0') return bad();
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(utc ? timegm(&tm) : mktime(&tm));
}

}  // namespace rectrain::cli
