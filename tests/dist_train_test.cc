// The trainer on a job of in-process ranks (dist/inproc.h): the same config trains the same
// model on 1, 2 and 4 ranks (dist.data_split batches, within float tolerance: sums run in other
// orders); a checkpoint written by one rank count resumes on another and continues where it
// stopped; shards mode splits the rows; a bad row on one rank, a silent rank and a stop request
// end every rank cleanly and say which rank and step.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/config/train_config.h"
#include "rectrain/dist/inproc.h"
#include "rectrain/train/trainer.h"
#include "rectrain/testing/table_file.h"
#include "tests/test_util.h"

namespace rectrain {
namespace {
namespace fs = std::filesystem;

// A model as numbers: every dense value by name, and every embedding row (weights and optimizer
// state) by table and id, merged over a checkpoint's parts.
struct ModelValues {
  std::map<std::string, std::vector<float>> dense;
  std::map<std::pair<std::string, uint64_t>, std::vector<float>> rows;
};

ModelValues ReadModel(const std::string& model_dir) {
  ModelValues m;
  const std::string d = testing::ReadAll(model_dir + "/dense.bin");
  auto truncated = [&](size_t need) {
    if (need <= d.size()) return false;
    ADD_FAILURE() << model_dir << "/dense.bin: " << d.size() << " bytes, expected at least " << need;
    return true;
  };
  if (truncated(16)) return m;
  uint32_t n = 0;
  std::memcpy(&n, d.data() + 12, 4);
  size_t pos = 16;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = 0;
    if (truncated(pos + 4)) return m;
    std::memcpy(&len, d.data() + pos, 4);
    if (truncated(pos + 4 + len + 8)) return m;
    const std::string name = d.substr(pos + 4, len);
    pos += 4 + len;
    uint64_t count = 0;
    std::memcpy(&count, d.data() + pos, 8);
    pos += 8;
    if (truncated(pos + count * 4)) return m;
    std::vector<float> v(count);
    std::memcpy(v.data(), d.data() + pos, count * 4);
    pos += count * 4;
    m.dense[name] = std::move(v);
  }
  if (!fs::is_directory(model_dir + "/tables")) return m;
  for (const auto& e : fs::directory_iterator(model_dir + "/tables")) {
    const std::string file = e.path().filename().string();
    const std::string table = file.substr(0, file.find('.'));
    testing::CanonicalTable t = testing::ReadCanonicalTable(e.path().string());
    EXPECT_TRUE(t.ok) << e.path();
    for (const auto& [id, bytes] : t.rows) {
      std::vector<float> v((bytes.size() - 8) / 4);
      std::memcpy(v.data(), bytes.data() + 8, v.size() * 4);
      m.rows[{table, id}] = std::move(v);
    }
  }
  return m;
}

// Largest |a - b| / (1 + |b|) over every value; fails when the models have other values.
double MaxRelativeDiff(const ModelValues& a, const ModelValues& b) {
  double worst = 0;
  EXPECT_EQ(a.dense.size(), b.dense.size());
  for (const auto& [name, va] : a.dense) {
    auto it = b.dense.find(name);
    if (it == b.dense.end() || it->second.size() != va.size()) {
      ADD_FAILURE() << "dense parameter " << name << " differs in shape";
      return 1e9;
    }
    for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - it->second[i]) / (1.0 + std::abs(it->second[i])));
  }
  EXPECT_EQ(a.rows.size(), b.rows.size());
  for (const auto& [key, va] : a.rows) {
    auto it = b.rows.find(key);
    if (it == b.rows.end()) {
      ADD_FAILURE() << "row " << key.second << " of " << key.first << " missing";
      return 1e9;
    }
    for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - it->second[i]) / (1.0 + std::abs(it->second[i])));
  }
  return worst;
}

