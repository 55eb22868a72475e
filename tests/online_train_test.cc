// Online training end to end, through the `rectrain` binary against real brokers (a private
// redis-server, librdkafka's mock cluster in the stream_kafka_mock process):
//   - kill -9 of the trainer at random moments, restarts with --resume: the final model of a
//     deterministic run equals the uninterrupted run's (exactly-once effect on the model), and
//     the broker's committed position is the end;
//   - kill -9 while a delta checkpoint (train.checkpoint_full_every) is written: the resume
//     rests on the chain (full + deltas) and the model is the uninterrupted run's;
//   - the broker killed (redis) or taken down (kafka) and back mid-stream: the same model;
//   - malformed messages counted, logged, dead-lettered, the run goes on; a bad share over the
//     limit stops it with a clear error;
//   - the event time from a column of the rows (data.stream.event_time_column) is what the
//     run's newest event time and lag report;
//   - SIGTERM and --until end an idle online run with a checkpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "rectrain/stream/internal/redis_client.h"
#include "rectrain/stream/testing/servers.h"
#include "tests/process_util.h"
#include "rectrain/testing/table_file.h"
#include "tests/test_util.h"

#ifndef RECTRAIN_BINARY
#error "RECTRAIN_BINARY must name the rectrain executable"
#endif
#ifndef STREAM_KAFKA_MOCK
#error "STREAM_KAFKA_MOCK must name the stream_kafka_mock executable"
#endif

namespace rectrain {
namespace {
namespace fs = std::filesystem;
using testing::ReadAll;
using testing::WaitFor;
using Clock = std::chrono::steady_clock;

constexpr int64_t kRows = 6000;


// A broker of either kind: redis-server (durable: it survives kill -9) or the Kafka mock process.
class Broker {
 public:
  Broker(const std::string& kind, const std::string& dir) : kind_(kind), dir_(dir) {}
  ~Broker() {
    if (mock_pid_ > 0) testing::Stop(mock_pid_);
  }
  bool Start() {
    if (kind_ == "redis") {
      auto r = stream::testing::RedisServer::Start(dir_ + "/redis", /*durable=*/true);
      if (!r.ok()) return false;
      redis_ = std::move(r).value();
      return true;
    }
    const std::string out = dir_ + "/bootstraps";
    mock_pid_ = testing::Spawn({STREAM_KAFKA_MOCK, "--out", out, "--brokers", "1", "--topic", "events:1", "--topic", "dead:1"},
                               dir_ + "/kafka_mock.log");
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!fs::exists(out) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bootstraps_ = ReadAll(out);
    while (!bootstraps_.empty() && bootstraps_.back() == '\n') bootstraps_.pop_back();
    return !bootstraps_.empty();
  }
  std::string Url(const std::string& name = "events") const {
    return kind_ == "redis" ? "redis://" + redis_->address() + "/" + name : "kafka://" + bootstraps_ + "/" + name;
  }
  // Takes the broker away (redis: kill -9; kafka: every broker down) and back.
  void Down() {
    if (kind_ == "redis") {
      ASSERT_TRUE(redis_->Kill().ok());
    } else {
      kill(mock_pid_, SIGUSR1);
    }
  }
  void Up() {
    if (kind_ == "redis") {
      ASSERT_TRUE(redis_->Restart().ok());
    } else {
      kill(mock_pid_, SIGUSR2);
    }
  }
  stream::testing::RedisServer* redis() { return redis_.get(); }

