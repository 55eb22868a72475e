// Integration tests of the trainer through the library: determinism, resume equality,
// interruption, checkpoint rotation, summary.json, evaluation of a run directory.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "rectrain/config/train_config.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/train/trainer.h"
#include "rectrain/testing/table_file.h"
#include "tests/test_util.h"

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using testing::ReadAll;

class TrainIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("train_it"));
    train_ = new std::string(testing::Generate(*dir_, "train.tsv", 6000, 1));
    valid_ = new std::string(testing::Generate(*dir_, "valid.tsv", 2000, 2));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete train_;
    delete valid_;
  }

  // A small DeepFM with dropout (exercises per-step seeds), shuffling and small chunks.
  static std::string Config(bool with_valid = false) {
    return "seed: 7\ndeterministic: true\nthreads: 2\n"
           "data:\n  train: " + *train_ + "\n" +
           (with_valid ? "  valid: " + *valid_ + "\n" : "") +
           "  batch_size: 256\n  shuffle: true\n  shuffle_buffer: 1000\n  chunk_bytes: 64KiB\n"
           "  reader_threads: 2\n"
           "model: {type: deepfm, embedding_dim: 4, hidden: [16, 8], dropout: 0.1}\n"
           "embedding: {optimizer: {type: adagrad, lr: 0.05}}\n"
           "optimizer: {type: adam, lr: 0.003}\n"
           "train: {epochs: 2, log_every_steps: 1000}\n";
  }

  static Result<train::TrainSummary> Run(const std::string& run_dir, std::vector<std::string> sets,
                                         bool resume = false, const std::atomic<int>* stop = nullptr,
                                         bool with_valid = false, train::TrainObserver* observer = nullptr) {
    auto c = config::LoadTrainConfigFromString(Config(with_valid), "test.yaml", sets);
    if (!c.ok()) return c.status();
    train::TrainerOptions o;
    o.run_dir = run_dir;
    o.resume = resume;
    o.stop_signal = stop;
    o.progress = 0;
    o.size_compute_pool = SetComputePoolThreads;
    o.echo = false;
    o.observer = observer;
    return train::Train(*c, o);
  }

  // Same dense parameters and optimizer state (bytes), same table contents (by id).
  static void ExpectSameModel(const std::string& a, const std::string& b) {
    EXPECT_EQ(ReadAll(a + "/model/dense.bin"), ReadAll(b + "/model/dense.bin"))
        << a << " vs " << b << ": dense parameters differ";
    int tables = 0;
    for (const auto& e : fs::directory_iterator(a + "/model/tables")) {
      auto ta = testing::ReadCanonicalTable(e.path().string());
      auto tb = testing::ReadCanonicalTable(b + "/model/tables/" + e.path().filename().string());
      ASSERT_TRUE(ta.ok && tb.ok) << e.path();
      EXPECT_GT(ta.rows.size(), 0u);
      EXPECT_TRUE(ta == tb) << "table " << e.path().filename() << " differs";
      ++tables;
    }
    EXPECT_GT(tables, 0);
  }

  static void ExpectDifferentDense(const std::string& a, const std::string& b) {
    EXPECT_NE(ReadAll(a + "/model/dense.bin"), ReadAll(b + "/model/dense.bin")) << a << " vs " << b;
  }

  static std::string* dir_;
  static std::string* train_;
  static std::string* valid_;
};
std::string* TrainIntegration::dir_ = nullptr;
std::string* TrainIntegration::train_ = nullptr;
std::string* TrainIntegration::valid_ = nullptr;