class DistTrain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir("dist_train"));
    train_ = new std::string(testing::Generate(*dir_, "train.tsv", 6000, 1));
    valid_ = new std::string(testing::Generate(*dir_, "valid.tsv", 1500, 2));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete train_;
    delete valid_;
  }

  // A small DeepFM with dropout (masks keyed by the global row), admission (the OOV row is
  // replicated), shuffling, small chunks, two epochs and a validation set.
  static std::string Config() {
    return "seed: 7\ndeterministic: true\nthreads: 1\n"
           "data:\n  train: " + *train_ + "\n  valid: " + *valid_ + "\n"
           "  batch_size: 256\n  shuffle: true\n  shuffle_buffer: 1000\n  chunk_bytes: 64KiB\n"
           "model: {type: deepfm, embedding_dim: 4, hidden: [16, 8], dropout: 0.1}\n"
           "embedding: {min_count: 2, optimizer: {type: adagrad, lr: 0.05}}\n"
           "optimizer: {type: adam, lr: 0.003}\n"
           "train: {epochs: 2, log_every_steps: 5, checkpoint_every_steps: 10}\n"
           "dist: {timeout_s: 20}\n";
  }

  struct JobResult {
    std::vector<Status> status;
    std::vector<train::TrainSummary> summary;
  };

  // Trains `run_dir` on `world` in-process ranks.
  static JobResult RunJob(int world, const std::string& run_dir, std::vector<std::string> sets = {},
                          bool resume = false, const std::atomic<int>* stop = nullptr,
                          dist::RunRanksOptions ro = {}, train::TrainObserver* observer = nullptr) {
    JobResult out;
    out.summary.resize(static_cast<size_t>(world));
    auto c = config::LoadTrainConfigFromString(Config(), "test.yaml", sets);
    if (!c.ok()) {
      out.status.assign(static_cast<size_t>(world), c.status());
      return out;
    }
    out.status = dist::RunRanks(world, [&](dist::Communicator& comm) -> Status {
      train::TrainerOptions o;
      o.run_dir = run_dir;
      o.resume = resume;
      o.stop_signal = stop;
      o.progress = 0;
      o.size_compute_pool = SetComputePoolThreads;
      o.echo = false;
      o.comm = world > 1 ? &comm : nullptr;
      o.observer = observer;
      auto s = train::Train(*c, o);
      if (!s.ok()) return s.status();
      out.summary[static_cast<size_t>(comm.rank())] = *s;
      return OkStatus();
    }, ro);
    return out;
  }

  static void ExpectOk(const JobResult& r) {
    for (size_t k = 0; k < r.status.size(); ++k) EXPECT_TRUE(r.status[k].ok()) << "rank " << k << ": " << r.status[k];
  }

  static std::string* dir_;
  static std::string* train_;
  static std::string* valid_;
};
std::string* DistTrain::dir_ = nullptr;
std::string* DistTrain::train_ = nullptr;
std::string* DistTrain::valid_ = nullptr;

TEST_F(DistTrain, SameModelOnOneTwoAndFourRanks) {
  const std::string one = *dir_ + "/w1";
  auto r1 = RunJob(1, one);
  ExpectOk(r1);
  const ModelValues ref = ReadModel(one + "/model");
  ASSERT_GT(ref.rows.size(), 100u);
  for (int world : {2, 4}) {
    const std::string run = *dir_ + "/w" + std::to_string(world);
    auto r = RunJob(world, run);
    ExpectOk(r);
    const train::TrainSummary& s = r.summary[0];
    EXPECT_EQ(s.world, world);
    EXPECT_EQ(s.data_split, "batches");
    EXPECT_EQ(s.steps, r1.summary[0].steps);
    EXPECT_EQ(s.rows_read, r1.summary[0].rows_read);
    ASSERT_EQ(static_cast<int>(s.ranks.size()), world);
    int64_t owned = 0, rows = 0;
    for (const auto& f : s.ranks) {
      EXPECT_GT(f.ids_owned, 0);
      EXPECT_GT(f.bytes_sent, 0);
      owned += f.ids_owned;
      rows += f.rows;
    }
    EXPECT_EQ(rows, s.rows_read);  // each row trained on exactly one rank
    EXPECT_EQ(owned, static_cast<int64_t>(ref.rows.size()));
    // Metrics over every rank's predictions, equal on every rank, and the same as one process.
    EXPECT_NEAR(s.valid.auc, r1.summary[0].valid.auc, 2e-4) << world;
    EXPECT_NEAR(s.valid.logloss, r1.summary[0].valid.logloss, 2e-4) << world;
    EXPECT_EQ(s.valid.rows, r1.summary[0].valid.rows);
    for (int k = 1; k < world; ++k) EXPECT_EQ(r.summary[static_cast<size_t>(k)].valid.auc, s.valid.auc);
    const double diff = MaxRelativeDiff(ReadModel(run + "/model"), ref);
    std::printf("world %d: max relative parameter difference to one process %.3g\n", world, diff);
    EXPECT_LT(diff, 1e-3) << world;
    // One summary.json, rank 0's, with every rank's figures.
    auto j = nlohmann::json::parse(testing::ReadAll(run + "/summary.json"));
    EXPECT_EQ(j["dist"]["world"], world);
    EXPECT_EQ(j["dist"]["ranks"].size(), static_cast<size_t>(world));
    EXPECT_TRUE(j["train"]["breakdown"].contains("allreduce_s"));
  }
}

