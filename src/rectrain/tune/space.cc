#include "rectrain/tune/space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace rectrain::tune {
namespace {

// Shortest text that reads back as the same double ("0.001", "1e-05", "3").
std::string FormatReal(double v) {
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string FormatInt(double v) { return std::to_string(static_cast<long long>(std::llround(v))); }

std::optional<double> ParseNumber(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

const char* DomainKindName(DomainKind kind) {
  switch (kind) {
    case DomainKind::kChoice: return "choice";
    case DomainKind::kGrid: return "grid";
    case DomainKind::kUniform: return "uniform";
    case DomainKind::kLogUniform: return "loguniform";
    case DomainKind::kRandInt: return "randint";
    case DomainKind::kQUniform: return "quniform";
  }
  return "?";
}

Status Domain::Validate() const {
  const std::string name = DomainKindName(kind);
  if (categorical()) {
    if (values.empty()) return InvalidArgumentError(name + " needs at least one value");
    std::set<std::string> seen;
    for (const auto& v : values) {
      if (!seen.insert(v).second) return InvalidArgumentError(name + " lists " + v + " twice");
    }
    return OkStatus();
  }
  if (!std::isfinite(low) || !std::isfinite(high)) return InvalidArgumentError(name + " bounds must be finite numbers");
  if (!(low < high) && !(kind == DomainKind::kRandInt && low == high)) {
    return InvalidArgumentError(name + " has an empty range [" + FormatReal(low) + ", " + FormatReal(high) +
                                "]: the first bound must be below the second");
  }
  if (kind == DomainKind::kLogUniform && low <= 0) {
    return InvalidArgumentError("loguniform needs 0 < low (got " + FormatReal(low) + "); use uniform for ranges at 0");
  }
  if (kind == DomainKind::kRandInt && (low != std::floor(low) || high != std::floor(high))) {
    return InvalidArgumentError("randint bounds must be integers");
  }
  if (kind == DomainKind::kQUniform) {
    if (!(q > 0)) return InvalidArgumentError("quniform needs a step q > 0: [low, high, q]");
    if (std::floor(high / q) < std::ceil(low / q)) {
      return InvalidArgumentError("quniform [" + FormatReal(low) + ", " + FormatReal(high) + "] holds no multiple of " +
                                  FormatReal(q));
    }
  }
  return OkStatus();
}

int64_t Domain::Cardinality() const {
  switch (kind) {
    case DomainKind::kChoice:
    case DomainKind::kGrid: return static_cast<int64_t>(values.size());
    case DomainKind::kRandInt: return static_cast<int64_t>(high - low) + 1;
    case DomainKind::kQUniform: return static_cast<int64_t>(std::floor(high / q) - std::ceil(low / q)) + 1;
    default: return 0;
  }
}

std::string Domain::Decode(double u) const {
  u = std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
  switch (kind) {
    case DomainKind::kChoice:
    case DomainKind::kGrid: return values[static_cast<size_t>(u * static_cast<double>(values.size()))];
    case DomainKind::kUniform: return FormatReal(low + u * (high - low));
    case DomainKind::kLogUniform: return FormatReal(std::exp(std::log(low) + u * (std::log(high) - std::log(low))));
    case DomainKind::kRandInt: return FormatInt(low + std::floor(u * static_cast<double>(Cardinality())));
    case DomainKind::kQUniform: {
      const double first = std::ceil(low / q);
      const double k = first + std::floor(u * static_cast<double>(Cardinality()));
      const double v = k * q;
      if (q == std::floor(q)) return FormatInt(v);
      // As many decimals as q has, so 3 * 0.2 prints 0.6 rather than 0.6000000000000001.
      const std::string qs = FormatReal(q);
      const size_t dot = qs.find('.');
      const int decimals = qs.find('e') != std::string::npos ? 12 : dot == std::string::npos ? 0 : static_cast<int>(qs.size() - dot - 1);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
      return buf;
    }
  }
  return "";
}

std::optional<double> Domain::Encode(const std::string& text) const {
  if (categorical()) {
    auto it = std::find(values.begin(), values.end(), text);
    if (it == values.end()) return std::nullopt;
    return (static_cast<double>(it - values.begin()) + 0.5) / static_cast<double>(values.size());
  }
  std::optional<double> v = ParseNumber(text);
  if (!v) return std::nullopt;
  switch (kind) {
    case DomainKind::kUniform: return std::clamp((*v - low) / (high - low), 0.0, 1.0);
    case DomainKind::kLogUniform:
      if (*v <= 0) return std::nullopt;
      return std::clamp((std::log(*v) - std::log(low)) / (std::log(high) - std::log(low)), 0.0, 1.0);
    case DomainKind::kRandInt:
      return std::clamp((*v - low + 0.5) / static_cast<double>(Cardinality()), 0.0, 1.0);
    case DomainKind::kQUniform:
      return std::clamp((std::round(*v / q) - std::ceil(low / q) + 0.5) / static_cast<double>(Cardinality()), 0.0, 1.0);
    default: return std::nullopt;
  }
}

std::string Domain::Sample(Rng& rng) const { return Decode(rng.Uniform()); }

const std::string* Find(const Assignment& a, const std::string& key) {
  for (const auto& [k, v] : a) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string FormatAssignment(const Assignment& a) {
  std::string out;
  for (const auto& [k, v] : a) {
    if (!out.empty()) out += ' ';
    out += k + "=" + v;
  }
  return out;
}

Result<SearchSpace> SearchSpace::Create(std::vector<Param> params) {
  std::set<std::string> keys;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (p.key.empty()) return InvalidArgumentError("space: an empty key");
    if (Status s = p.domain.Validate(); !s.ok()) return InvalidArgumentError("space." + p.key + ": " + s.message());
    if (p.when) {
      const auto earlier = std::find_if(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(i),
                                        [&](const Param& q) { return q.key == p.when->key; });
      if (earlier == params.begin() + static_cast<std::ptrdiff_t>(i)) {
        return InvalidArgumentError("space." + p.key + ": `when` names " + p.when->key +
                                    ", which is not a parameter listed before it");
      }
      for (const auto& v : p.when->values) {
        if (earlier->domain.categorical() && !earlier->domain.Encode(v)) {
          return InvalidArgumentError("space." + p.key + ": `when` " + p.when->key + " = " + v + ", which " +
                                      p.when->key + " never takes");
        }
      }
    }
    keys.insert(p.key);
  }
  SearchSpace s;
  s.params_ = std::move(params);
  return s;
}

bool SearchSpace::Active(const Param& p, const Assignment& so_far) {
  if (!p.when) return true;
  const std::string* v = Find(so_far, p.when->key);
  if (v == nullptr) return false;
  return std::find(p.when->values.begin(), p.when->values.end(), *v) != p.when->values.end();
}

Assignment SearchSpace::Sample(Rng& rng) const {
  Assignment a;
  for (const Param& p : params_) {
    if (Active(p, a)) a.emplace_back(p.key, p.domain.Sample(rng));
  }
  return a;
}

Result<std::vector<Assignment>> SearchSpace::Grid() const {
  for (const Param& p : params_) {
    if (!p.domain.categorical()) {
      return FailedPreconditionError("space." + p.key + " is " + DomainKindName(p.domain.kind) +
                                     "; the grid searcher needs listed values (grid: [...] or choice: [...])");
    }
  }
  std::vector<Assignment> out;
  Assignment current;
  // Depth-first over the parameters: an inactive parameter contributes no choice.
  auto recurse = [&](auto&& self, size_t i) -> void {
    if (i == params_.size()) {
      out.push_back(current);
      return;
    }
    const Param& p = params_[i];
    if (!Active(p, current)) {
      self(self, i + 1);
      return;
    }
    for (const auto& v : p.domain.values) {
      current.emplace_back(p.key, v);
      self(self, i + 1);
      current.pop_back();
    }
  };
  recurse(recurse, 0);
  return out;
}

}  // namespace rectrain::tune