TEST_F(TrainIntegration, DeterministicRunsGiveIdenticalModels) {
  const std::string a = *dir_ + "/det_a", b = *dir_ + "/det_b";
  auto ra = Run(a, {});
  ASSERT_TRUE(ra.ok()) << ra.status();
  auto rb = Run(b, {});
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_EQ(ra->status, train::RunOutcome::kCompleted);
  EXPECT_EQ(ra->steps, 2 * 24);  // 6000 rows / 256 = 23.4 -> 24 batches per epoch
  EXPECT_EQ(ra->rows_read, 12000);
  EXPECT_EQ(ra->epochs, 2);
  ExpectSameModel(a, b);
  // Byte-identical table files too (same insertion history).
  EXPECT_EQ(ReadAll(a + "/model/tables/emb.bin"), ReadAll(b + "/model/tables/emb.bin"));
  // Another seed gives another model.
  const std::string c = *dir_ + "/det_c";
  ASSERT_TRUE(Run(c, {"seed=8"}).ok());
  EXPECT_NE(ReadAll(a + "/model/dense.bin"), ReadAll(c + "/model/dense.bin"));
}

// deterministic: true pins what `auto` would decide from the machine's state: with a memory
// budget too small for data.train and with a roomy one, the models are identical (without the
// flag, the roomy run caches epoch 0 and permutes it fully in epoch 1, so the models differ).
TEST_F(TrainIntegration, DeterministicIgnoresTheMachineDependentMemoryCacheChoice) {
  const std::string small = *dir_ + "/pin_small", big = *dir_ + "/pin_big";
  const std::string free_small = *dir_ + "/free_small", free_big = *dir_ + "/free_big";
  ASSERT_TRUE(Run(small, {"data.memory_cache_bytes=64KiB"}).ok());
  ASSERT_TRUE(Run(big, {"data.memory_cache_bytes=1GiB"}).ok());
  ExpectSameModel(small, big);
  EXPECT_NE(ReadAll(big + "/train.log").find("deterministic: data.memory_cache auto -> off"),
            std::string::npos);
  ASSERT_TRUE(Run(free_small, {"deterministic=false", "data.memory_cache_bytes=64KiB"}).ok());
  ASSERT_TRUE(Run(free_big, {"deterministic=false", "data.memory_cache_bytes=1GiB"}).ok());
  ExpectDifferentDense(free_small, free_big);
}

TEST_F(TrainIntegration, ResumeEqualsUninterruptedRun) {
  const std::string full = *dir_ + "/res_full", part = *dir_ + "/res_part";
  ASSERT_TRUE(Run(full, {}).ok());
  // Stop mid epoch 0, resume to mid epoch 1 (crossing the epoch boundary), then finish.
  auto r1 = Run(part, {"train.max_steps=10"});
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->steps, 10);
  auto r2 = Run(part, {"train.max_steps=30"}, /*resume=*/true);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->steps, 30);
  EXPECT_EQ(r2->session_steps, 20);
  auto r3 = Run(part, {}, /*resume=*/true);
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ(r3->steps, 48);
  EXPECT_EQ(r3->rows_read, 12000);
  ExpectSameModel(full, part);
}

// With expiry (embedding.ttl_steps) and admission, a run stopped and resumed twice ends with
// the uninterrupted run's model: the checkpoints carry every row's and pending id's last step.
TEST_F(TrainIntegration, ResumeWithExpiryEqualsUninterruptedRun) {
  const std::string full = *dir_ + "/ttl_full", part = *dir_ + "/ttl_part";
  const std::vector<std::string> ttl = {"embedding.ttl_steps=4", "embedding.min_count=2"};
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), ttl.begin(), ttl.end());
    return sets;
  };
  auto r0 = Run(full, with({}));
  ASSERT_TRUE(r0.ok()) << r0.status();
  int64_t expired = 0;
  for (const auto& t : r0->tables) expired += t.expirations;
  EXPECT_GT(expired, 0);
  ASSERT_TRUE(Run(part, with({"train.max_steps=13"})).ok());
  ASSERT_TRUE(Run(part, with({"train.max_steps=30"}), /*resume=*/true).ok());
  auto r3 = Run(part, with({}), /*resume=*/true);
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ(r3->steps, 48);
  int64_t expired_resumed = 0;
  for (const auto& t : r3->tables) expired_resumed += t.expirations;
  EXPECT_EQ(expired_resumed, expired);
  ExpectSameModel(full, part);
}