// An observer on rank 0 that asks the job to stop once a step is reached.
class StopAt : public train::TrainObserver {
 public:
  StopAt(int64_t step, std::atomic<int>* flag) : step_(step), flag_(flag) {}
  void OnProgress(const train::ProgressInfo& p) override {
    if (p.step >= step_) flag_->store(SIGTERM);
  }

 private:
  int64_t step_;
  std::atomic<int>* flag_;
};

TEST_F(DistTrain, ResumesOnAnotherRankCountWhereItStopped) {
  const std::string ref_dir = *dir_ + "/resume_ref";
  auto ref = RunJob(1, ref_dir);
  ExpectOk(ref);
  const ModelValues want = ReadModel(ref_dir + "/model");
  for (auto [before, after] : {std::pair{2, 3}, std::pair{4, 1}, std::pair{1, 4}}) {
    const std::string run = *dir_ + "/resume_" + std::to_string(before) + "_" + std::to_string(after);
    std::atomic<int> stop{0};
    StopAt observer(15, &stop);  // mid-epoch (23 steps per epoch)
    auto first = RunJob(before, run, {}, false, &stop, {}, &observer);
    ExpectOk(first);
    EXPECT_EQ(first.summary[0].status, train::RunOutcome::kInterrupted);
    // One process stops after the step that saw the request, a job at the next step it agrees on.
    EXPECT_EQ(first.summary[0].steps, before == 1 ? 15 : 16);
    auto second = RunJob(after, run, {}, /*resume=*/true);
    ExpectOk(second);
    EXPECT_EQ(second.summary[0].status, train::RunOutcome::kCompleted);
    EXPECT_EQ(second.summary[0].steps, ref.summary[0].steps);
    EXPECT_EQ(second.summary[0].rows_read, ref.summary[0].rows_read);
    const double diff = MaxRelativeDiff(ReadModel(run + "/model"), want);
    std::printf("%d ranks -> %d ranks: max relative parameter difference %.3g\n", before, after, diff);
    EXPECT_LT(diff, 1e-3) << before << " -> " << after;
    EXPECT_NEAR(second.summary[0].valid.auc, ref.summary[0].valid.auc, 2e-4);
  }
}

