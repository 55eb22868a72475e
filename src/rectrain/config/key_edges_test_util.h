// rectrain/config/key_edges_test_util.h (test-only): the values at and just past the ends of a
// numeric key's range, as --set text, and what docs/config.md says of every key. Shared by the
// binding test of every key (train_config_keys_test.cc) and the runs at the edges
// (tests/config_edges_test.cc).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "rectrain/config/binder.h"

namespace rectrain::config::test_util {

struct Edge {
  std::string text;  // the --set value ("[v]" for lists, "{k: v}" for maps)
  bool inside = true;
};

// Other settings a key needs to be valid at its edges (cross-key rules), and a template for its
// value when one item is not enough ("{v}" stands for the number).
struct KeyContext {
  std::vector<std::string> sets;
  std::string value_template = "{v}";
};

// The keys whose edges need other settings: a cross-key rule (min_lr <= lr, min_rows <=
// max_rows), or the model type that reads them (so a run at the edge exercises the key).
// `scratch` is a directory the caller owns and removes: runs at the edges of train.publish.*
// publish into scratch/models.
inline KeyContext ContextOf(const std::string& key, const std::string& scratch) {
  const std::vector<std::string> mmoe = {"model.type=mmoe", "model.task_labels=[I1]",
                                         "features.transforms={I1: 'binarize(1)'}"};
  const std::vector<std::string> din = {"model.type=din", "model.target_field=C1", "model.history_field=C2",
                                        "features.transforms={C2: \"split('|', 20) | hash_as(C1)\"}"};
  static const std::map<std::string, KeyContext> kContexts = {
      {"optimizer.min_lr", {{"optimizer.lr=3.40282347e+38"}}},
      {"checks.min_rows", {{"checks.max_rows=0"}}},
      {"model.num_classes", {{"model.type=mlp"}}},
      {"model.cross_layers", {{"model.type=dcn_v2"}}},
      {"model.cin_layers", {{"model.type=xdeepfm"}}},
      {"model.attention_layers", {{"model.type=autoint"}}},
      {"model.attention_heads", {{"model.type=autoint"}}},
      {"model.attention_head_dim", {{"model.type=autoint"}}},
      {"model.attention_hidden", {din}},
      {"model.bottom", {{"model.type=dlrm"}}},
      {"model.field_dims", {{"model.type=wide_deep"}}},
      {"model.num_experts", {mmoe}},
      {"model.expert_hidden", {mmoe}},
      {"model.tower_hidden", {mmoe}},
      {"model.task_weights", {mmoe, "[{v}, {v}]"}},
      {"optimizer.decay_rate", {{"optimizer.decay=exponential", "optimizer.decay_steps=10"}}},
      // 0 is valid for adagrad with an initial accumulator (else a division by zero).
      {"optimizer.epsilon", {{"optimizer.type=adagrad", "optimizer.initial_accumulator=0.1"}}},
      {"embedding.optimizer.epsilon", {{"embedding.optimizer.initial_accumulator=0.1"}}},
  };
  // The online keys need a data.stream section. Port 1 has no server: config_edges_test's runs
  // end with the clear "cannot reach" error instead of training from a stream nobody feeds.
  if (key.rfind("data.stream.", 0) == 0 || key == "train.online_window") {
    return KeyContext{{"data.stream.url=redis://127.0.0.1:1/edges"}};
  }
  // train.publish's keys need the section; the runs publish into the caller's directory.
  if (key.rfind("train.publish.", 0) == 0) return KeyContext{{"train.publish.to=" + scratch + "/models"}};
  auto it = kContexts.find(key);
  return it == kContexts.end() ? KeyContext{} : it->second;
}

inline std::string FormatEdge(double v, KeySpec::Type type) {
  char buf[64];
  switch (type) {
    case KeySpec::Type::kFloat:
      std::snprintf(buf, sizeof(buf), "%.9g", v);
      break;
    case KeySpec::Type::kDouble:
    case KeySpec::Type::kDoubleList:
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      break;
    default:
      std::snprintf(buf, sizeof(buf), "%.0f", v);
      break;
  }
  return buf;
}

inline bool IsInteger(KeySpec::Type t) {
  return t == KeySpec::Type::kInt || t == KeySpec::Type::kIntList || t == KeySpec::Type::kIntMap ||
         t == KeySpec::Type::kBytes;
}

// The next representable value of the key's type from `v` towards `to`.
inline double Step(double v, double to, KeySpec::Type type) {
  if (IsInteger(type)) return to > v ? v + 1 : v - 1;
  if (type == KeySpec::Type::kFloat) {
    return static_cast<double>(std::nextafter(static_cast<float>(v), static_cast<float>(to)));
  }
  return std::nextafter(v, to);
}

// The largest finite magnitude the key's type holds (an unbounded end is tried there).
inline double Huge(KeySpec::Type type) {
  if (IsInteger(type)) return 9e18;
  if (type == KeySpec::Type::kFloat) return static_cast<double>(std::numeric_limits<float>::max());
  return 1e300;
}

inline std::string Wrap(const KeySpec& k, const std::string& number, const KeyContext& context) {
  std::string v = context.value_template;
  for (size_t at = v.find("{v}"); at != std::string::npos; at = v.find("{v}")) v.replace(at, 3, number);
  if (k.type == KeySpec::Type::kIntList || k.type == KeySpec::Type::kDoubleList) {
    return v.front() == '[' ? v : "[" + v + "]";
  }
  if (k.type == KeySpec::Type::kIntMap) return "{C1: " + v + "}";  // a field of the generated data
  return v;
}

// Both ends of a numeric key's range (inside) and the values just past its finite ends (outside).
inline std::vector<Edge> RangeEdges(const KeySpec& k, const KeyContext& context = {}) {
  const Range& r = k.range;
  std::vector<Edge> edges;
  if (IsInteger(k.type)) {  // exactly, in int64 (the ends of an integer range are finite)
    const int64_t lo = r.min_open ? static_cast<int64_t>(std::floor(r.min)) + 1 : static_cast<int64_t>(std::ceil(r.min));
    const int64_t hi = r.max_open ? static_cast<int64_t>(std::ceil(r.max)) - 1 : static_cast<int64_t>(std::floor(r.max));
    for (auto [v, inside] : {std::pair{lo, true}, std::pair{hi, true}, std::pair{lo - 1, false}, std::pair{hi + 1, false}}) {
      edges.push_back({Wrap(k, std::to_string(v), context), inside});
    }
    return edges;
  }
  auto add = [&](double v, bool inside) { edges.push_back({Wrap(k, FormatEdge(v, k.type), context), inside}); };
  const double lo = std::isinf(r.min) ? -Huge(k.type) : r.min_open ? Step(r.min, r.max, k.type) : r.min;
  const double hi = std::isinf(r.max) ? Huge(k.type) : r.max_open ? Step(r.max, r.min, k.type) : r.max;
  add(lo, true);
  add(hi, true);
  if (!std::isinf(r.min)) add(r.min_open ? r.min : Step(r.min, -Huge(k.type), k.type), false);
  if (!std::isinf(r.max)) add(r.max_open ? r.max : Step(r.max, Huge(k.type), k.type), false);
  return edges;
}

// docs/config.md's key tables: key -> its range column (the third cell), as written.
inline std::map<std::string, std::string> DocumentedRanges(const std::string& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        cell += line[++i];
      } else if (line[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.size() < 3) continue;
    std::string key = cells[0];
    const size_t a = key.find('`'), b = key.find('`', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out[key.substr(a + 1, b - a - 1)] = cells[2];
  }
  return out;
}

inline std::string SourceDir() {
  const char* dir = std::getenv("RECTRAIN_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

}  // namespace rectrain::config::test_util
