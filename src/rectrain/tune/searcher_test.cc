#include "rectrain/tune/searcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace rectrain::tune {
namespace {

StudySpec Spec(SearcherKind kind, uint64_t seed) {
  auto s = ParseStudy("base: {a: 1}\nspace:\n  lr: {loguniform: [1.0e-5, 1.0]}\n  d: {uniform: [0, 1]}\n"
                      "  opt: {choice: [a, b, c, d]}\n  beta: {uniform: [0, 1], when: {opt: b}}\n",
                      "");
  EXPECT_TRUE(s.ok()) << s.status();
  s->searcher.kind = kind;
  s->searcher.seed = seed;
  return *s;
}

// A smooth objective with its optimum at lr = 1e-2, d = 0.3, opt = c (higher is better).
double Objective(const Assignment& a) {
  const double lr = std::stod(*Find(a, "lr"));
  const double d = std::stod(*Find(a, "d"));
  const double opt = *Find(a, "opt") == "c" ? 0.0 : 0.3;
  return -std::pow(std::log10(lr) + 2, 2) - 4 * (d - 0.3) * (d - 0.3) - opt;
}

double BestAfter(SearcherKind kind, uint64_t seed, int n) {
  StudySpec spec = Spec(kind, seed);
  auto searcher = MakeSearcher(spec);
  std::vector<Observation> obs;
  double best = -1e9;
  for (int i = 0; i < n; ++i) {
    auto a = searcher->Next(obs);
    EXPECT_TRUE(a.has_value());
    Observation o;
    o.params = *a;
    o.rung_values = {Objective(*a)};
    best = std::max(best, o.rung_values[0]);
    obs.push_back(o);
  }
  return best;
}

TEST(Searcher, RandomIsReproduciblePerSeedAndTrial) {
  auto a = MakeSearcher(Spec(SearcherKind::kRandom, 1));
  auto b = MakeSearcher(Spec(SearcherKind::kRandom, 1));
  auto c = MakeSearcher(Spec(SearcherKind::kRandom, 2));
  std::vector<Observation> none;
  EXPECT_EQ(FormatAssignment(*a->Next(none)), FormatAssignment(*b->Next(none)));
  EXPECT_NE(FormatAssignment(*a->Next(none)), FormatAssignment(*c->Next(none)));
}

TEST(Searcher, TpeBeatsRandomOnASmoothObjective) {
  // Median over 7 seeds of the best value after 40 trials.
  std::vector<double> tpe, random;
  for (uint64_t seed = 1; seed <= 7; ++seed) {
    tpe.push_back(BestAfter(SearcherKind::kTpe, seed, 40));
    random.push_back(BestAfter(SearcherKind::kRandom, seed, 40));
  }
  std::sort(tpe.begin(), tpe.end());
  std::sort(random.begin(), random.end());
  EXPECT_GT(tpe[3], random[3]) << "tpe median " << tpe[3] << " random median " << random[3];
}

TEST(Searcher, TpeSpreadsConcurrentProposals) {
  // With many pending trials (the constant liar) proposals still differ from each other.
  StudySpec spec = Spec(SearcherKind::kTpe, 3);
  spec.searcher.startup = 4;
  auto searcher = MakeSearcher(spec);
  std::vector<Observation> obs;
  for (int i = 0; i < 6; ++i) {
    Observation o;
    o.params = *searcher->Next(obs);
    o.rung_values = {Objective(o.params)};
    obs.push_back(o);
  }
  std::set<std::string> proposals;
  for (int i = 0; i < 4; ++i) {
    Observation o;
    o.params = *searcher->Next(obs);
    o.pending = true;
    proposals.insert(FormatAssignment(o.params));
    obs.push_back(o);
  }
  EXPECT_EQ(proposals.size(), 4u);
}

TEST(Searcher, TpeRespectsConditions) {
  StudySpec spec = Spec(SearcherKind::kTpe, 4);
  spec.searcher.startup = 3;
  auto searcher = MakeSearcher(spec);
  std::vector<Observation> obs;
  for (int i = 0; i < 30; ++i) {
    Observation o;
    o.params = *searcher->Next(obs);
    EXPECT_EQ(Find(o.params, "beta") != nullptr, *Find(o.params, "opt") == "b") << FormatAssignment(o.params);
    o.rung_values = {Objective(o.params)};
    obs.push_back(o);
  }
}

TEST(Searcher, GridCyclesThroughEveryCombination) {
  auto s = ParseStudy("base: {a: 1}\nsearcher: {type: grid}\nspace: {x: {grid: [1, 2]}, y: {grid: [a, b]}}\n", "");
  ASSERT_TRUE(s.ok());
  auto g = MakeSearcher(*s);
  std::vector<Observation> obs;
  std::vector<std::string> seen;
  for (int i = 0; i < 5; ++i) {
    Observation o;
    o.params = *g->Next(obs);
    seen.push_back(FormatAssignment(o.params));
    obs.push_back(o);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"x=1 y=a", "x=1 y=b", "x=2 y=a", "x=2 y=b", "x=1 y=a"}));
}

}  // namespace
}  // namespace rectrain::tune
