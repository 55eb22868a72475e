// rectrain/tune/space.h: a search space over training-config keys (dotted paths, the same keys
// `rectrain train --set` takes) and the values a trial assigns to them.
//
// Domains (docs/tune.md "Search space"):
//   choice: [a, b, ...]     one of the values (any YAML: numbers, strings, lists)
//   grid: [a, b, ...]       the same, enumerated in full by the grid searcher
//   uniform: [lo, hi]       a real in [lo, hi]
//   loguniform: [lo, hi]    a real whose log is uniform in [log lo, log hi]; 0 < lo
//   randint: [lo, hi]       an integer in [lo, hi] (both included)
//   quniform: [lo, hi, q]   a multiple of q in [lo, hi]
// A parameter may carry a condition (`when: {model.type: deepfm}`, or a list of values): it is
// searched only when an earlier parameter has one of those values, and otherwise left out of
// the trial (the base config's value applies).
//
// Values are YAML text ("0.001", "[400, 400]", "adam"): what goes after `--set key=`.
// Thread safety: a SearchSpace is immutable after construction; Sample() takes the Rng.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/base/result.h"

namespace rectrain::tune {

enum class DomainKind : uint8_t { kChoice, kGrid, kUniform, kLogUniform, kRandInt, kQUniform };
// "choice" | "grid" | "uniform" | "loguniform" | "randint" | "quniform".
const char* DomainKindName(DomainKind kind);

struct Domain {
  DomainKind kind = DomainKind::kChoice;
  std::vector<std::string> values;  // choice / grid: YAML text of each value, in order
  double low = 0, high = 0, q = 0;  // uniform / loguniform / randint / quniform

  bool categorical() const { return kind == DomainKind::kChoice || kind == DomainKind::kGrid; }
  // Checks the bounds ("empty range [3, 1]", "loguniform needs 0 < low", ...).
  Status Validate() const;
  // A random value (uniform over the domain as described at the top).
  std::string Sample(Rng& rng) const;
  // The value for a point u of the unit interval (TPE works on [0, 1]; categorical: index
  // floor(u * n)); Sample() is Decode(Uniform()).
  std::string Decode(double u) const;
  // The unit-interval position of `text` (categorical: the centre of its cell); nullopt when
  // the text is not a value of this domain.
  std::optional<double> Encode(const std::string& text) const;
  // Number of distinct values; 0 for a continuous domain.
  int64_t Cardinality() const;
};

struct Condition {
  std::string key;                  // an earlier parameter of the space
  std::vector<std::string> values;  // YAML text; the parameter is active when key has one of them
};

struct Param {
  std::string key;  // e.g. "optimizer.lr"
  Domain domain;
  std::optional<Condition> when;
};

// A trial's values, in the order of the space's parameters (inactive ones absent).
using Assignment = std::vector<std::pair<std::string, std::string>>;

// The value of `key` in `a`, or nullptr.
const std::string* Find(const Assignment& a, const std::string& key);
// "optimizer.lr=0.001 model.hidden=[400, 400]" (for logs and tables).
std::string FormatAssignment(const Assignment& a);

class SearchSpace {
 public:
  SearchSpace() = default;
  // Validates every domain and that each condition names an earlier parameter with values its
  // domain has (InvalidArgument naming the key otherwise); no key may appear twice.
  static Result<SearchSpace> Create(std::vector<Param> params);

  const std::vector<Param>& params() const { return params_; }
  // Whether `p` is searched given the values assigned so far.
  static bool Active(const Param& p, const Assignment& so_far);
  // A random assignment (every active parameter sampled independently).
  Assignment Sample(Rng& rng) const;
  // Every combination of the categorical domains, conditions respected, in odometer order
  // (last parameter fastest). FailedPrecondition naming the first continuous parameter.
  Result<std::vector<Assignment>> Grid() const;

 private:
  std::vector<Param> params_;
};

}  // namespace rectrain::tune
