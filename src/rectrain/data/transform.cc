#include "rectrain/data/transform.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace rectrain::data {
namespace {

struct StepInfo {
  const char* name;
  StepOp op;
};
constexpr StepInfo kSteps[] = {
    {"col", StepOp::kCol},           {"cross", StepOp::kCross},
    {"fill", StepOp::kFill},         {"clip", StepOp::kClip},
    {"log1p", StepOp::kLog1p},       {"standardize", StepOp::kStandardize},
    {"bucketize", StepOp::kBucketize}, {"quantiles", StepOp::kQuantiles},
    {"hour_of_day", StepOp::kHourOfDay}, {"day_of_week", StepOp::kDayOfWeek},
    {"binarize", StepOp::kBinarize}, {"split", StepOp::kSplit},
    {"max_len", StepOp::kMaxLen},    {"hash", StepOp::kHash},
    {"hex_id", StepOp::kHexId},      {"hash_as", StepOp::kHashAs},
};

int Distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Removes matching single or double quotes around s.
std::string Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    return std::string(s.substr(1, s.size() - 2));
  }
  return std::string(s);
}

// Splits on `sep` outside quotes and parentheses/brackets.
std::vector<std::string_view> SplitTop(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (c == sep && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool ParseDouble(std::string_view s, double* out) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

}  // namespace

bool TransformStep::IsNumeric() const {
  switch (op) {
    case StepOp::kClip:
    case StepOp::kLog1p:
    case StepOp::kStandardize:
    case StepOp::kBucketize:
    case StepOp::kQuantiles:
    case StepOp::kHourOfDay:
    case StepOp::kDayOfWeek:
    case StepOp::kBinarize:
      return true;
    default:
      return false;
  }
}

namespace {

// The step of `name`, or InvalidArgument naming it (and the nearest step's name).
Result<const StepInfo*> FindStep(std::string_view name) {
  for (const StepInfo& k : kSteps) {
    if (name == k.name) return &k;
  }
  std::string msg = "unknown transform step \"" + std::string(name) + "\"";
  int best = 3;
  const char* suggestion = nullptr;
  for (const StepInfo& k : kSteps) {
    const int d = Distance(name, k.name);
    if (d < best) {
      best = d;
      suggestion = k.name;
    }
  }
  if (suggestion != nullptr) msg += "; did you mean " + std::string(suggestion) + "?";
  return InvalidArgumentError(msg);
}

Status CheckArgCount(const std::string& where, const std::vector<std::string>& args, size_t lo, size_t hi) {
  if (args.size() >= lo && args.size() <= hi) return OkStatus();
  std::string n = lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  if (hi > 1000) n = "at least " + std::to_string(lo);
  return InvalidArgumentError(where + " takes " + n + " argument(s), got " + std::to_string(args.size()));
}

Status ParseNumbers(const std::string& where, const std::vector<std::string>& args, std::vector<double>* out) {
  for (const std::string& a : args) {
    double v;
    if (!ParseDouble(a, &v)) return InvalidArgumentError(where + ": \"" + a + "\" is not a finite number");
    out->push_back(v);
  }
  return OkStatus();
}

// Step `info` with the arguments `args` (checked against what the step takes); `first`: it is
// the transform's first step (col and cross must be).
Result<TransformStep> BindStep(const StepInfo& info, const std::vector<std::string>& args, bool first) {
  TransformStep step;
  step.op = info.op;
  const std::string where = "step " + std::string(info.name);
  auto want_args = [&](size_t lo, size_t hi) { return CheckArgCount(where, args, lo, hi); };
  auto numbers = [&]() { return ParseNumbers(where, args, &step.args); };
  switch (step.op) {
    case StepOp::kCol:
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 1));
      if (!first) return InvalidArgumentError("step col(...) must come first");
      if (args[0].empty()) return InvalidArgumentError("step col needs a column name");
      step.names = args;
      break;
    case StepOp::kHashAs:
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 1));
      if (Unquote(args[0]).empty()) return InvalidArgumentError("step hash_as needs a feature name");
      step.names = {Unquote(args[0])};
      break;
    case StepOp::kCross:
      RECTRAIN_RETURN_IF_ERROR(want_args(2, 2));
      if (!first) return InvalidArgumentError("step cross(...) must come first");
      step.names = args;
      break;
    case StepOp::kFill:
    case StepOp::kBinarize:
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 1));
      RECTRAIN_RETURN_IF_ERROR(numbers());
      break;
    case StepOp::kClip:
      RECTRAIN_RETURN_IF_ERROR(want_args(2, 2));
      RECTRAIN_RETURN_IF_ERROR(numbers());
      if (step.args[0] > step.args[1]) {
        return InvalidArgumentError(where + ": lower bound " + args[0] + " exceeds upper bound " + args[1]);
      }
      break;
    case StepOp::kLog1p:
    case StepOp::kStandardize:
    case StepOp::kHourOfDay:
    case StepOp::kDayOfWeek:
    case StepOp::kHexId:
      RECTRAIN_RETURN_IF_ERROR(want_args(0, 0));
      break;
    case StepOp::kBucketize:
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 100000));
      RECTRAIN_RETURN_IF_ERROR(numbers());
      for (size_t i = 1; i < step.args.size(); ++i) {
        if (!(step.args[i - 1] < step.args[i])) {
          return InvalidArgumentError(where + ": boundaries must be strictly ascending");
        }
      }
      break;
    case StepOp::kQuantiles:
    case StepOp::kMaxLen:
    case StepOp::kHash: {
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 1));
      RECTRAIN_RETURN_IF_ERROR(numbers());
      const double v = step.args[0];
      const double lo = step.op == StepOp::kQuantiles ? 2 : 1;
      if (v != std::floor(v) || v < lo || v > 1e18) {
        return InvalidArgumentError(where + ": expected an integer >= " +
                                    std::to_string(static_cast<int>(lo)) + ", got " + args[0]);
      }
      break;
    }
    case StepOp::kSplit: {
      RECTRAIN_RETURN_IF_ERROR(want_args(1, 2));
      if (args[0].size() != 1) {
        return InvalidArgumentError(where + ": the separator must be one character, got \"" +
                                    args[0] + "\"");
      }
      step.sep = args[0];
      double max_len = 0;
      if (args.size() == 2 && (!ParseDouble(args[1], &max_len) || max_len < 0 ||
                               max_len != std::floor(max_len))) {
        return InvalidArgumentError(where + ": max_len must be an integer >= 0, got " + args[1]);
      }
      step.args.push_back(max_len);
      break;
    }
  }
  return step;
}

}  // namespace

