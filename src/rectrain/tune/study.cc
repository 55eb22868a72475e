#include "rectrain/tune/study.h"

#include "rectrain/config/binder.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

namespace rectrain::tune {
namespace fs = std::filesystem;
namespace {

// Collects every problem of one study file with its position.
class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  void Error(const YAML::Node& at, const std::string& key, const std::string& message) {
    std::string where = source_.empty() ? "study" : source_;
    if (at.IsDefined() && at.Mark().line >= 0) {
      where += ":" + std::to_string(at.Mark().line + 1) + ":" + std::to_string(at.Mark().column + 1);
    }
    errors_.push_back(key + ": " + message + " (" + where + ")");
  }

  // Reports keys of `map` outside `known`, each with the nearest known key.
  void CheckKeys(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& known) {
    if (!map.IsMap()) return;
    for (const auto& kv : map) {
      const std::string k = kv.first.as<std::string>();
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      std::string best;
      int best_d = 1 << 20;
      for (const auto& c : known) {
        const int d = config::EditDistance(k, c);
        if (d < best_d) best_d = d, best = c;
      }
      Error(kv.first, prefix + k,
            "unknown key" + (best_d <= 3 ? "; did you mean " + prefix + best + "?" : "; known: " + Join(known)));
    }
  }

  static std::string Join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  }

