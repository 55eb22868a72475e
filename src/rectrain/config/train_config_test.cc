#include "rectrain/config/train_config.h"

#include <gtest/gtest.h>

namespace rectrain::config {
namespace {

Result<LoadedConfig> Load(const std::string& text, std::vector<std::string> sets = {}) {
  return LoadTrainConfigFromString(text, "c.yaml", sets);
}

TEST(TrainConfig, DefaultsWithOnlyTrainFiles) {
  auto c = Load("data: {train: a.tsv}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  const TrainConfig& t = c->config;
  EXPECT_EQ(t.train_files, std::vector<std::string>{"a.tsv"});
  EXPECT_TRUE(t.valid_files.empty());
  EXPECT_EQ(t.threads, 2);
  EXPECT_EQ(t.read.batch_size, 4096);
  EXPECT_TRUE(t.read.shuffle);
  EXPECT_EQ(t.model.type, "deepfm");
  EXPECT_EQ(t.model.hidden, (std::vector<int>{400, 400, 400}));
  EXPECT_EQ(t.embedding.optimizer.type, "adagrad");
  EXPECT_FLOAT_EQ(t.embedding_lr, 0.05f);
  EXPECT_EQ(t.optimizer.type, "adam");
  EXPECT_FLOAT_EQ(t.lr_schedule.lr, 1e-3f);
  EXPECT_EQ(t.data.schema.delimiter, '\t');
  EXPECT_EQ(t.train.epochs, 1);
  EXPECT_NE(c->hash, 0u);
  // The resolved YAML holds every key and binds again to the same hash.
  auto again = Load(c->resolved_yaml);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->resolved_yaml, c->resolved_yaml);
  EXPECT_EQ(again->hash, c->hash);
}

TEST(TrainConfig, SetOverridesAndSizes) {
  auto c = Load("data: {train: a.tsv}\nembedding: {memory_budget: 8GiB}\n",
                {"model.hidden=[256,128]", "optimizer.lr=0.002", "data.format=csv",
                 "data.dense=[x]", "data.header=true", "embedding.optimizer.lr=0.1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.model.hidden, (std::vector<int>{256, 128}));
  EXPECT_FLOAT_EQ(c->config.lr_schedule.lr, 0.002f);
  EXPECT_EQ(c->config.data.schema.delimiter, ',');
  EXPECT_EQ(c->config.embedding.memory_budget_bytes, int64_t{8} << 30);
  EXPECT_FLOAT_EQ(c->config.SparseLrSchedule().lr, 0.1f);
}

TEST(TrainConfig, AllErrorsReportedTogether) {
  auto c = Load(
      "data: {train: a.tsv, batch_size: 0}\n"
      "model:\n  hiden: [1]\n  type: deepfn\n"
      "optimizer: {lr: -1}\n"
      "train: {epochs: two}\n",
      {"embedding.optimiser.lr=0.1"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "invalid configuration (6 errors):\n"
            "  model.hiden: unknown key; did you mean model.hidden? (c.yaml:3:3)\n"
            "  embedding.optimiser: unknown key; did you mean embedding.optimizer? "
            "(--set embedding.optimiser.lr=0.1)\n"
            "  data.batch_size: 0 is out of range [1, 16777216] (c.yaml:1:22)\n"
            "  model.type: \"deepfn\" is not one of lr, fm, wide_deep, deepfm, dcn_v2; did you "
            "mean deepfm? (c.yaml:4:3)\n"
            "  optimizer.lr: -1 is out of range (0, +inf) (c.yaml:5:13)\n"
            "  train.epochs: expected an integer, got \"two\" (c.yaml:6:9)");
}

TEST(TrainConfig, CrossKeyChecks) {
  auto c = Load("data: {valid: v.tsv}\neval: {gauc: true}\noptimizer: {decay: cosine}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "invalid configuration (3 errors):\n"
            "  optimizer.decay_steps: must be > 0 when optimizer.decay is cosine\n"
            "  data.train: is required: a file, a glob or a list of them (e.g. --set "
            "data.train=train.tsv)\n"
            "  eval.gauc: needs data.group_key (the column that identifies a user or query) "
            "(c.yaml:2:8)");
}

TEST(TrainConfig, MissingFileIsNotFound) {
  auto c = LoadTrainConfig("/nonexistent/x.yaml", {});
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "cannot read config file /nonexistent/x.yaml");
}

}  // namespace
}  // namespace rectrain::config