// Incremental checkpoints (train.checkpoint_full_every): a job stopped on a delta checkpoint (each
// rank's part of each table's changes) resumes on another number of ranks, reading the full
// checkpoint and the deltas in order, and ends where the uninterrupted one-process run ends.
TEST_F(DistTrain, IncrementalCheckpointsResumeOnAnotherRankCount) {
  const std::vector<std::string> inc = {"train.checkpoint_every_steps=5", "train.checkpoint_full_every=3"};
  const std::string ref_dir = *dir_ + "/inc_ref";
  auto ref = RunJob(1, ref_dir, inc);
  ExpectOk(ref);
  const ModelValues want = ReadModel(ref_dir + "/model");
  for (auto [before, after] : {std::pair{2, 3}, std::pair{1, 2}}) {
    const std::string run = *dir_ + "/inc_" + std::to_string(before) + "_" + std::to_string(after);
    std::vector<std::string> first_sets = inc;
    first_sets.push_back("train.max_steps=14");  // checkpoints: 5 full, 10 and 14 deltas on it
    ExpectOk(RunJob(before, run, first_sets));
    const std::string meta = testing::ReadAll(run + "/checkpoints/step-14/meta.json");
    EXPECT_NE(meta.find("\"incremental\""), std::string::npos) << meta;
    const std::string part = before == 1 ? "emb" : "emb.part-1-of-" + std::to_string(before);
    EXPECT_NE(meta.find(part), std::string::npos) << meta;
    auto second = RunJob(after, run, inc, /*resume=*/true);
    ExpectOk(second);
    EXPECT_EQ(second.summary[0].steps, ref.summary[0].steps);
    EXPECT_EQ(second.summary[0].rows_read, ref.summary[0].rows_read);
    const double diff = MaxRelativeDiff(ReadModel(run + "/model"), want);
    std::printf("incremental, %d ranks -> %d ranks: max relative parameter difference %.3g\n", before, after, diff);
    EXPECT_LT(diff, 1e-3) << before << " -> " << after;
  }
}

// dist.data_split shards resumed on another number of ranks, or in one process: the rest of the
// interrupted epoch is read as the old ranks' shards, each after the rows it had trained, so every
// row is trained exactly once. Each row carries its own id in C1 (admitted at its first sighting),
// so the embedding rows of a finished run are the distinct rows it trained; the shuffle buffer
// holds the whole file, so the rows a rank had trained are no prefix of any new share.
TEST_F(DistTrain, ShardsResumedOnAnotherRankCountTrainEveryRowOnce) {
  const std::string data = *dir_ + "/unique_c1.tsv";
  {
    std::istringstream in(testing::ReadAll(*train_));
    std::ofstream out(data);
    int64_t row = 0;
    for (std::string line; std::getline(in, line); ++row) {
      std::vector<std::string> cols;
      std::stringstream ss(line);
      for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
      if (line.back() == '\t') cols.push_back("");
      ASSERT_EQ(cols.size(), 40u);
      cols[14] = "row" + std::to_string(row);
      for (size_t k = 0; k < cols.size(); ++k) out << (k ? "\t" : "") << cols[k];
      out << "\n";
    }
  }
  const std::vector<std::string> sets = {"data.train=" + data, "deterministic=false", "dist.data_split=shards",
                                         "data.memory_cache=off", "data.shuffle_buffer=100000", "embedding.min_count=1",
                                         "train.epochs=1", "train.checkpoint_every_steps=5"};
  const std::string ref_dir = *dir_ + "/unique_ref";
  ExpectOk(RunJob(2, ref_dir, sets));
  const size_t every_row = ReadModel(ref_dir + "/model").rows.size();
  // Each job of a sequence stops mid-epoch (23 steps) and the next resumes it; 2 -> 3 -> 1 stops
  // the second job inside the replay of the first one's plan.
  const std::vector<std::vector<int>> sequences = {{2, 3}, {2, 1}, {1, 2}, {2, 3, 1}};
  for (const std::vector<int>& worlds : sequences) {
    std::string name;
    for (int w : worlds) name += "_" + std::to_string(w);
    SCOPED_TRACE(name);
    const std::string run = *dir_ + "/unique" + name;
    for (size_t k = 0; k < worlds.size(); ++k) {
      const bool last = k + 1 == worlds.size();
      std::atomic<int> stop{0};
      StopAt observer(static_cast<int64_t>(8 * (k + 1)), &stop);
      auto r = RunJob(worlds[k], run, sets, /*resume=*/k > 0, last ? nullptr : &stop, {}, last ? nullptr : &observer);
      ExpectOk(r);
      ASSERT_EQ(r.summary[0].status, last ? train::RunOutcome::kCompleted : train::RunOutcome::kInterrupted);
      if (last) {
        EXPECT_EQ(r.summary[0].rows_read, 6000);
      }
    }
    EXPECT_EQ(ReadModel(run + "/model").rows.size(), every_row);  // no row missed, so none trained twice
    EXPECT_NE(testing::ReadAll(run + "/train.log").find("every row of the epoch is trained once"), std::string::npos);
  }
}