 private:
  std::string kind_, dir_, bootstraps_;
  std::unique_ptr<stream::testing::RedisServer> redis_;
  pid_t mock_pid_ = -1;
};

class OnlineTrainTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "redis" && stream::testing::RedisServerPath().empty()) GTEST_SKIP() << "no redis-server";
    dir_ = testing::TempDir("online_" + GetParam());
    setenv("RECTRAIN_TRACKING_STORE", (dir_ + "/tracking.db").c_str(), 1);
    data_ = testing::Generate(dir_, "train.tsv", kRows, 1);
    ASSERT_FALSE(data_.empty());
    broker_ = std::make_unique<Broker>(GetParam(), dir_);
    ASSERT_TRUE(broker_->Start());
  }
  void TearDown() override {
    broker_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A small deterministic DeepFM trained from the stream, `group` its consumer group.
  std::string Config(const std::string& name, const std::string& group, const std::string& extra = "") {
    const std::string path = dir_ + "/" + name + ".yaml";
    testing::WriteAll(path, "seed: 7\ndeterministic: true\nthreads: 1\n"
                            "data:\n  batch_size: 256\n  stream:\n    url: " + broker_->Url() +
                                "\n    group: " + group + "\n    start: earliest\n" + extra +
                                "model: {type: deepfm, embedding_dim: 4, hidden: [16, 8], dropout: 0.1}\n"
                                "optimizer: {type: adam, lr: 0.003}\n"
                                "train: {max_rows: " + std::to_string(kRows) +
                                ", checkpoint_every_steps: 2, log_every_steps: 5}\n"
                                "monitoring: {enabled: false}\n");
    return path;
  }
  pid_t Train(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv = {RECTRAIN_BINARY, "train"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--no-progress");
    return testing::Spawn(argv, log);
  }
  int TrainToEnd(const std::vector<std::string>& args, const std::string& log) {
    return WaitFor(Train(args, log), std::chrono::seconds(120));
  }
  pid_t Produce(const std::string& file, const std::string& rate, const std::string& to = "") {
    return testing::Spawn({RECTRAIN_BINARY, "data", "produce", file, "--to", to.empty() ? broker_->Url() : to, "--rate", rate,
                           "--quiet"},
                          dir_ + "/produce.log");
  }
  // The run `killed` (killed and resumed) completed on every row with the model of a run of the
  // same stream that was never interrupted (trained here, in dir_/whole).
  void ExpectTheUninterruptedModel(const std::string& killed) {
    const std::string whole = dir_ + "/whole";
    ASSERT_EQ(TrainToEnd({Config("whole", "whole"), "--run-dir", whole}, dir_ + "/whole.log"), 0) << ReadAll(dir_ + "/whole.log");
    ExpectSameModel(whole, killed);
    const nlohmann::json s = Summary(killed);
    EXPECT_EQ(s["train"]["rows_read"], kRows);
    EXPECT_EQ(s["status"], "completed");
  }
  // Same dense parameters and optimizer state, same embedding rows (by id).
  static void ExpectSameModel(const std::string& a, const std::string& b) {
    ASSERT_TRUE(fs::exists(a + "/model/dense.bin")) << a;
    ASSERT_TRUE(fs::exists(b + "/model/dense.bin")) << b;
    EXPECT_EQ(ReadAll(a + "/model/dense.bin"), ReadAll(b + "/model/dense.bin")) << a << " vs " << b;
    int tables = 0;
    for (const auto& e : fs::directory_iterator(a + "/model/tables")) {
      auto ta = testing::ReadCanonicalTable(e.path().string());
      auto tb = testing::ReadCanonicalTable(b + "/model/tables/" + e.path().filename().string());
      EXPECT_TRUE(ta.ok && ta == tb) << "table " << e.path().filename() << " differs";
      ++tables;
    }
    EXPECT_GT(tables, 0);
  }
  static nlohmann::json Summary(const std::string& run) { return nlohmann::json::parse(ReadAll(run + "/summary.json")); }

  std::string dir_, data_;
  std::unique_ptr<Broker> broker_;
};

TEST_P(OnlineTrainTest, KillNineAtRandomMomentsGivesTheUninterruptedModel) {
  // The rows arrive at 4000/s while the trainer is killed and restarted; the reference run reads
  // the same stream afterwards, in a group of its own.
  const pid_t producer = Produce(data_, "2000");
  const std::string killed = dir_ + "/killed", cfg = Config("killed", "killed");
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> after_ms(0, 400);
  int kills = 0, rc = -1;
  for (int attempt = 0; attempt < 12 && rc != 0; ++attempt) {
    const bool has_checkpoint = fs::exists(killed + "/checkpoints") && !fs::is_empty(killed + "/checkpoints");
    if (!has_checkpoint) fs::remove_all(killed);  // killed before its first checkpoint: start again
    const std::vector<std::string> args =
        has_checkpoint ? std::vector<std::string>{"--resume", killed} : std::vector<std::string>{cfg, "--run-dir", killed};
    const std::string log = dir_ + "/killed_" + std::to_string(attempt) + ".log";
    const pid_t pid = Train(args, log);
    if (kills == 5) {
      rc = WaitFor(pid, std::chrono::seconds(120));
      break;
    }
    // Kill at a random moment after this session wrote a checkpoint of its own (so every restart
    // resumes from one), or earlier when the session ends first.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while ((rc = WaitFor(pid, std::chrono::milliseconds(0))) == -1 && ReadAll(log).find("checkpoint ") == std::string::npos &&
           Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (rc == -1) rc = WaitFor(pid, std::chrono::milliseconds(after_ms(rng)));
    if (rc == -1) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      ++kills;
    }
  }
  ASSERT_EQ(rc, 0) << ReadAll(killed + "/train.log");
  EXPECT_GE(kills, 1);
  ASSERT_EQ(WaitFor(producer, std::chrono::seconds(60)), 0) << ReadAll(dir_ + "/produce.log");
  ExpectTheUninterruptedModel(killed);
  EXPECT_GE(Summary(killed)["online"]["commits"].get<int64_t>(), 1);
  const std::string log = ReadAll(killed + "/train.log");
  EXPECT_NE(log.find("at the checkpoint's position"), std::string::npos);
  EXPECT_NE(log.find("reached train.max_rows = 6000"), std::string::npos);
  EXPECT_NE(log.find("online auc"), std::string::npos);
  std::printf("[ info ] killed %d times\n", kills);
  // The broker's committed position for the group is the end: a new run of the group that
  // starts at its committed position finds nothing left.
  const std::string after = dir_ + "/after";
  ASSERT_EQ(TrainToEnd({Config("after", "killed", ""), "--run-dir", after, "--set", "data.stream.start=committed", "--set",
                        "train.max_rows=0", "--set", "deterministic=false", "--until", "3s"},
                       dir_ + "/after.log"),
            0)
      << ReadAll(dir_ + "/after.log");
  EXPECT_EQ(Summary(after)["train"]["rows_read"], 0);
}

