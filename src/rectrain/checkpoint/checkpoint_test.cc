#include "rectrain/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "rectrain/base/random.h"
#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/testing/fake_table.h"
#include "rectrain/testing/table_file.h"

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

// Incremental checkpoints with a real table: a full checkpoint and deltas on it.
class DeltaCheckpointTest : public CheckpointTest {
 protected:
  static std::unique_ptr<embedding::EmbeddingTable> Table() {
    embedding::EmbeddingTableConfig c;
    c.name = "emb";
    c.dim = 4;
    c.num_shards = 4;
    c.min_count = 2;
    c.optimizer.type = optim::SparseOptimizerType::kAdagrad;
    auto t = embedding::MakeEmbeddingTable(c);
    RECTRAIN_CHECK(t.ok()) << t.status();
    return std::move(*t);
  }
  // `steps` training steps of 50 ids out of 400 (and the dense weights move too).
  void Train(embedding::EmbeddingTable& t, int steps) {
    for (int s = 0; s < steps; ++s, ++step_) {
      std::vector<uint64_t> ids;
      for (int i = 0; i < 50; ++i) ids.push_back(rng_.Next() % 400);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      std::vector<float> rows(ids.size() * 4), grads(ids.size() * 4);
      ASSERT_TRUE(t.Pull(ids, embedding::PullMode::kTrain, rows, {1}).ok());
      for (float& g : grads) g = static_cast<float>(rng_.Uniform()) - 0.5f;
      ASSERT_TRUE(t.Push(ids, grads, {.step = step_, .learning_rate = 0.1f}, {1}).ok());
      w_[step_ % 4] += 0.25f;
    }
  }
  // Writes step-<step> under checkpoints/: full, or a delta on `base` after `previous`.
  Status Write(embedding::EmbeddingTable& t, int step, const std::string& base = "", const std::string& previous = "",
               int chain = 0, const std::string& root = "checkpoints") {
    CheckpointMeta meta;
    meta.step = step;
    meta.model_type = "deepfm";
    meta.tables = {"emb"};
    meta.base = base;
    meta.previous = previous;
    meta.chain_length = chain;
    std::vector<embedding::EmbeddingTable*> tables = {&t};
    return WriteCheckpoint(Path(root + "/step-" + std::to_string(step)), meta, params_, nullptr, tables);
  }
  // Reads checkpoint `dir` into a fresh table and saves that (a full table file) to `saved`.
  Result<CheckpointMeta> Restore(const std::string& dir, const std::string& saved) {
    auto t = Table();
    std::vector<embedding::EmbeddingTable*> tables = {t.get()};
    RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta m, ReadCheckpoint(dir, params_, nullptr, tables));
    RECTRAIN_RETURN_IF_ERROR(t->Save(saved));
    return m;
  }
  // step-10 full, step-20 and step-30 deltas on it; the table as of step-30 saved to `full`.
  void WriteChain(const std::string& full) {
    table_->TrackChanges(embedding::ChangeLog::kCheckpoint, true);
    Train(*table_, 6);
    ASSERT_TRUE(Write(*table_, 10).ok());
    Train(*table_, 3);
    ASSERT_TRUE(Write(*table_, 20, "step-10", "step-10", 1).ok());
    Train(*table_, 3);
    ASSERT_TRUE(Write(*table_, 30, "step-10", "step-20", 2).ok());
    if (!full.empty()) {
      ASSERT_TRUE(table_->Save(full).ok());
    }
  }

  std::unique_ptr<embedding::EmbeddingTable> table_ = Table();
  Rng rng_{5};
  int64_t step_ = 0;
};