TEST_F(DistTrain, ShardsSplitTheRowsBetweenRanks) {
  const std::string run = *dir_ + "/shards";
  auto r = RunJob(2, run, {"deterministic=false", "dist.data_split=shards", "data.memory_cache=off"});
  ExpectOk(r);
  const train::TrainSummary& s = r.summary[0];
  EXPECT_EQ(s.data_split, "shards");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rows + s.ranks[1].rows, s.rows_read);
  EXPECT_EQ(s.rows_read, 2 * 6000);  // every row of both epochs, once
  for (const auto& f : s.ranks) EXPECT_NEAR(static_cast<double>(f.rows), 6000.0, 1200.0);
  EXPECT_GT(s.valid.auc, 0.6);
}

TEST_F(DistTrain, BadRowOnOneRankStopsEveryRankNamingIt) {
  const std::string bad = *dir_ + "/bad.tsv";
  {
    std::string rows = testing::ReadAll(*train_);
    rows += "1\tnot-a-number\n";  // the last row: in the last chunk, read by the last rank
    std::ofstream(bad) << rows;
  }
  const std::string run = *dir_ + "/bad_run";
  auto r = RunJob(2, run, {"data.train=" + bad, "deterministic=false", "dist.data_split=shards", "data.shuffle=false",
                           "data.memory_cache=off"});
  ASSERT_EQ(r.status.size(), 2u);
  EXPECT_EQ(r.status[1].code(), StatusCode::kInvalidArgument) << r.status[1];
  EXPECT_NE(r.status[1].message().find("bad.tsv:6001"), std::string::npos) << r.status[1];
  EXPECT_EQ(r.status[0].code(), StatusCode::kInvalidArgument) << r.status[0];
  EXPECT_EQ(r.status[0].message().rfind("rank 1: ", 0), 0u) << r.status[0];
  auto j = nlohmann::json::parse(testing::ReadAll(run + "/summary.json"));
  EXPECT_EQ(j["status"], "failed");
  EXPECT_NE(j["error"].get<std::string>().find("rank 1: "), std::string::npos);
}

// Makes rank 1 silent (as if it hung) once rank 0 reaches a step.
class SilenceAt : public train::TrainObserver {
 public:
  SilenceAt(int64_t step, dist::InProcHub** hub) : step_(step), hub_(hub) {}
  void OnProgress(const train::ProgressInfo& p) override {
    if (p.step >= step_ && *hub_ != nullptr) (*hub_)->Silence(1);
  }

 private:
  int64_t step_;
  dist::InProcHub** hub_;
};

TEST_F(DistTrain, SilentRankFailsTheJobWithinTheTimeout) {
  dist::InProcHub* hub = nullptr;
  SilenceAt observer(10, &hub);
  dist::RunRanksOptions ro;
  ro.setup = [&](dist::InProcHub& h) { hub = &h; };
  Stopwatch sw;
  auto r = RunJob(2, *dir_ + "/silent", {"dist.timeout_s=1"}, false, nullptr, ro, &observer);
  EXPECT_LT(sw.Seconds(), 30.0);
  ASSERT_EQ(r.status.size(), 2u);
  EXPECT_EQ(r.status[0].code(), StatusCode::kDeadlineExceeded) << r.status[0];
  EXPECT_NE(r.status[0].message().find("no message from rank 1"), std::string::npos) << r.status[0];
  EXPECT_NE(r.status[0].message().find("step"), std::string::npos) << r.status[0];
  EXPECT_FALSE(r.status[1].ok());
}

// train.accumulate_steps runs each batch in slices whose gradients are summed: the same model as
// one pass (dropout keyed by the global row), on one process and on a job.
TEST_F(DistTrain, GradientAccumulationGivesTheSameModel) {
  const std::string whole = *dir_ + "/acc1";
  auto r1 = RunJob(1, whole);
  ExpectOk(r1);
  const ModelValues want = ReadModel(whole + "/model");
  for (int world : {1, 2}) {
    const std::string run = *dir_ + "/acc3_w" + std::to_string(world);
    auto r = RunJob(world, run, {"train.accumulate_steps=3"});
    ExpectOk(r);
    const double diff = MaxRelativeDiff(ReadModel(run + "/model"), want);
    std::printf("accumulate_steps 3 on %d rank(s): max relative parameter difference %.3g\n", world, diff);
    EXPECT_LT(diff, 1e-3);
    EXPECT_NEAR(r.summary[0].valid.auc, r1.summary[0].valid.auc, 2e-4);
  }
}

