// Every config in examples/ parses strictly and builds its model for the criteo schema.
#include <gtest/gtest.h>

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
  // The five documented examples are all there.
  EXPECT_EQ(names, (std::vector<std::string>{"dcn_v2", "deepfm", "fm", "lr", "wide_deep"}));
  std::vector<std::string> sparse;
  for (int i = 1; i <= 26; ++i) sparse.push_back("C" + std::to_string(i));
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    auto c = config::LoadTrainConfig(SourceDir() + "/examples/" + name + ".yaml", {});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->config.model.type, name);
    EXPECT_EQ(c->config.train_files, std::vector<std::string>{"data/train.tsv"});
    auto model = nn::MakeModel(c->config.model, sparse, 13, c->config.embedding);
    ASSERT_TRUE(model.ok()) << model.status();
  }
}

}  // namespace
}  // namespace rectrain
