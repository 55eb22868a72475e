// Every key of the schema against docs/config.md, and every number at the edges of its range:
// a key without a documented range, or a range the binder does not enforce, fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>

#include "key_edges_test_util.h"
#include "rectrain/config/train_config.h"

namespace rectrain::config {
namespace {

using test_util::ContextOf;
using test_util::DocumentedRanges;
using test_util::RangeEdges;

constexpr char kBase[] = "data: {train: train.tsv, valid: valid.tsv}\n";

// A bound of a documented interval: a number ("9e18", "1GiB", "+inf"), or nullopt for the
// name of another key ("[0, optimizer.lr]": a cross-key rule).
std::optional<double> ParseBound(std::string text) {
  while (!text.empty() && text.front() == ' ') text.erase(0, 1);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text == "+inf" || text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return v;
  if (auto bytes = ParseByteSize(text); bytes.ok() && end != text.c_str()) return static_cast<double>(*bytes);
  return std::nullopt;
}

// The first interval "[a, b]", "(a, b]", ... in a docs range cell.
std::optional<Range> DocumentedInterval(const std::string& cell) {
  const size_t open = cell.find_first_of("[(");
  if (open == std::string::npos) return std::nullopt;
  const size_t comma = cell.find(',', open), close = cell.find_first_of("])", open);
  if (comma == std::string::npos || close == std::string::npos || comma > close) return std::nullopt;
  auto lo = ParseBound(cell.substr(open + 1, comma - open - 1));
  auto hi = ParseBound(cell.substr(comma + 1, close - comma - 1));
  if (!lo) return std::nullopt;
  Range r{*lo, hi.value_or(std::numeric_limits<double>::infinity()), cell[open] == '(', cell[close] == ')'};
  if (std::isinf(r.min)) r.min_open = false;
  if (std::isinf(r.max)) r.max_open = false;
  return r;
}

TEST(TrainConfigKeys, EveryKeyIsDocumentedAndEveryNumberWithItsRange) {
  const auto docs = DocumentedRanges(test_util::SourceDir() + "/docs/config.md");
  ASSERT_GT(docs.size(), 100u) << "docs/config.md not found under $RECTRAIN_SOURCE_DIR";
  std::set<std::string> bound;
  for (const KeySpec& k : TrainConfigSchema()) {
    bound.insert(k.path);
    auto it = docs.find(k.path);
    if (it == docs.end()) {
      ADD_FAILURE() << k.path << " is bound but not documented in docs/config.md";
      continue;
    }
    for (const std::string& choice : k.choices) {
      EXPECT_NE(it->second.find(choice), std::string::npos) << k.path << ": docs do not list " << choice;
    }
    if (!k.numeric()) continue;
    EXPECT_FALSE(std::isinf(k.range.min) && std::isinf(k.range.max)) << k.path << " has no range";
    if (test_util::IsInteger(k.type)) {
      EXPECT_FALSE(std::isinf(k.range.min) || std::isinf(k.range.max)) << k.path << ": an integer needs both ends";
    }
    const std::optional<Range> doc = DocumentedInterval(it->second);
    if (!doc) {
      ADD_FAILURE() << k.path << ": the docs range \"" << it->second << "\" names no interval (code: "
                    << k.range.ToString() << ")";
      continue;
    }
    EXPECT_EQ(doc->min, k.range.min) << k.path << ": docs \"" << it->second << "\", code " << k.range.ToString();
    EXPECT_EQ(doc->min_open, k.range.min_open) << k.path << ": docs \"" << it->second << "\", code "
                                               << k.range.ToString();
    if (!std::isinf(doc->max) || it->second.find("inf") != std::string::npos) {
      EXPECT_EQ(doc->max, k.range.max) << k.path << ": docs \"" << it->second << "\", code " << k.range.ToString();
      EXPECT_EQ(doc->max_open, k.range.max_open) << k.path << ": docs \"" << it->second << "\", code "
                                                 << k.range.ToString();
    }
  }
  for (const auto& [key, range] : docs) {
    EXPECT_TRUE(bound.count(key)) << key << " is documented but no getter reads it";
  }
}

TEST(TrainConfigKeys, EveryNumberBindsAtItsEdgesAndIsRefusedPastThem) {
  int tried = 0;
  for (const KeySpec& k : TrainConfigSchema()) {
    if (!k.numeric()) continue;
    const test_util::KeyContext context = ContextOf(k.path, "scratch");  // only loaded, never run
    for (const test_util::Edge& edge : RangeEdges(k, context)) {
      std::vector<std::string> sets = context.sets;
      sets.push_back(k.path + "=" + edge.text);
      auto c = LoadTrainConfigFromString(kBase, "edges.yaml", sets);
      ++tried;
      if (edge.inside) {
        EXPECT_TRUE(c.ok()) << k.path << "=" << edge.text << ": " << c.status();
      } else {
        EXPECT_FALSE(c.ok()) << k.path << "=" << edge.text << " is past " << k.range.ToString();
        if (!c.ok()) {
          EXPECT_NE(c.status().message().find(k.path), std::string::npos) << k.path << ": " << c.status();
        }
      }
    }
  }
  EXPECT_GT(tried, 200);
}

// Infinity and NaN are refused for every number, whatever its range.
TEST(TrainConfigKeys, NonFiniteNumbersAreRefused) {
  for (const KeySpec& k : TrainConfigSchema()) {
    if (!k.numeric() || k.type == KeySpec::Type::kBytes) continue;
    for (const char* v : {".inf", "-.inf", ".nan"}) {
      const std::string text = test_util::Wrap(k, v, {});
      auto c = LoadTrainConfigFromString(kBase, "edges.yaml", {k.path + "=" + text});
      EXPECT_FALSE(c.ok()) << k.path << "=" << text;
    }
  }
}

}  // namespace
}  // namespace rectrain::config