Result<FeatureTransform> ParseTransform(std::string_view spec) {
  FeatureTransform t;
  t.text = std::string(Trim(spec));
  if (t.text.empty()) return InvalidArgumentError("empty transform; write steps such as \"fill(0) | log1p\"");
  int stats_steps = 0;
  for (std::string_view raw : SplitTop(t.text, '|')) {
    const std::string_view s = Trim(raw);
    if (s.empty()) return InvalidArgumentError("empty step in \"" + t.text + "\"");
    const size_t paren = s.find('(');
    const std::string_view name = Trim(paren == std::string_view::npos ? s : s.substr(0, paren));
    std::vector<std::string> args;
    if (paren != std::string_view::npos) {
      if (s.back() != ')') {
        return InvalidArgumentError("step \"" + std::string(s) + "\": missing ')'");
      }
      const std::string_view inner = Trim(s.substr(paren + 1, s.size() - paren - 2));
      if (!inner.empty()) {
        for (std::string_view a : SplitTop(inner, ',')) args.push_back(Unquote(a));
      }
    }
    RECTRAIN_ASSIGN_OR_RETURN(const StepInfo* info, FindStep(name));
    RECTRAIN_ASSIGN_OR_RETURN(TransformStep step, BindStep(*info, args, t.steps.empty()));
    if (step.NeedsStats() && ++stats_steps > 1) {
      return InvalidArgumentError("at most one stats step (standardize, quantiles) per feature");
    }
    t.steps.push_back(std::move(step));
  }
  return t;
}

Result<RowFilter> ParseRowFilter(std::string_view spec) {
  RowFilter f;
  f.text = std::string(Trim(spec));
  const std::string& s = f.text;
  auto bad = [&]() {
    return InvalidArgumentError("row filter \"" + s +
                                "\": expected \"COL not null\", \"COL in [a, b]\" or \"COL not in [a, b]\"");
  };
  auto ends_with = [&](std::string_view suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(" not null")) {
    f.kind = RowFilter::Kind::kNotNull;
    f.column = Unquote(std::string_view(s).substr(0, s.size() - 9));
    if (f.column.empty()) return bad();
    return f;
  }
  size_t pos = s.find(" not in ");
  size_t skip = 8;
  f.kind = RowFilter::Kind::kNotIn;
  if (pos == std::string::npos) {
    pos = s.find(" in ");
    skip = 4;
    f.kind = RowFilter::Kind::kIn;
  }
  if (pos == std::string::npos) return bad();
  f.column = Unquote(std::string_view(s).substr(0, pos));
  std::string_view list = Trim(std::string_view(s).substr(pos + skip));
  if (f.column.empty() || list.size() < 2 || list.front() != '[' || list.back() != ']') return bad();
  list = Trim(list.substr(1, list.size() - 2));
  if (!list.empty()) {
    for (std::string_view v : SplitTop(list, ',')) f.values.push_back(Unquote(v));
  }
  if (f.values.empty()) return InvalidArgumentError("row filter \"" + s + "\": the list is empty");
  std::sort(f.values.begin(), f.values.end());
  return f;
}

double ApplyNumericSteps(const FeatureTransform& t, size_t begin, size_t end, double x,
                         const FeatureStats& stats) {
  for (size_t i = begin; i < end && i < t.steps.size(); ++i) {
    const TransformStep& s = t.steps[i];
    switch (s.op) {
      case StepOp::kClip:
        x = std::min(std::max(x, s.args[0]), s.args[1]);
        break;
      case StepOp::kLog1p:
        x = std::log1p(std::max(x, 0.0));
        break;
      case StepOp::kStandardize:
        x = (x - stats.mean) / (stats.std > 0 ? stats.std : 1.0);
        break;
      case StepOp::kBucketize:
        x = static_cast<double>(std::upper_bound(s.args.begin(), s.args.end(), x) - s.args.begin());
        break;
      case StepOp::kQuantiles:
        x = static_cast<double>(std::upper_bound(stats.boundaries.begin(), stats.boundaries.end(), x) -
                                stats.boundaries.begin());
        break;
      case StepOp::kHourOfDay: {
        const double sec = x - 86400.0 * std::floor(x / 86400.0);
        x = std::min(23.0, std::floor(sec / 3600.0));
        break;
      }
      case StepOp::kDayOfWeek: {
        const double days = std::floor(x / 86400.0) + 4.0;  // 1970-01-01 was a Thursday (4)
        x = days - 7.0 * std::floor(days / 7.0);
        break;
      }
      case StepOp::kBinarize:
        x = x >= s.args[0] ? 1.0 : 0.0;
        break;
      default:
        break;
    }
  }
  return x;
}

double CalibrateLogit(double logit, double rate) { return logit + std::log(rate); }

double CalibrateProbability(double p, double rate) { return p / (p + (1.0 - p) / rate); }

}  // namespace rectrain::data
