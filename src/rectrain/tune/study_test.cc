#include "rectrain/tune/study.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace rectrain::tune {
namespace {

std::string Base() {
  const std::string path = testing::TempDir() + "/study_base.yaml";
  std::ofstream(path) << "model: {type: lr}\n";
  return path;
}

TEST(Study, ParsesEveryPart) {
  const std::string text = "name: s1\nbase: " + Base() +
                           "\nsets: [train.epochs=2]\nmetric: valid.logloss\nnum_samples: 12\n"
                           "space:\n"
                           "  optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}\n"
                           "  model.hidden: {choice: [[400, 400], [64]]}\n"
                           "  embedding.optimizer.type: {grid: [adagrad, adam]}\n"
                           "  embedding.optimizer.beta1: {uniform: [0.8, 0.95], when: {embedding.optimizer.type: adam}}\n"
                           "searcher: {type: tpe, seed: 5, startup: 4}\n"
                           "scheduler: {type: asha, budget: steps, grace: 10, reduction: 3, max: 90}\n"
                           "trial_threads: 1\ntotal_threads: 4\n"
                           "launcher: {template: \"srun -N1 -n1 {cmd}\"}\n";
  auto s = ParseStudy(text, "s1.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "s1");
  EXPECT_EQ(s->direction, Direction::kMinimize);  // logloss defaults to min
  EXPECT_EQ(s->metric_field(), "logloss");
  EXPECT_EQ(s->num_samples, 12);
  ASSERT_EQ(s->space.params().size(), 4u);
  EXPECT_EQ(s->space.params()[1].domain.values[0], "[400, 400]");
  ASSERT_TRUE(s->space.params()[3].when.has_value());
  EXPECT_EQ(s->searcher.kind, SearcherKind::kTpe);
  EXPECT_EQ(s->searcher.startup, 4);
  EXPECT_EQ(s->scheduler.kind, SchedulerKind::kAsha);
  EXPECT_EQ(s->scheduler.max_budget, 90);
  EXPECT_EQ(s->concurrency(), 4);
  EXPECT_EQ(s->launcher.command_template, "srun -N1 -n1 {cmd}");
  EXPECT_TRUE(s->Better(0.3, 0.4));
}

TEST(Study, InlineBaseAndGridDefaultsToTheWholeGrid) {
  auto s = ParseStudy("base: {model: {type: fm}}\nsearcher: {type: grid}\nspace:\n  a.b: {grid: [1, 2, 3]}\n  c: {choice: [x, y]}\n", "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->base_path.empty());
  EXPECT_NE(s->base_yaml.find("type: fm"), std::string::npos);
  EXPECT_EQ(s->num_samples, 6);
}

TEST(Study, ReportsEveryProblemWithItsPosition) {
  auto s = ParseStudy("base: /no/such/file.yaml\nmetrc: valid.auc\nnum_samples: 0\n"
                      "space:\n  optimizer.lr: {uniform: [0.1, 0.01]}\n  x: {between: [1, 2]}\n"
                      "scheduler: {type: asha, grace: 5}\nsearcher: {type: bayes}\n",
                      "bad.yaml");
  ASSERT_FALSE(s.ok());
  const std::string m = s.status().message();
  EXPECT_NE(m.find("base: no file /no/such/file.yaml (bad.yaml:1:7)"), std::string::npos) << m;
  EXPECT_NE(m.find("metrc: unknown key; did you mean metric? (bad.yaml:2:1)"), std::string::npos) << m;
  EXPECT_NE(m.find("num_samples: 0 is not an integer in [1, 1000000]"), std::string::npos) << m;
  EXPECT_NE(m.find("space.optimizer.lr.uniform: uniform has an empty range [0.1, 0.01]"), std::string::npos) << m;
  EXPECT_NE(m.find("space.x.between: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("scheduler.max: asha needs the largest budget"), std::string::npos) << m;
  EXPECT_NE(m.find("searcher.type: \"bayes\" is not one of random, grid, tpe"), std::string::npos) << m;
}

TEST(Study, RejectsAMetricNoTrialReportsAndABadTemplate) {
  auto s = ParseStudy("base: {a: 1}\nmetric: valid.recall\nspace: {x: {choice: [1]}}\nlauncher: {template: srun}\n", "m.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("metric: \"valid.recall\" is not one of valid.auc"), std::string::npos);
  EXPECT_NE(s.status().message().find("launcher.template: must be a command line holding {cmd}"), std::string::npos);
  auto g = ParseStudy("base: {a: 1}\nsearcher: {type: grid}\nspace: {x: {uniform: [0, 1]}}\n", "g.yaml");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("grid searcher needs listed values"), std::string::npos);
  auto e = ParseStudy("base: {a: 1}\nspace: {}\n", "e.yaml");
  EXPECT_NE(e.status().message().find("space: expected a map of config keys"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::tune
