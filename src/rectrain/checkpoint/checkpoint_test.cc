#include "rectrain/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/testing/fake_table.h"

namespace rectrain::checkpoint {
namespace {
namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rectrain_ckpt_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    w_ = {1, 2, 3, 4};
    b_ = {0.5f};
    gw_.resize(4);
    gb_.resize(1);
    state_ = {9, 8, 7};
    params_ = {{"mlp.0.weight", w_, gw_, true}, {"mlp.0.bias", b_, gb_, false}};
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& rel) const { return (dir_ / rel).string(); }

  fs::path dir_;
  std::vector<float> w_, b_, gw_, gb_, state_;
  std::vector<optim::ParamRef> params_;
};

TEST_F(CheckpointTest, DenseRoundTrip) {
  std::vector<std::span<float>> st = {state_};
  ASSERT_TRUE(WriteDenseFile(Path("d.bin"), params_, st).ok());
  std::vector<float> w2(4), b2(1), s2(3), g(4);
  std::vector<optim::ParamRef> p2 = {{"mlp.0.weight", w2, g, true}, {"mlp.0.bias", b2, g, false}};
  std::vector<std::span<float>> st2 = {s2};
  ASSERT_TRUE(ReadDenseFile(Path("d.bin"), p2, st2).ok());
  EXPECT_EQ(w2, w_);
  EXPECT_EQ(b2, b_);
  EXPECT_EQ(s2, state_);
}

TEST_F(CheckpointTest, DenseErrors) {
  std::vector<std::span<float>> st = {state_};
  ASSERT_TRUE(WriteDenseFile(Path("d.bin"), params_, st).ok());
  // A parameter with another name.
  std::vector<float> w2(4), b2(1), g(4);
  std::vector<optim::ParamRef> renamed = {{"mlp.0.W", w2, g, true}, {"mlp.0.bias", b2, g, false}};
  Status s = ReadDenseFile(Path("d.bin"), renamed, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), Path("d.bin") +
                             ": parameter 0 is 'mlp.0.weight' with 4 values but the model has "
                             "'mlp.0.W' with 4 (was it written with a different model config?)");
  // A flipped byte.
  {
    std::fstream f(Path("d.bin"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('\x7f');
  }
  s = ReadDenseFile(Path("d.bin"), params_, {});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), Path("d.bin") + ": checksum mismatch (the file is corrupt or was truncated)");
  EXPECT_EQ(ReadDenseFile(Path("missing.bin"), params_, {}).code(), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, WriteReadListPrune) {
  rectrain::testing::FakeTable t0("C1", 2), t1("C2", 2);
  std::vector<embedding::EmbeddingTable*> tables = {&t0, &t1};
  CheckpointMeta meta;
  meta.step = 10;
  meta.epoch = 1;
  meta.rows_in_epoch = 77;
  meta.best_metric = 0.75;
  meta.config_hash = 0xfedcba9876543210ULL;
  meta.model_type = "deepfm";
  meta.tables = {"C1", "C2"};
  const std::string ckdir = Path("checkpoints");
  for (int step : {10, 20, 30, 40}) {
    meta.step = step;
    t0.saved_value = step;
    ASSERT_TRUE(WriteCheckpoint(ckdir + "/step-" + std::to_string(step), meta, params_, nullptr, tables).ok());
  }
  fs::create_directories(ckdir + "/step-50.tmp");  // an interrupted write is not a checkpoint
  auto all = ListCheckpoints(ckdir);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.back().first, 40);
  ASSERT_TRUE(PruneCheckpoints(ckdir, 2).ok());
  all = ListCheckpoints(ckdir);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all.front().first, 30);
  EXPECT_FALSE(fs::exists(ckdir + "/step-50.tmp"));

  std::fill(w_.begin(), w_.end(), 0.0f);
  t0.saved_value = 0;
  auto read = ReadCheckpoint(all.back().second, params_, nullptr, tables);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->step, 40);
  EXPECT_EQ(read->epoch, 1);
  EXPECT_EQ(read->rows_in_epoch, 77);
  EXPECT_DOUBLE_EQ(read->best_metric, 0.75);
  EXPECT_EQ(read->config_hash, 0xfedcba9876543210ULL);
  EXPECT_EQ(w_, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(t0.saved_value, 40);

  rectrain::testing::FakeTable other("C9", 2);
  std::vector<embedding::EmbeddingTable*> wrong = {&t0, &other};
  EXPECT_EQ(ReadCheckpoint(all.back().second, params_, nullptr, wrong).status().message(),
            all.back().second + ": checkpoint table 1 is 'C2', the model's is 'C9'");
}

}  // namespace
}  // namespace rectrain::checkpoint