// Incremental checkpoints (train.checkpoint_full_every 3: a full checkpoint, then two deltas of
// the rows changed since the previous one): a run stopped on a delta and resumed twice ends with
// the model of the uninterrupted run without incremental checkpoints, byte for byte.
TEST_F(TrainIntegration, IncrementalCheckpointsResumeEqualsUninterruptedRun) {
  const std::string full = *dir_ + "/inc_full", part = *dir_ + "/inc_part";
  const std::vector<std::string> ttl = {"embedding.ttl_steps=4", "embedding.min_count=2"};
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), ttl.begin(), ttl.end());
    for (const char* s : {"train.checkpoint_every_steps=4", "train.checkpoint_full_every=3", "train.keep_checkpoints=1"}) {
      sets.push_back(s);
    }
    return sets;
  };
  ASSERT_TRUE(Run(full, ttl).ok());
  // Checkpoints at 4 (full), 8, 10 (deltas): stopped by max_steps on a delta.
  ASSERT_TRUE(Run(part, with({"train.max_steps=10"})).ok());
  const std::string meta = ReadAll(part + "/checkpoints/step-10/meta.json");
  EXPECT_NE(meta.find("\"base\": {\n      \"dir\": \"step-4\""), std::string::npos) << meta;
  EXPECT_TRUE(fs::exists(part + "/checkpoints/step-10/tables/emb.delta.bin"));
  // keep_checkpoints 1 keeps the newest and the chain it rests on.
  EXPECT_TRUE(fs::exists(part + "/checkpoints/step-4/meta.json"));
  EXPECT_TRUE(fs::exists(part + "/checkpoints/step-8/meta.json"));
  ASSERT_TRUE(Run(part, with({"train.max_steps=30"}), /*resume=*/true).ok());
  auto r3 = Run(part, with({}), /*resume=*/true);
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ(r3->steps, 48);
  const std::string log = ReadAll(part + "/train.log");
  EXPECT_NE(log.find("checkpoint (delta 2 on step-4) "), std::string::npos) << log;
  ExpectSameModel(full, part);
}

// Asks the run to stop (as SIGTERM would) once a step is reached (OnProgress: at log lines).
class StopAtStep : public train::TrainObserver {
 public:
  StopAtStep(int64_t step, std::atomic<int>* flag) : step_(step), flag_(flag) {}
  void OnProgress(const train::ProgressInfo& p) override {
    if (p.step >= step_) flag_->store(SIGTERM);
  }

 private:
  int64_t step_;
  std::atomic<int>* flag_;
};

TEST_F(TrainIntegration, StopSignalCheckpointsAndResumes) {
  const std::string full = *dir_ + "/sig_full", part = *dir_ + "/sig_part";
  ASSERT_TRUE(Run(full, {"train.epochs=1"}).ok());
  std::atomic<int> stop{0};
  StopAtStep at_first(1, &stop);  // stops after the first step
  auto r1 = Run(part, {"train.epochs=1", "train.log_every_steps=1"}, false, &stop, false, &at_first);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->status, train::RunOutcome::kInterrupted);
  EXPECT_EQ(r1->interrupted_by, SIGTERM);
  EXPECT_EQ(r1->steps, 1);
  EXPECT_TRUE(fs::exists(part + "/checkpoints/step-1/meta.json"));
  EXPECT_FALSE(fs::exists(part + "/model"));
  auto summary = nlohmann::json::parse(ReadAll(part + "/summary.json"));
  EXPECT_EQ(summary["status"], "interrupted");
  EXPECT_EQ(summary["interrupted_by_signal"], SIGTERM);
  auto r2 = Run(part, {"train.epochs=1", "train.log_every_steps=1"}, /*resume=*/true);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->status, train::RunOutcome::kCompleted);
  ExpectSameModel(full, part);
}

