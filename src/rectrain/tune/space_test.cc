#include "rectrain/tune/space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace rectrain::tune {
namespace {

Param P(std::string key, DomainKind kind, double lo, double hi, double q = 0) {
  Param p;
  p.key = std::move(key);
  p.domain.kind = kind;
  p.domain.low = lo, p.domain.high = hi, p.domain.q = q;
  return p;
}
Param C(std::string key, std::vector<std::string> values, DomainKind kind = DomainKind::kChoice) {
  Param p;
  p.key = std::move(key);
  p.domain.kind = kind;
  p.domain.values = std::move(values);
  return p;
}

TEST(Space, SamplesStayInTheirDomains) {
  auto space = SearchSpace::Create({P("lr", DomainKind::kLogUniform, 1e-4, 1e-1), P("d", DomainKind::kUniform, 0, 0.5),
                                    P("n", DomainKind::kRandInt, 2, 5), P("q", DomainKind::kQUniform, 0.1, 0.9, 0.2),
                                    C("opt", {"adam", "adagrad"})});
  ASSERT_TRUE(space.ok()) << space.status();
  Rng rng(7);
  std::set<std::string> ints, qs, opts;
  int below_1e3 = 0;
  for (int i = 0; i < 4000; ++i) {
    Assignment a = space->Sample(rng);
    ASSERT_EQ(a.size(), 5u);
    const double lr = std::stod(a[0].second);
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    below_1e3 += lr < 1e-3;
    const double d = std::stod(a[1].second);
    EXPECT_GE(d, 0);
    EXPECT_LE(d, 0.5);
    ints.insert(a[2].second);
    qs.insert(a[3].second);
    opts.insert(a[4].second);
  }
  // Log-uniform: a third of the mass below 1e-3 (one decade of three).
  EXPECT_NEAR(below_1e3 / 4000.0, 1.0 / 3, 0.03);
  EXPECT_EQ(ints, (std::set<std::string>{"2", "3", "4", "5"}));  // both bounds included
  EXPECT_EQ(qs, (std::set<std::string>{"0.2", "0.4", "0.6", "0.8"}));
  EXPECT_EQ(opts, (std::set<std::string>{"adam", "adagrad"}));
}

TEST(Space, EncodeInvertsDecode) {
  for (const Param& p : {P("a", DomainKind::kUniform, -1, 3), P("b", DomainKind::kLogUniform, 1e-5, 1),
                         P("c", DomainKind::kRandInt, 0, 9), P("e", DomainKind::kQUniform, 0, 100, 25),
                         C("f", {"x", "[1, 2]", "z"})}) {
    for (double u : {0.0, 0.13, 0.5, 0.77, 0.999}) {
      const std::string v = p.domain.Decode(u);
      auto back = p.domain.Encode(v);
      ASSERT_TRUE(back) << p.key << " " << v;
      EXPECT_EQ(p.domain.Decode(*back), v) << p.key;
    }
  }
  EXPECT_FALSE(C("f", {"x"}).domain.Encode("y"));
}

TEST(Space, RejectsEmptyAndInvalidRanges) {
  EXPECT_NE(SearchSpace::Create({P("a", DomainKind::kUniform, 3, 1)}).status().message().find("empty range [3, 1]"),
            std::string::npos);
  EXPECT_NE(SearchSpace::Create({P("a", DomainKind::kLogUniform, 0, 1)}).status().message().find("0 < low"),
            std::string::npos);
  EXPECT_NE(SearchSpace::Create({P("a", DomainKind::kQUniform, 0.1, 0.2, 0.5)}).status().message().find("no multiple"),
            std::string::npos);
  EXPECT_NE(SearchSpace::Create({C("a", {})}).status().message().find("at least one value"), std::string::npos);
  EXPECT_NE(SearchSpace::Create({C("a", {"1", "1"})}).status().message().find("twice"), std::string::npos);
}

TEST(Space, ConditionsMustNameAnEarlierParameterAndItsValues) {
  Param beta = P("beta", DomainKind::kUniform, 0.8, 0.99);
  beta.when = Condition{"opt", {"adam"}};
  EXPECT_NE(SearchSpace::Create({beta, C("opt", {"adam", "sgd"})}).status().message().find("not a parameter listed before"),
            std::string::npos);
  beta.when = Condition{"opt", {"adamw"}};
  EXPECT_NE(SearchSpace::Create({C("opt", {"adam", "sgd"}), beta}).status().message().find("never takes"),
            std::string::npos);
}

TEST(Space, ConditionalParameterOnlyWhenActive) {
  Param beta = P("beta", DomainKind::kUniform, 0.8, 0.99);
  beta.when = Condition{"opt", {"adam"}};
  auto space = SearchSpace::Create({C("opt", {"adam", "sgd"}), beta});
  ASSERT_TRUE(space.ok());
  Rng rng(3);
  int with = 0;
  for (int i = 0; i < 200; ++i) {
    Assignment a = space->Sample(rng);
    const bool adam = a[0].second == "adam";
    EXPECT_EQ(a.size(), adam ? 2u : 1u);
    with += adam;
  }
  EXPECT_GT(with, 60);
  EXPECT_LT(with, 140);
}

TEST(Space, GridEnumeratesEveryCombinationRespectingConditions) {
  Param inner = C("inner", {"1", "2", "3"}, DomainKind::kGrid);
  inner.when = Condition{"outer", {"a"}};
  auto space = SearchSpace::Create({C("outer", {"a", "b"}, DomainKind::kGrid), inner, C("z", {"x", "y"})});
  ASSERT_TRUE(space.ok());
  auto grid = space->Grid();
  ASSERT_TRUE(grid.ok());
  // outer=a: 3 inner x 2 z; outer=b: 2 z.
  ASSERT_EQ(grid->size(), 8u);
  EXPECT_EQ(FormatAssignment((*grid)[0]), "outer=a inner=1 z=x");
  EXPECT_EQ(FormatAssignment((*grid)[7]), "outer=b z=y");
  auto continuous = SearchSpace::Create({P("lr", DomainKind::kUniform, 0, 1)});
  EXPECT_NE(continuous->Grid().status().message().find("grid searcher needs listed values"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::tune
