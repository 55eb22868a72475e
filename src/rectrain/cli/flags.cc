#include "rectrain/cli/flags.h"

#include <charconv>

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
      if (f == nullptr) {
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
        return InvalidArgumentError(msg + usage_hint);
      }
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
      switch (f->kind) {
        case Kind::kString:
          *static_cast<std::string*>(f->out) = value;
          break;
        case Kind::kRepeated:
          static_cast<std::vector<std::string>*>(f->out)->push_back(value);
          break;
        case Kind::kInt: {
          int64_t v = 0;
          auto res = std::from_chars(value.data(), value.data() + value.size(), v);
          if (res.ec != std::errc() || res.ptr != value.data() + value.size()) {
            return InvalidArgumentError("flag --" + name + " expects an integer, got \"" + value + "\"");
          }
          *static_cast<int64_t*>(f->out) = v;
          break;
        }
        case Kind::kBool:
          break;
      }
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
    if (f.kind == Kind::kString || f.kind == Kind::kRepeated) left += " VALUE";
    line(left, f.help + (f.kind == Kind::kRepeated ? " (repeatable)" : ""));
  }
  line("-h, --help", "show this help");
  return out;
}

}  // namespace rectrain::cli