TEST_F(DeltaCheckpointTest, FullAndDeltasRestoreAsTheFullCheckpoint) {
  WriteChain(Path("run_state.bin"));
  const std::vector<float> dense = w_;
  // The same state as a full checkpoint, elsewhere.
  ASSERT_TRUE(Write(*table_, 30, "", "", 0, "other").ok());
  auto chain = ResolveChain(Path("checkpoints/step-30"));
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ(*chain, (std::vector<std::string>{Path("checkpoints/step-10"), Path("checkpoints/step-20"),
                                               Path("checkpoints/step-30")}));
  std::fill(w_.begin(), w_.end(), 0.0f);
  auto m = Restore(Path("checkpoints/step-30"), Path("from_chain.bin"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->step, 30);
  EXPECT_EQ(m->base, "step-10");
  EXPECT_EQ(m->chain_length, 2);
  EXPECT_EQ(w_, dense);
  ASSERT_TRUE(Restore(Path("other/step-30"), Path("from_full.bin")).ok());
  const auto a = rectrain::testing::ReadCanonicalTable(Path("from_chain.bin"));
  EXPECT_TRUE(a == rectrain::testing::ReadCanonicalTable(Path("from_full.bin")));
  EXPECT_TRUE(a == rectrain::testing::ReadCanonicalTable(Path("run_state.bin")));
  EXPECT_GT(a.rows.size(), 100u);
  // A delta holds the table's changes only: smaller than the full file of the same state.
  EXPECT_LT(fs::file_size(Path("checkpoints/step-30/tables/emb.delta.bin")),
            fs::file_size(Path("other/step-30/tables/emb.bin")));
  std::ifstream meta(Path("checkpoints/step-30/meta.json"));
  const std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"incremental\""), std::string::npos) << text;
}

// A broken chain is an error naming the link and what to do; a corrupt delta file names the file.
TEST_F(DeltaCheckpointTest, BrokenChainsAreClearErrors) {
  WriteChain("");
  fs::rename(Path("checkpoints/step-20"), Path("moved"));
  auto r = Restore(Path("checkpoints/step-30"), Path("x.bin"));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("the delta checkpoint " + Path("checkpoints/step-30") +
                                      " cannot be restored: the checkpoint it follows, " +
                                      Path("checkpoints/step-20") + ", is missing"),
            std::string::npos)
      << r.status();
  fs::rename(Path("moved"), Path("checkpoints/step-20"));
  ASSERT_TRUE(Restore(Path("checkpoints/step-30"), Path("x.bin")).ok());
  // step-10 written again (another run in this directory): the deltas are not of it.
  auto other = Table();
  Train(*other, 2);
  ASSERT_TRUE(Write(*other, 10).ok());
  r = Restore(Path("checkpoints/step-30"), Path("x.bin"));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(Path("checkpoints/step-10") + ", is not the one it was written after"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("remove " + Path("checkpoints/step-20") + " and the checkpoints after it"),
            std::string::npos)
      << r.status();
}

TEST_F(DeltaCheckpointTest, CorruptDeltaFileIsDataLossNamingIt) {
  WriteChain("");
  const std::string file = Path("checkpoints/step-20/tables/emb.delta.bin");
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    f.put('\x55');
  }
  auto r = Restore(Path("checkpoints/step-30"), Path("x.bin"));
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status();
}

// Pruning keeps what a kept delta rests on, and only that.
TEST_F(DeltaCheckpointTest, PruneKeepsTheChainsOfKeptDeltas) {
  WriteChain("");
  ASSERT_TRUE(PruneCheckpoints(Path("checkpoints"), 1).ok());
  EXPECT_EQ(ListCheckpoints(Path("checkpoints")).size(), 3u);
  Train(*table_, 2);
  ASSERT_TRUE(Write(*table_, 40).ok());
  Train(*table_, 2);
  ASSERT_TRUE(Write(*table_, 50, "step-40", "step-40", 1).ok());
  ASSERT_TRUE(PruneCheckpoints(Path("checkpoints"), 1).ok());
  const auto left = ListCheckpoints(Path("checkpoints"));
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].first, 40);
  EXPECT_EQ(left[1].first, 50);
  ASSERT_TRUE(Restore(Path("checkpoints/step-50"), Path("x.bin")).ok());
}

}  // namespace
}  // namespace rectrain::checkpoint