// The newest complete checkpoint of `dir` ("" when none), and its meta.json's chain_length (0: a
// full checkpoint); whether a `step-N.tmp` (a checkpoint being written) is there.
struct CheckpointsNow {
  std::string newest;
  int64_t chain_length = 0;
  bool writing = false;
};
CheckpointsNow LookAt(const std::string& dir, std::map<std::string, int64_t>* chain_of) {
  CheckpointsNow now;
  int64_t newest_step = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0) continue;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      now.writing = true;
    } else if (const int64_t step = std::atoll(name.c_str() + 5); step > newest_step) {
      newest_step = step;
      now.newest = name;
    }
  }
  if (!now.newest.empty()) {
    auto it = chain_of->find(now.newest);
    if (it == chain_of->end()) {  // meta.json is in place: the directory is renamed complete
      const nlohmann::json meta = nlohmann::json::parse(ReadAll(dir + "/" + now.newest + "/meta.json"), nullptr, false);
      const int64_t chain = meta.is_object() && meta.contains("incremental") ? meta["incremental"].value("chain_length", 0) : 0;
      it = chain_of->emplace(now.newest, chain).first;
    }
    now.chain_length = it->second;
  }
  return now;
}

TEST_P(OnlineTrainTest, KillNineWhileADeltaIsWrittenResumesFromTheChain) {
  // Incremental checkpoints of an online run: a checkpoint every 20 ms of training
  // (checkpoint_every_s), every 4th one full, the others deltas. The trainer is killed with
  // SIGKILL while a delta is being written (a step-N.tmp exists and the newest complete
  // checkpoint, one the session wrote itself, is a delta that is not the last of its chain, so
  // the one in progress is a delta too), three times; each restart resumes from that delta, i.e.
  // from its full checkpoint and the deltas up to it, at the delta's stream position. The run
  // ends with the uninterrupted run's model, bit for bit.
  constexpr int kFullEvery = 4;
  const pid_t producer = Produce(data_, "1500");
  const std::string killed = dir_ + "/killed", cfg = Config("killed", "killed");
  std::map<std::string, int64_t> chain_of;
  std::vector<std::string> resumed_from;
  int rc = -1;
  for (int attempt = 0; attempt < 8 && rc != 0; ++attempt) {
    const std::vector<std::string> args =
        attempt == 0 ? std::vector<std::string>{cfg, "--run-dir", killed, "--set", "train.checkpoint_every_steps=0",
                                                "--set", "train.checkpoint_every_s=0.02", "--set",
                                                "train.checkpoint_full_every=" + std::to_string(kFullEvery), "--set",
                                                "train.keep_checkpoints=2"}
                     : std::vector<std::string>{"--resume", killed};
    const std::string log = dir_ + "/killed_" + std::to_string(attempt) + ".log";
    const pid_t pid = Train(args, log);
    if (resumed_from.size() == 3) {
      rc = WaitFor(pid, std::chrono::seconds(120));
      break;
    }
    // Spin (no sleep: a small delta is written in about a millisecond) until a delta is written.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    bool killed_it = false;
    while (!killed_it && (rc = WaitFor(pid, std::chrono::milliseconds(0))) == -1 && Clock::now() < deadline) {
      const CheckpointsNow now = LookAt(killed + "/checkpoints", &chain_of);
      const bool own = resumed_from.empty() || now.newest != resumed_from.back();  // this session wrote it
      if (own && now.writing && now.chain_length >= 1 && now.chain_length <= kFullEvery - 2) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        killed_it = true;
        // The write may have just completed: the newest complete one is then the resume point.
        resumed_from.push_back(LookAt(killed + "/checkpoints", &chain_of).newest);
      }
    }
    ASSERT_TRUE(killed_it || rc != -1) << "no delta checkpoint written within 60 s: " << ReadAll(log);
  }
  ASSERT_EQ(rc, 0) << ReadAll(killed + "/train.log");
  // Under heavy load a trainer that starts late catches up in a few fast steps and may end before
  // a third (or second) delta write is seen; one kill mid-delta is what the test needs.
  ASSERT_GE(resumed_from.size(), 1u) << "the run ended before it was killed while writing a delta";
  ASSERT_EQ(WaitFor(producer, std::chrono::seconds(60)), 0) << ReadAll(dir_ + "/produce.log");
  // Each restart rested on a delta chain: it says so, and it continued at that delta's position.
  const std::string log = ReadAll(killed + "/train.log");
  for (const std::string& dir : resumed_from) {
    ASSERT_GE(chain_of[dir], 1) << dir << " is not a delta";
    const size_t at = log.find("resumed from " + killed + "/checkpoints/" + dir + " at step " + dir.substr(5) + ",");
    ASSERT_NE(at, std::string::npos) << dir << "\n" << log;
    EXPECT_NE(log.substr(at, log.find('\n', at) - at).find("(delta " + std::to_string(chain_of[dir]) + " on step-"),
              std::string::npos)
        << log;
  }
  EXPECT_NE(log.find("checkpoint (delta "), std::string::npos) << log;
  std::printf("[ info ] killed %zu times while a delta was written; resumed from", resumed_from.size());
  for (const std::string& dir : resumed_from) std::printf(" %s (delta %lld)", dir.c_str(), static_cast<long long>(chain_of[dir]));
  std::printf("\n");
  // The uninterrupted run checkpoints whole (checkpoint_every_steps 2): deltas change nothing.
  ExpectTheUninterruptedModel(killed);
}

