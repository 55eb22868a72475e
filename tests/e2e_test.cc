// End to end: DeepFM trained on a generated "easy" dataset must get within 0.01 of the
// oracle AUC (the AUC of the true click probabilities, FILE.prob) on held-out data.
// Labelled slow (about a minute on 2 cores).
#include <gtest/gtest.h>

#include <filesystem>

#include "rectrain/config/train_config.h"
#include "rectrain/train/trainer.h"
#include "tests/test_util.h"

namespace rectrain {
namespace {

TEST(EndToEnd, DeepFmOnEasyDataReachesTheOracleAuc) {
  const std::string dir = testing::TempDir("e2e");
  const std::string train = testing::Generate(dir, "train.tsv", 500000, 1, "easy");
  const std::string valid = testing::Generate(dir, "valid.tsv", 50000, 2, "easy");
  ASSERT_FALSE(train.empty());
  ASSERT_FALSE(valid.empty());
  auto c = config::LoadTrainConfigFromString(
      "seed: 42\nthreads: 2\n"
      "data: {train: " + train + ", valid: " + valid + ", batch_size: 1024}\n"
      "model: {type: deepfm, embedding_dim: 16, hidden: [64, 64]}\n"
      "embedding: {optimizer: {type: adagrad, lr: 0.01}}\n"
      "optimizer: {type: adam, lr: 0.001}\n"
      "train: {epochs: 1}\n",
      "e2e.yaml", {});
  ASSERT_TRUE(c.ok()) << c.status();
  train::TrainerOptions o;
  o.run_dir = dir + "/run";
  o.progress = 0;
  o.size_compute_pool = SetComputePoolThreads;
  o.echo = false;
  auto s = train::Train(*c, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->has_valid);
  ASSERT_TRUE(s->has_oracle);
  EXPECT_EQ(s->valid.rows, 50000);
  EXPECT_GT(s->oracle.auc, 0.84);
  EXPECT_GT(s->valid.auc, s->oracle.auc - 0.01)
      << "valid AUC " << s->valid.auc << " vs oracle " << s->oracle.auc << " (run dir " << o.run_dir << ")";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rectrain