// A stop requested before the first step (during setup): nothing trained, nothing to save.
TEST_F(TrainIntegration, StopBeforeTheFirstStepSavesNothing) {
  const std::string run = *dir_ + "/sig_before";
  std::atomic<int> stop{SIGTERM};  // already set when the run starts
  auto r = Run(run, {"train.epochs=1"}, false, &stop);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, train::RunOutcome::kInterrupted);
  EXPECT_EQ(r->interrupted_by, SIGTERM);
  EXPECT_EQ(r->steps, 0);
  EXPECT_EQ(r->last_checkpoint, "");
  EXPECT_FALSE(fs::exists(run + "/checkpoints/step-0"));
  EXPECT_FALSE(fs::exists(run + "/model"));
  EXPECT_EQ(nlohmann::json::parse(ReadAll(run + "/summary.json"))["status"], "interrupted");
  EXPECT_NE(ReadAll(run + "/train.log").find("stopped before the first step of this run: nothing trained, no "
                                             "checkpoint written"),
            std::string::npos);
}

TEST_F(TrainIntegration, CheckpointRotationSummaryAndEval) {
  const std::string run = *dir_ + "/rot";
  auto r = Run(run, {"train.checkpoint_every_steps=5", "train.keep_checkpoints=2",
                     "train.eval_every_steps=20"},
               false, nullptr, /*with_valid=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints")) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"step-45", "step-48"}));
  EXPECT_TRUE(fs::exists(run + "/config.yaml"));
  EXPECT_TRUE(fs::exists(run + "/train.log"));
  // summary.json: the documented fields (docs/formats/summary.md).
  auto s = nlohmann::json::parse(ReadAll(run + "/summary.json"));
  EXPECT_EQ(s["status"], "completed");
  for (const char* k : {"samples_per_sec", "steps", "rows_read", "rows_rejected", "epochs", "seconds"}) {
    EXPECT_TRUE(s["train"].contains(k)) << k;
  }
  for (const char* k : {"data_wait_s", "lookup_s", "forward_s", "backward_s", "sparse_update_s",
                        "dense_update_s"}) {
    EXPECT_GE(s["train"]["breakdown"][k].get<double>(), 0.0) << k;
  }
  EXPECT_EQ(s["train"]["steps"], 48);
  EXPECT_EQ(s["train"]["rows_read"], 12000);
  EXPECT_EQ(s["valid"]["rows"], 2000);
  const double auc = s["valid"]["auc"].get<double>();
  EXPECT_GT(auc, 0.55);
  EXPECT_GT(s["oracle"]["auc"].get<double>(), auc);
  EXPECT_EQ(s["tables"][0]["name"], "emb");
  EXPECT_GT(s["tables"][0]["rows"].get<int64_t>(), 0);
  EXPECT_GT(s["peak_rss_bytes"].get<int64_t>(), 0);
  // Evaluating the run directory on the valid file reproduces the final evaluation exactly.
  train::EvalOptions eo;
  eo.run_dir = run;
  eo.files = {*valid_};
  eo.size_compute_pool = SetComputePoolThreads;
  auto e = train::EvaluateRun(eo);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->metrics.rows, 2000);
  EXPECT_DOUBLE_EQ(e->metrics.auc, auc);
  EXPECT_DOUBLE_EQ(e->metrics.logloss, s["valid"]["logloss"].get<double>());
  ASSERT_TRUE(e->has_oracle);
  EXPECT_DOUBLE_EQ(e->oracle.auc, s["oracle"]["auc"].get<double>());
}

TEST_F(TrainIntegration, ResumeWithoutCheckpointIsNotFound) {
  auto r = Run(*dir_ + "/empty_resume", {}, /*resume=*/true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "no checkpoint to resume in " + *dir_ +
                                      "/empty_resume/checkpoints (start a new run without --resume)");
}