// The same with a multi-valued field (CSR offsets of each slice rebased) and mean pooling.
TEST_F(DistTrain, GradientAccumulationWithMultiValuedFields) {
  const std::string csv = *dir_ + "/multi.csv";
  {
    std::ofstream out(csv);
    out << "label,x,user,tags\n";
    Rng rng(4);
    for (int i = 0; i < 3000; ++i) {
      const int n = static_cast<int>(rng.Below(4));  // 0 to 3 tags
      std::string tags;
      for (int k = 0; k < n; ++k) tags += (k ? "|" : "") + std::string("t") + std::to_string(rng.Below(40));
      const int user = static_cast<int>(rng.Below(300));
      out << ((user % 3 == 0 || n == 3) ? 1 : 0) << "," << rng.Uniform() << ",u" << user << "," << tags << "\n";
    }
  }
  const std::string base = "seed: 3\ndeterministic: true\nthreads: 1\n"
                           "data: {train: " + csv + ", format: csv, header: true, label: label, dense: [x], "
                           "sparse: [user, tags], batch_size: 128}\n"
                           "features: {transforms: {tags: \"split('|')\"}}\n"
                           "model: {type: wide_deep, embedding_dim: 4, hidden: [8], field_pooling: {tags: mean}}\n"
                           "train: {epochs: 1}\ntracking: {enabled: false}\nmonitoring: {enabled: false}\n";
  auto train = [&](const std::string& run, std::vector<std::string> sets) {
    auto c = config::LoadTrainConfigFromString(base, "multi.yaml", sets);
    EXPECT_TRUE(c.ok()) << c.status();
    train::TrainerOptions o;
    o.run_dir = run;
    o.progress = 0;
    o.size_compute_pool = SetComputePoolThreads;
    o.echo = false;
    auto s = train::Train(*c, o);
    EXPECT_TRUE(s.ok()) << s.status();
  };
  train(*dir_ + "/multi1", {});
  train(*dir_ + "/multi4", {"train.accumulate_steps=4"});
  const double diff = MaxRelativeDiff(ReadModel(*dir_ + "/multi4/model"), ReadModel(*dir_ + "/multi1/model"));
  std::printf("multi-valued, accumulate_steps 4: max relative parameter difference %.3g\n", diff);
  EXPECT_LT(diff, 1e-4);
}

// dist.batch per_rank: data.batch_size rows per rank (the global batch doubles on 2 ranks, so
// half the steps); dist.lr_scaling linear multiplies the learning rates by the ranks.
TEST_F(DistTrain, PerRankBatchAndLrScaling) {
  auto r = RunJob(2, *dir_ + "/per_rank", {"dist.batch=per_rank", "dist.lr_scaling=linear"});
  ExpectOk(r);
  auto one = RunJob(1, *dir_ + "/per_rank_ref");
  ExpectOk(one);
  EXPECT_EQ(r.summary[0].rows_read, one.summary[0].rows_read);
  EXPECT_EQ(r.summary[0].steps, (one.summary[0].steps + 1) / 2);
  EXPECT_GT(r.summary[0].valid.auc, 0.6);
}

