// Every config in examples/ parses strictly and builds its model for the criteo schema.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "rectrain/config/train_config.h"
#include "rectrain/nn/model_config.h"

namespace rectrain {
namespace {
namespace fs = std::filesystem;

std::string SourceDir() {
  const char* env = std::getenv("RECTRAIN_SOURCE_DIR");
  return env != nullptr ? env : RECTRAIN_SOURCE_DIR_DEFAULT;
}

TEST(Examples, EveryExampleConfigParsesAndBuildsItsModel) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(SourceDir() + "/examples")) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem());
  }
  std::sort(names.begin(), names.end());
  // The nine documented CTR examples are all there (and the image classifier, tested below).
  EXPECT_EQ(names, (std::vector<std::string>{"autoint", "dcn_v2", "deepfm", "dlrm", "fashion_mnist_mlp", "fm", "fwfm", "lr", "wide_deep", "xdeepfm"}));
  names.erase(std::find(names.begin(), names.end(), "fashion_mnist_mlp"));
  std::vector<std::string> sparse;
  for (int i = 1; i <= 26; ++i) sparse.push_back("C" + std::to_string(i));
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    auto c = config::LoadTrainConfig(SourceDir() + "/examples/" + name + ".yaml", {});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->config.model.type, name);
    EXPECT_EQ(c->config.train_files, std::vector<std::string>{"data/train.tsv"});
    // A config that lists its categorical fields (fwfm adds bucketised dense ones) builds on them.
    const auto& fields = c->config.data.schema.sparse.empty() ? sparse : c->config.data.schema.sparse;
    auto model = nn::MakeModel(c->config.model, fields, 13, c->config.embedding);
    ASSERT_TRUE(model.ok()) << model.status();
  }
}

// The data-parallel image classifier: IDX input, a softmax MLP over 784 pixels and 10 classes.
TEST(Examples, FashionMnistMlpParsesAndBuildsItsModel) {
  auto c = config::LoadTrainConfig(SourceDir() + "/examples/fashion_mnist_mlp.yaml", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.data.schema.format, data::DataFormat::kIdx);
  EXPECT_EQ(c->config.model.type, "mlp");
  EXPECT_EQ(c->config.model.num_classes, 10);
  EXPECT_EQ(c->config.train.early_stopping.metric, config::EarlyStoppingMetric::kAccuracy);
  auto model = nn::MakeModel(c->config.model, {}, 784, c->config.embedding);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->num_outputs(), 10);
  EXPECT_TRUE((*model)->spec().tables.empty());
}

// examples/async/deepfm.yaml: examples/deepfm.yaml under dist.mode async (which refuses the
// periodic evaluation, checkpoints and early stopping of the sync example) loads, and differs
// from it only in those keys and dist.*.
TEST(Examples, AsyncDeepFmLoadsAndMatchesTheSyncExample) {
  auto sync = config::LoadTrainConfig(SourceDir() + "/examples/deepfm.yaml", {});
  ASSERT_TRUE(sync.ok()) << sync.status();
  auto refused = config::LoadTrainConfig(SourceDir() + "/examples/deepfm.yaml", {"dist.mode=async"});
  EXPECT_FALSE(refused.ok());
  auto c = config::LoadTrainConfig(SourceDir() + "/examples/async/deepfm.yaml", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.dist.mode, config::DistMode::kAsync);
  EXPECT_EQ(c->config.dist.servers, 2);
  EXPECT_EQ(c->config.model.type, "deepfm");
  auto same = config::LoadTrainConfig(SourceDir() + "/examples/deepfm.yaml",
                                      {"dist.mode=async", "dist.servers=2", "train.eval_every_steps=0",
                                       "train.checkpoint_every_steps=0", "train.early_stopping.patience=0"});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->resolved_yaml, c->resolved_yaml);
}

// examples/libsvm/: the libsvm (LR over the bag of indices) and libffm (DeepFM over 8 fields)
// configs parse and build their models for the schema their format gives (docs/formats/libsvm.md).
TEST(Examples, LibsvmExamplesParseAndBuildTheirModels) {
  struct Case {
    std::string name, format, model;
    std::vector<std::string> sparse;
  };
  const std::vector<Case> cases = {
      {"adult_libsvm", "libsvm", "lr", {"features"}},
      {"adult_libffm", "libffm", "deepfm", {"6", "7", "8", "9", "10", "11", "12", "13"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    auto c = config::LoadTrainConfig(SourceDir() + "/examples/libsvm/" + k.name + ".yaml", {});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_STREQ(data::FormatName(c->config.data.schema.format), k.format.c_str());
    EXPECT_EQ(c->config.model.type, k.model);
    auto model = nn::MakeModel(c->config.model, k.sparse, 6, c->config.embedding);
    ASSERT_TRUE(model.ok()) << model.status();
  }
}

// examples/online/: the online DeepFM reads a Redis stream (docs/online.md) and builds its model.
TEST(Examples, OnlineExampleParsesAndBuildsItsModel) {
  auto c = config::LoadTrainConfig(SourceDir() + "/examples/online/deepfm_stream.yaml", {});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->config.stream.has_value());
  EXPECT_EQ(c->config.stream->kind, stream::SourceKind::kRedis);
  EXPECT_EQ(c->config.stream->dead_letter, "events-dead");
  EXPECT_TRUE(c->config.train_files.empty());
  EXPECT_EQ(c->config.train.checkpoint_every_s, 60);
  std::vector<std::string> sparse;
  for (int i = 1; i <= 26; ++i) sparse.push_back("C" + std::to_string(i));
  ASSERT_TRUE(nn::MakeModel(c->config.model, sparse, 13, c->config.embedding).ok());
  // The same with a Kafka topic instead.
  auto k = config::LoadTrainConfig(SourceDir() + "/examples/online/deepfm_stream.yaml",
                                   {"data.stream.url=kafka://127.0.0.1:9092/events"});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->config.stream->kind, stream::SourceKind::kKafka);
}

}  // namespace
}  // namespace rectrain