TEST_F(TrainIntegration, BadDataFailsWithSummary) {
  const std::string bad = *dir_ + "/bad.tsv";
  testing::WriteAll(bad, "1\t2\n");
  const std::string run = *dir_ + "/bad_run";
  auto r = Run(run, {"data.train=" + bad});
  ASSERT_FALSE(r.ok());
  auto s = nlohmann::json::parse(ReadAll(run + "/summary.json"));
  EXPECT_EQ(s["status"], "failed");
  EXPECT_NE(s["error"].get<std::string>().find("bad.tsv"), std::string::npos) << s["error"];
}

// The in-memory epoch cache (data.memory_cache, data/epoch_source.h): in file order it serves
// exactly the rows the files give, so the model is bit-identical to an uncached run.
TEST_F(TrainIntegration, MemoryCacheInFileOrderEqualsReadingTheFiles) {
  const std::string cached = *dir_ + "/mc_on", files = *dir_ + "/mc_off";
  auto a = Run(cached, {"data.shuffle=off", "data.memory_cache=on", "train.epochs=3"}, false, nullptr, true);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Run(files, {"data.shuffle=off", "data.memory_cache=off", "train.epochs=3"}, false, nullptr, true);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->rows_read, 18000);
  ExpectSameModel(cached, files);
  EXPECT_DOUBLE_EQ(a->valid.auc, b->valid.auc);
  const std::string log = ReadAll(cached + "/train.log");
  EXPECT_NE(log.find("memory cache: data.train holds 6000 rows"), std::string::npos) << log;
  EXPECT_NE(log.find("memory cache: data.valid holds 2000 rows"), std::string::npos) << log;
  EXPECT_NE(log.find("epoch 2 done at step 72 (this session: data wait"), std::string::npos) << log;
  EXPECT_EQ(ReadAll(files + "/train.log").find("memory cache:"), std::string::npos);
}

// data.memory_cache: auto with train.epochs: 1 (the benchmark case): no later pass could read a
// copy of data.train, so it is not copied (no epoch-0 copy cost); data.valid is still cached.
TEST_F(TrainIntegration, MemoryCacheAutoSkipsTheSingleTrainingPass) {
  const std::string one = *dir_ + "/mc_auto_one";
  // deterministic: true would pin auto to off for data.train; this is about auto itself.
  auto a = Run(one, {"train.epochs=1", "deterministic=false"}, false, nullptr, true);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows_read, 6000);
  const std::string log = ReadAll(one + "/train.log");
  EXPECT_NE(log.find("memory cache: data.train is not copied into memory: epoch 0 is the last of 1 (train.epochs)"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("memory cache: data.train holds"), std::string::npos) << log;
  EXPECT_EQ(log.find("data.train in memory"), std::string::npos) << log;
  EXPECT_NE(log.find("memory cache: data.valid holds 2000 rows"), std::string::npos) << log;
}

// Resume mid-epoch with the cache: epochs >= 1 come from memory in a (seed, epoch) order that a
// restarted process reproduces (it rebuilds the cache from the epoch-0 pass).
TEST_F(TrainIntegration, ResumeEqualsUninterruptedRunWithMemoryCache) {
  for (const std::vector<std::string>& mode :
       {std::vector<std::string>{"data.shuffle=buffer", "data.memory_cache=on"},
        std::vector<std::string>{"data.shuffle=global", "data.shuffle_key=C1"}}) {
    SCOPED_TRACE(mode[0]);
    const std::string tag = mode[0] == "data.shuffle=global" ? "g" : "b";
    const std::string full = *dir_ + "/mres_full_" + tag, part = *dir_ + "/mres_part_" + tag;
    auto with = [&](std::vector<std::string> extra) {
      extra.insert(extra.end(), mode.begin(), mode.end());
      extra.push_back("train.epochs=3");
      return extra;
    };
    ASSERT_TRUE(Run(full, with({})).ok());
    // Stop mid epoch 0, resume to mid epoch 1, then mid epoch 2, then finish.
    auto r1 = Run(part, with({"train.max_steps=10"}));
    ASSERT_TRUE(r1.ok()) << r1.status();
    auto r2 = Run(part, with({"train.max_steps=30"}), /*resume=*/true);
    ASSERT_TRUE(r2.ok()) << r2.status();
    auto r3 = Run(part, with({"train.max_steps=60"}), /*resume=*/true);
    ASSERT_TRUE(r3.ok()) << r3.status();
    auto r4 = Run(part, with({}), /*resume=*/true);
    ASSERT_TRUE(r4.ok()) << r4.status();
    EXPECT_EQ(r4->steps, 72);
    EXPECT_EQ(r4->rows_read, 18000);
    ExpectSameModel(full, part);
  }
  // A different shuffle gives a different model (the modes above are not all the same order).
  ExpectDifferentDense(*dir_ + "/mres_full_b", *dir_ + "/mres_full_g");
}