TEST_P(OnlineTrainTest, ABrokerGoneMidStreamLosesNothingAndRepeatsNothing) {
  // The first half of the rows, then the broker goes away while the trainer reads (redis:
  // kill -9, restarted from its append-only file; kafka: every broker down), comes back, and the
  // second half follows.
  const std::string text = ReadAll(data_);
  const size_t half = [&] {
    size_t at = 0;
    for (int i = 0; i < kRows / 2; ++i) at = text.find('\n', at) + 1;
    return at;
  }();
  testing::WriteAll(dir_ + "/first.tsv", text.substr(0, half));
  testing::WriteAll(dir_ + "/second.tsv", text.substr(half));
  ASSERT_EQ(WaitFor(Produce(dir_ + "/first.tsv", "0"), std::chrono::seconds(30)), 0) << ReadAll(dir_ + "/produce.log");
  const std::string run = dir_ + "/outage";
  const pid_t pid = Train({Config("outage", "outage"), "--run-dir", run}, dir_ + "/outage.log");
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (ReadAll(run + "/train.log").find("checkpoint " + run + "/checkpoints/step-10") == std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  broker_->Down();
  // The outage lasts until the trainer has noticed it (a fixed 1.5 s was not always enough for
  // its reader to poll on the loaded 2-core VM, and the run then never saw the broker gone).
  const auto noticed = Clock::now() + std::chrono::seconds(60);
  while (ReadAll(run + "/train.log").find("is unavailable") == std::string::npos && Clock::now() < noticed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  broker_->Up();
  ASSERT_EQ(WaitFor(Produce(dir_ + "/second.tsv", "0"), std::chrono::seconds(30)), 0) << ReadAll(dir_ + "/produce.log");
  ASSERT_EQ(WaitFor(pid, std::chrono::seconds(120)), 0) << ReadAll(dir_ + "/outage.log");
  const std::string whole = dir_ + "/whole";
  ASSERT_EQ(TrainToEnd({Config("whole", "whole"), "--run-dir", whole}, dir_ + "/whole.log"), 0);
  ExpectSameModel(whole, run);
  EXPECT_EQ(Summary(run)["train"]["rows_read"], kRows);
  const std::string log = ReadAll(run + "/train.log");
  EXPECT_NE(log.find("is unavailable"), std::string::npos) << log;
  EXPECT_NE(log.find("is back after"), std::string::npos) << log;
}

TEST_P(OnlineTrainTest, BadMessagesAreSkippedCountedAndDeadLettered) {
  // 3 malformed rows among 1000: the run trains on the 997 others and lists the 3.
  std::string text = ReadAll(data_);
  std::vector<std::string> lines;
  for (size_t at = 0; lines.size() < 1000;) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  lines[10] = "1\tnot-a-number";
  lines[500] = "7\t" + lines[500].substr(2);
  lines[900] = "\t";  // two empty fields
  std::string bad_file = dir_ + "/bad.tsv", joined;
  for (const auto& l : lines) joined += l + "\n";
  testing::WriteAll(bad_file, joined);
  ASSERT_EQ(WaitFor(Produce(bad_file, "0"), std::chrono::seconds(30)), 0) << ReadAll(dir_ + "/produce.log");
  const std::string run = dir_ + "/bad";
  ASSERT_EQ(TrainToEnd({Config("bad", "bad", "    dead_letter: dead\n"), "--run-dir", run, "--set", "train.max_rows=997",
                        "--set", "deterministic=false", "--set", "data.stream.max_batch_wait_ms=200"},
                       dir_ + "/bad.log"),
            0)
      << ReadAll(dir_ + "/bad.log");
  const nlohmann::json s = Summary(run);
  EXPECT_EQ(s["train"]["rows_read"], 997);
  EXPECT_EQ(s["train"]["rows_rejected"], 3);
  EXPECT_EQ(s["online"]["bad_messages"], 3);
  EXPECT_EQ(s["online"]["dead_lettered"], 3);
  const std::string log = ReadAll(run + "/train.log");
  EXPECT_NE(log.find("bad message events"), std::string::npos) << log;
  // A stream that is mostly garbage stops the run, saying why.
  std::string garbage;
  for (int i = 0; i < 300; ++i) garbage += (i % 3 == 0 ? lines[static_cast<size_t>(i)] : std::string("x\ty")) + "\n";
  testing::WriteAll(dir_ + "/garbage.tsv", garbage);
  ASSERT_EQ(WaitFor(Produce(dir_ + "/garbage.tsv", "0"), std::chrono::seconds(30)), 0);
  const std::string stopped = dir_ + "/stopped";
  const int rc = TrainToEnd({Config("stopped", "stopped", "    bad_window: 100\n    max_bad_share: 0.2\n"), "--run-dir", stopped,
                             "--set", "train.max_rows=100000"},
                            dir_ + "/stopped.log");
  EXPECT_NE(rc, 0);
  EXPECT_NE(ReadAll(dir_ + "/stopped.log").find("data.stream.max_bad_share"), std::string::npos) << ReadAll(dir_ + "/stopped.log");
}

TEST_P(OnlineTrainTest, EventTimeFromAColumnIsWhatFreshnessMeasures) {
  // Rows that carry their event time (column ts, seconds, in 2001): the run's newest event time
  // and its lag are the column's, not the broker's (now); a row with a bad time is a bad message.
  std::string rows;
  for (int i = 0; i < 400; ++i) {
    rows += std::to_string(i % 2) + "\t" + std::to_string(i % 13) + "\tc" + std::to_string(i % 5) + "\t" +
            (i == 7 ? std::string("yesterday") : std::to_string(1000000000 + i)) + "\n";
  }
  testing::WriteAll(dir_ + "/timed.tsv", rows);
  ASSERT_EQ(WaitFor(Produce(dir_ + "/timed.tsv", "0"), std::chrono::seconds(30)), 0) << ReadAll(dir_ + "/produce.log");
  const std::string cfg = dir_ + "/timed.yaml", run = dir_ + "/timed";
  testing::WriteAll(cfg, "seed: 7\nthreads: 1\ndata:\n  format: tsv\n  columns: [label, n, c, ts]\n  dense: [n]\n  sparse: [c]\n"
                         "  batch_size: 100\n  stream:\n    url: " + broker_->Url() +
                             "\n    group: timed\n    start: earliest\n    event_time_column: ts\n"
                             "model: {type: deepfm, embedding_dim: 4, hidden: [8]}\n"
                             "train: {max_rows: 399, log_every_steps: 1}\nmonitoring: {enabled: false}\n");
  ASSERT_EQ(TrainToEnd({cfg, "--run-dir", run}, dir_ + "/timed.log"), 0) << ReadAll(dir_ + "/timed.log");
  const nlohmann::json s = Summary(run);
  EXPECT_EQ(s["online"]["newest_event_ms"], (1000000000LL + 399) * 1000);
  EXPECT_EQ(s["online"]["bad_messages"], 1);
  const std::string log = ReadAll(run + "/train.log");
  EXPECT_NE(log.find("data.stream.event_time_column ts: \"yesterday\" is not a time in seconds"), std::string::npos) << log;
  // "N s behind": now minus an event of 2001, not the second or so since the rows were sent.
  const size_t behind = log.rfind("s behind");
  ASSERT_NE(behind, std::string::npos) << log;
  const size_t from = log.rfind(' ', behind) + 1;
  EXPECT_GT(std::atof(log.substr(from, behind - from).c_str()), 7.0e8) << log.substr(from, behind - from + 8);
}

TEST_P(OnlineTrainTest, SigtermAndUntilEndAnIdleOnlineRunWithACheckpoint) {
  ASSERT_EQ(WaitFor(Produce(data_, "0"), std::chrono::seconds(30)), 0);
  const std::string run = dir_ + "/idle";
  // More rows wanted than the stream has: it trains on all 6000, then waits for more.
  const pid_t pid = Train({Config("idle", "idle"), "--run-dir", run, "--set", "train.max_rows=0", "--set", "deterministic=false",
                           "--set", "train.log_every_steps=1"},
                          dir_ + "/idle.log");
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (ReadAll(run + "/train.log").find("| 6000 rows |") == std::string::npos && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitFor(pid, std::chrono::seconds(30)), 143) << ReadAll(dir_ + "/idle.log");
  const nlohmann::json s = Summary(run);
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["train"]["rows_read"], kRows);
  ASSERT_EQ(WaitFor(Produce(data_, "0"), std::chrono::seconds(30)), 0);
  // --resume goes on from the checkpoint's position (the next 6000), then --until ends it.
  ASSERT_EQ(TrainToEnd({"--resume", run, "--until", "4s"}, dir_ + "/idle2.log"), 0) << ReadAll(dir_ + "/idle2.log");
  const nlohmann::json s2 = Summary(run);
  EXPECT_EQ(s2["status"], "completed");
  EXPECT_EQ(s2["train"]["rows_read"], 2 * kRows);
  EXPECT_NE(ReadAll(run + "/train.log").find("reached --until"), std::string::npos);
  // The online run's model exports as a serving model (its row layout comes from the config).
  const std::string models = dir_ + "/models";
  EXPECT_EQ(WaitFor(testing::Spawn({RECTRAIN_BINARY, "export", run, "--out", models + "/1"}, dir_ + "/export.log"),
                    std::chrono::seconds(60)),
            0)
      << ReadAll(dir_ + "/export.log");
  EXPECT_TRUE(fs::exists(models + "/1/manifest.json"));
}

INSTANTIATE_TEST_SUITE_P(Brokers, OnlineTrainTest, ::testing::Values("redis", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace rectrain