// dist.mode async: one worker and one server train exactly what one process trains (the server
// applies the same sparse and dense updates, in the same order).
TEST_F(DistTrain, AsyncOneWorkerOneServerIsOneProcess) {
  const std::vector<std::string> async = {"dist.mode=async", "dist.servers=1", "dist.staleness=0",
                                          "train.checkpoint_every_steps=0"};
  auto ref = RunJob(1, *dir_ + "/async_ref", {"train.checkpoint_every_steps=0"});
  ExpectOk(ref);
  auto r = RunJob(2, *dir_ + "/async_1w1s", async);
  ExpectOk(r);
  EXPECT_EQ(r.summary[0].rows_read, ref.summary[0].rows_read);
  EXPECT_EQ(r.summary[0].steps, ref.summary[0].steps);
  const double diff = MaxRelativeDiff(ReadModel(*dir_ + "/async_1w1s/model"), ReadModel(*dir_ + "/async_ref/model"));
  std::printf("async 1 worker + 1 server vs one process: max relative parameter difference %.3g\n", diff);
  EXPECT_LT(diff, 1e-5);
  EXPECT_NEAR(r.summary[0].valid.auc, ref.summary[0].valid.auc, 1e-4);
}

// Two workers and two servers, with and without staleness: every row trained once, the model
// close to the sync one, and every rank's summary the same outcome.
TEST_F(DistTrain, AsyncWorkersAndServersTrainTogether) {
  auto sync = RunJob(1, *dir_ + "/async_sync_ref", {"train.checkpoint_every_steps=0"});
  ExpectOk(sync);
  for (int staleness : {0, 4}) {
    const std::string run = *dir_ + "/async_2w2s_" + std::to_string(staleness);
    auto r = RunJob(4, run, {"dist.mode=async", "dist.servers=2", "dist.staleness=" + std::to_string(staleness),
                             "train.checkpoint_every_steps=0"});
    ExpectOk(r);
    const train::TrainSummary& s = r.summary[0];
    EXPECT_EQ(s.rows_read, 2 * 6000) << staleness;
    // Async is not deterministic (the order pushes arrive in). Over 30 runs its AUC was 0.732 to
    // 0.752 against the sync 0.7335 (stale gradients, here mostly to its benefit): it must not
    // fall clearly below sync.
    EXPECT_GE(s.valid.auc, sync.summary[0].valid.auc - 0.02) << staleness;
    EXPECT_EQ(s.world, 4);
    ASSERT_EQ(s.ranks.size(), 4u);
    EXPECT_EQ(s.ranks[0].ids_owned + s.ranks[1].ids_owned, 0);  // workers hold no rows
    EXPECT_GT(s.ranks[2].ids_owned, 0);
    EXPECT_GT(s.ranks[3].ids_owned, 0);
    // The exchanges with the servers have no collective's minimum: none is reported (it used to
    // compare all of them with the final evaluation's, "232x the minimum").
    for (const auto& f : s.ranks) EXPECT_EQ(f.min_bytes_sent, 0);
    EXPECT_EQ(testing::ReadAll(run + "/train.log").find("x the minimum"), std::string::npos);
    for (int k = 1; k < 4; ++k) EXPECT_EQ(r.summary[static_cast<size_t>(k)].valid.auc, s.valid.auc);
    // The checkpoint reloads into one process (rows by id): eval sees the same model.
    auto ev = train::EvaluateRun({.run_dir = run, .files = {*valid_}, .size_compute_pool = SetComputePoolThreads});
    ASSERT_TRUE(ev.ok()) << ev.status();
    EXPECT_NEAR(ev->metrics.auc, s.valid.auc, 1e-6);
    std::printf("async 2 workers + 2 servers, staleness %d: auc %.5f (sync %.5f)\n", staleness, s.valid.auc,
                sync.summary[0].valid.auc);
  }
}

TEST_F(DistTrain, DifferentConfigsOnTheRanksAreAnError) {
  auto c0 = config::LoadTrainConfigFromString(Config(), "a.yaml", {});
  auto c1 = config::LoadTrainConfigFromString(Config(), "a.yaml", {"optimizer.lr=0.01"});
  ASSERT_TRUE(c0.ok() && c1.ok());
  const std::string run = *dir_ + "/mismatch";
  std::vector<Status> st = dist::RunRanks(2, [&](dist::Communicator& comm) -> Status {
    train::TrainerOptions o;
    o.run_dir = run;
    o.progress = 0;
    o.size_compute_pool = SetComputePoolThreads;
    o.echo = false;
    o.comm = &comm;
    return train::Train(comm.rank() == 0 ? *c0 : *c1, o).status();
  });
  for (const Status& s : st) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("rank 1 was started with another configuration"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace rectrain