TEST_F(TrainIntegration, GlobalShuffleOverTheMemoryBudgetFailsClearly) {
  const std::string run = *dir_ + "/global_small";
  auto r = Run(run, {"data.shuffle=global", "data.memory_cache_bytes=64KiB"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("data.shuffle: global needs all of data.train in memory"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("raise data.memory_cache_bytes or use data.shuffle: buffer"), std::string::npos)
      << r.status();
  // auto with the same budget falls back to the files, says so, and trains.
  const std::string fallback = *dir_ + "/auto_small";
  auto a = Run(fallback, {"deterministic=false", "data.memory_cache=auto", "data.memory_cache_bytes=64KiB"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows_read, 12000);
  const std::string log = ReadAll(fallback + "/train.log");
  EXPECT_NE(log.find("memory cache: data.train does not fit"), std::string::npos) << log;
}

// Every model type: two deterministic runs give the same model, and a run stopped mid epoch 0
// and resumed across the epoch boundary equals the uninterrupted one (checkpoints carry every
// model's dense parameters and optimizer state).
class ModelTypeIntegration : public TrainIntegration, public ::testing::WithParamInterface<std::string> {};

TEST_P(ModelTypeIntegration, DeterministicAndResumeEqualsUninterrupted) {
  const std::string type = GetParam();
  // (din: C2 plays the behaviour sequence of C1's items; other types ignore these keys.)
  // (mmoe: a second task, I13 >= 1, leaves the features.)
  std::vector<std::string> sets = {"model.type=" + type, "model.cin_layers=[4, 3]", "model.bottom=[8]",
                                   "model.target_field=C1", "model.history_field=C2"};
  if (type == "mmoe") {
    sets.insert(sets.end(), {"model.task_labels=[I13]", "features.transforms={I13: \"binarize(1)\"}", "model.expert_hidden=[8]",
                             "model.tower_hidden=[4]"});
  }
  const std::string a = *dir_ + "/mt_" + type + "_a", b = *dir_ + "/mt_" + type + "_b", part = *dir_ + "/mt_" + type + "_part";
  auto ra = Run(a, sets);
  ASSERT_TRUE(ra.ok()) << type << ": " << ra.status();
  EXPECT_EQ(ra->steps, 48);
  ASSERT_TRUE(Run(b, sets).ok());
  ExpectSameModel(a, b);
  auto with = [&](std::string extra) {
    std::vector<std::string> v = sets;
    if (!extra.empty()) v.push_back(std::move(extra));
    return v;
  };
  auto r1 = Run(part, with("train.max_steps=10"));
  ASSERT_TRUE(r1.ok()) << type << ": " << r1.status();
  auto r2 = Run(part, with("train.max_steps=30"), /*resume=*/true);
  ASSERT_TRUE(r2.ok()) << type << ": " << r2.status();
  auto r3 = Run(part, with(""), /*resume=*/true);
  ASSERT_TRUE(r3.ok()) << type << ": " << r3.status();
  EXPECT_EQ(r3->steps, 48);
  ExpectSameModel(a, part);
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelTypeIntegration, ::testing::ValuesIn(nn::ModelTypes()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace rectrain