  std::optional<double> Number(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) {
      Error(n, key, "expected a number");
      return std::nullopt;
    }
    const std::string t = n.Scalar();
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !std::isfinite(v)) {
      Error(n, key, "expected a number, got \"" + t + "\"");
      return std::nullopt;
    }
    return v;
  }

  int64_t Int(const YAML::Node& map, const char* name, const std::string& prefix, int64_t def, int64_t lo, int64_t hi) {
    const YAML::Node n = map[name];
    if (!n.IsDefined() || n.IsNull()) return def;
    std::optional<double> v = Number(n, prefix + name);
    if (!v) return def;
    if (*v != std::floor(*v) || *v < static_cast<double>(lo) || *v > static_cast<double>(hi)) {
      Error(n, prefix + name, n.Scalar() + " is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return def;
    }
    return static_cast<int64_t>(*v);
  }

  double Real(const YAML::Node& map, const char* name, const std::string& prefix, double def, double lo, double hi,
              bool lo_open) {
    const YAML::Node n = map[name];
    if (!n.IsDefined() || n.IsNull()) return def;
    std::optional<double> v = Number(n, prefix + name);
    if (!v) return def;
    if (*v > hi || *v < lo || (lo_open && *v == lo)) {
      Error(n, prefix + name, n.Scalar() + " is out of range " + std::string(lo_open ? "(" : "[") + Fmt(lo) + ", " + Fmt(hi) + "]");
      return def;
    }
    return *v;
  }

  std::string Choice(const YAML::Node& map, const char* name, const std::string& prefix, std::string def,
                     const std::vector<std::string>& choices) {
    const YAML::Node n = map[name];
    if (!n.IsDefined() || n.IsNull()) return def;
    if (!n.IsScalar()) {
      Error(n, prefix + name, "expected one of " + Join(choices));
      return def;
    }
    if (std::find(choices.begin(), choices.end(), n.Scalar()) == choices.end()) {
      Error(n, prefix + name, "\"" + n.Scalar() + "\" is not one of " + Join(choices));
      return def;
    }
    return n.Scalar();
  }

  static std::string Fmt(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }

  // The YAML text of a value as `--set` takes it (flow style for lists and maps).
  static std::string ValueText(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    YAML::Emitter e;
    e << YAML::Flow << n;
    return e.c_str();
  }

  std::optional<Param> ParseParam(const std::string& key, const YAML::Node& spec) {
    const std::string at = "space." + key;
    if (!spec.IsMap()) {
      Error(spec, at, "expected a domain map such as {choice: [...]} or {loguniform: [1e-4, 1e-2]}");
      return std::nullopt;
    }
    static const std::vector<std::string> kKinds = {"choice", "grid", "uniform", "loguniform", "randint", "quniform"};
    std::vector<std::string> known = kKinds;
    known.push_back("when");
    CheckKeys(spec, at + ".", known);
    Param p;
    p.key = key;
    int kinds = 0;
    for (size_t i = 0; i < kKinds.size(); ++i) {
      const YAML::Node v = spec[kKinds[i]];
      if (!v.IsDefined()) continue;
      ++kinds;
      p.domain.kind = static_cast<DomainKind>(i);
      const std::string vk = at + "." + kKinds[i];
      if (!v.IsSequence()) {
        Error(v, vk, "expected a list");
        return std::nullopt;
      }
      if (p.domain.categorical()) {
        for (const auto& item : v) p.domain.values.push_back(ValueText(item));
      } else {
        const size_t want = p.domain.kind == DomainKind::kQUniform ? 3 : 2;
        if (v.size() != want) {
          Error(v, vk, want == 3 ? "expected [low, high, q]" : "expected [low, high]");
          return std::nullopt;
        }
        std::optional<double> lo = Number(v[0], vk), hi = Number(v[1], vk);
        std::optional<double> q = want == 3 ? Number(v[2], vk) : std::optional<double>(0.0);
        if (!lo || !hi || !q) return std::nullopt;
        p.domain.low = *lo, p.domain.high = *hi, p.domain.q = *q;
      }
      if (Status s = p.domain.Validate(); !s.ok()) {
        Error(v, vk, s.message());
        return std::nullopt;
      }
    }
    if (kinds != 1) {
      Error(spec, at, kinds == 0 ? "needs a domain: one of " + Join(kKinds) : "has more than one domain");
      return std::nullopt;
    }
    if (const YAML::Node w = spec["when"]; w.IsDefined()) {
      if (!w.IsMap() || w.size() != 1) {
        Error(w, at + ".when", "expected {KEY: VALUE} or {KEY: [VALUES]} naming one earlier parameter");
        return std::nullopt;
      }
      Condition c;
      c.key = w.begin()->first.as<std::string>();
      const YAML::Node vals = w.begin()->second;
      if (vals.IsSequence()) {
        for (const auto& item : vals) c.values.push_back(ValueText(item));
      } else {
        c.values.push_back(ValueText(vals));
      }
      p.when = std::move(c);
    }
    return p;
  }

  Result<StudySpec> Parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return InvalidArgumentError("cannot parse the study " + source_ + ": " + e.what());
    }
    if (!root.IsMap()) return InvalidArgumentError("study " + source_ + ": expected a map of settings (name, base, space, ...)");
    CheckKeys(root, "",
              {"name", "base", "sets", "metric", "mode", "num_samples", "space", "searcher", "scheduler", "trial_threads",
               "total_threads", "launcher", "data_cache", "max_failures"});
    StudySpec s;
    s.source = source_;
    s.text = text;
    if (const YAML::Node n = root["name"]; n.IsScalar()) {
      s.name = n.Scalar();
    } else {
      s.name = source_.empty() ? "study" : fs::path(source_).stem().string();
    }
    for (char ch : s.name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
        Error(root["name"], "name", "\"" + s.name + "\" may hold only letters, digits, '-', '_' and '.'");
        break;
      }
    }
    // base: a path (relative to the study file) or an inline training config.
    const YAML::Node base = root["base"];
    if (!base.IsDefined() || base.IsNull()) {
      Error(root, "base", "missing: the training config every trial starts from (a path or an inline map)");
    } else if (base.IsScalar()) {
      fs::path p = base.Scalar();
      if (p.is_relative() && !source_.empty()) p = fs::path(source_).parent_path() / p;
      std::error_code ec;
      s.base_path = fs::absolute(p, ec).lexically_normal().string();
      if (!fs::is_regular_file(s.base_path, ec)) Error(base, "base", "no file " + s.base_path);
    } else if (base.IsMap()) {
      YAML::Emitter e;
      e << base;
      s.base_yaml = std::string(e.c_str()) + "\n";
    } else {
      Error(base, "base", "expected a path or a map");
    }
    if (const YAML::Node n = root["sets"]; n.IsDefined()) {
      if (!n.IsSequence()) {
        Error(n, "sets", "expected a list of KEY=VALUE");
      } else {
        for (const auto& item : n) {
          if (!item.IsScalar() || item.Scalar().find('=') == std::string::npos) {
            Error(item, "sets", "expected KEY=VALUE");
          } else {
            s.sets.push_back(item.Scalar());
          }
        }
      }
    }
    static const std::vector<std::string> kMetrics = {"valid.auc", "valid.logloss", "valid.gauc", "valid.accuracy",
                                                      "valid.top5_accuracy"};
    s.metric = Choice(root, "metric", "", "valid.auc", kMetrics);
    const std::string def_mode = s.metric == "valid.logloss" ? "min" : "max";
    s.direction = Choice(root, "mode", "", def_mode, {"max", "min"}) == "max" ? Direction::kMaximize : Direction::kMinimize;
    s.num_samples = Int(root, "num_samples", "", 10, 1, 1000000);
    s.trial_threads = Int(root, "trial_threads", "", 1, 1, 4096);
    s.total_threads = Int(root, "total_threads", "", 0, 0, 1 << 20);
    s.max_failures = Int(root, "max_failures", "", -1, -1, 1000000);
    if (const YAML::Node n = root["data_cache"]; n.IsDefined()) {
      if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false")) {
        Error(n, "data_cache", "expected true or false");
      } else {
        s.build_cache = n.Scalar() == "true";
      }
    }

    // The space, in file order (conditions refer to earlier keys).
    std::vector<Param> params;
    const YAML::Node space = root["space"];
    if (!space.IsDefined() || !space.IsMap() || space.size() == 0) {
      Error(space.IsDefined() ? space : root, "space", "expected a map of config keys to domains, e.g. optimizer.lr: {loguniform: [1e-4, 1e-2]}");
    } else {
      for (const auto& kv : space) {
        if (auto p = ParseParam(kv.first.as<std::string>(), kv.second)) params.push_back(std::move(*p));
      }
    }

    const YAML::Node searcher = root["searcher"];
    if (searcher.IsDefined() && !searcher.IsMap()) Error(searcher, "searcher", "expected a map such as {type: tpe}");
    if (searcher.IsMap()) {
      CheckKeys(searcher, "searcher.", {"type", "seed", "startup", "candidates", "gamma"});
      const std::string t = Choice(searcher, "type", "searcher.", "random", {"random", "grid", "tpe"});
      s.searcher.kind = t == "grid" ? SearcherKind::kGrid : t == "tpe" ? SearcherKind::kTpe : SearcherKind::kRandom;
      s.searcher.seed = static_cast<uint64_t>(Int(searcher, "seed", "searcher.", 0, 0, std::numeric_limits<int64_t>::max()));
      s.searcher.startup = Int(searcher, "startup", "searcher.", 8, 1, 1000000);
      s.searcher.candidates = Int(searcher, "candidates", "searcher.", 24, 1, 100000);
      s.searcher.gamma = Real(searcher, "gamma", "searcher.", 0.25, 0, 1, true);
    }

    const YAML::Node sched = root["scheduler"];
    if (sched.IsDefined() && !sched.IsMap()) Error(sched, "scheduler", "expected a map such as {type: asha, grace: 100, max: 2700}");
    if (sched.IsMap()) {
      CheckKeys(sched, "scheduler.", {"type", "budget", "grace", "reduction", "max", "min_trials"});
      const std::string t = Choice(sched, "type", "scheduler.", "fifo", {"fifo", "asha", "median"});
      s.scheduler.kind = t == "asha" ? SchedulerKind::kAsha : t == "median" ? SchedulerKind::kMedian : SchedulerKind::kFifo;
      s.scheduler.unit = Choice(sched, "budget", "scheduler.", "steps", {"steps", "epochs"}) == "epochs" ? BudgetUnit::kEpochs
                                                                                                          : BudgetUnit::kSteps;
      s.scheduler.grace = Int(sched, "grace", "scheduler.", 1, 1, std::numeric_limits<int64_t>::max() / 4);
      s.scheduler.reduction = Real(sched, "reduction", "scheduler.", 3, 1, 1000, true);
      s.scheduler.max_budget = Int(sched, "max", "scheduler.", 0, 0, std::numeric_limits<int64_t>::max() / 4);
      s.scheduler.min_trials = Int(sched, "min_trials", "scheduler.", 3, 1, 1000000);
      if (s.scheduler.kind == SchedulerKind::kAsha) {
        if (s.scheduler.max_budget == 0) {
          Error(sched, "scheduler.max", "asha needs the largest budget a trial runs to (max: steps or epochs)");
        } else if (s.scheduler.max_budget < s.scheduler.grace) {
          Error(sched["max"], "scheduler.max", "is below scheduler.grace (" + std::to_string(s.scheduler.grace) + ")");
        }
      }
    }

    const YAML::Node launcher = root["launcher"];
    if (launcher.IsDefined() && !launcher.IsMap()) Error(launcher, "launcher", "expected {template: \"srun -n1 {cmd}\"}");
    if (launcher.IsMap()) {
      CheckKeys(launcher, "launcher.", {"template", "hosts"});
      if (const YAML::Node t = launcher["template"]; t.IsDefined()) {
        if (!t.IsScalar() || t.Scalar().find("{cmd}") == std::string::npos) {
          Error(t, "launcher.template", "must be a command line holding {cmd}, e.g. \"srun -N1 -n2 {cmd}\"");
        } else {
          s.launcher.command_template = t.Scalar();
        }
      }
      if (const YAML::Node h = launcher["hosts"]; h.IsDefined()) {
        if (!h.IsSequence()) {
          Error(h, "launcher.hosts", "expected a list of host names");
        } else {
          for (const auto& item : h) s.launcher.hosts.push_back(item.as<std::string>());
        }
      }
      if (s.launcher.command_template.find("{host}") != std::string::npos && s.launcher.hosts.empty()) {
        Error(launcher, "launcher.hosts", "the template uses {host}: list the hosts");
      }
    }

    if (errors_.empty()) {
      auto created = SearchSpace::Create(std::move(params));
      if (!created.ok()) {
        Error(space, "space", created.status().message());
      } else {
        s.space = std::move(created).value();
      }
    }
    if (errors_.empty() && s.searcher.kind == SearcherKind::kGrid) {
      auto grid = s.space.Grid();
      if (!grid.ok()) {
        Error(space, "searcher.type", grid.status().message());
      } else if (!root["num_samples"].IsDefined()) {
        s.num_samples = static_cast<int64_t>(grid->size());  // the whole grid by default
      }
    }
    if (!errors_.empty()) {
      if (errors_.size() == 1) return InvalidArgumentError("invalid study: " + errors_[0]);
      std::string m = "invalid study (" + std::to_string(errors_.size()) + " errors):";
      for (const auto& e : errors_) m += "\n  " + e;
      return InvalidArgumentError(m);
    }
    return s;
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

}  // namespace

const char* SearcherKindName(SearcherKind k) {
  switch (k) {
    case SearcherKind::kRandom: return "random";
    case SearcherKind::kGrid: return "grid";
    case SearcherKind::kTpe: return "tpe";
  }
  return "?";
}

const char* SchedulerKindName(SchedulerKind k) {
  switch (k) {
    case SchedulerKind::kFifo: return "fifo";
    case SchedulerKind::kAsha: return "asha";
    case SchedulerKind::kMedian: return "median";
  }
  return "?";
}

const char* BudgetUnitName(BudgetUnit u) { return u == BudgetUnit::kEpochs ? "epochs" : "steps"; }

int64_t StudySpec::concurrency() const {
  int64_t total = total_threads > 0 ? total_threads : std::max<int64_t>(1, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, total / trial_threads);
}

std::string StudySpec::metric_field() const { return metric.substr(metric.find('.') + 1); }

bool StudySpec::Better(double a, double b) const {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return direction == Direction::kMaximize ? a > b : a < b;
}

Result<StudySpec> ParseStudy(const std::string& text, const std::string& source) { return Parser(source).Parse(text); }

Result<StudySpec> LoadStudy(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read the study file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseStudy(ss.str(), path);
}

}  // namespace rectrain::tune
