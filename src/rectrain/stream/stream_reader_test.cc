// StreamReader over real brokers: batches parse exactly as the row parser parses the same lines
// and carry the position after their last message; bad messages are counted, logged,
// dead-lettered and skipped until their share in the window stops the run; JSON rows; partial
// batches after max_batch_wait_ms; the event time from a column of the row; deterministic
// turn-taking over partitions; the stop flag.
#include "rectrain/stream/stream_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "rectrain/stream/internal/redis_client.h"
#include "rectrain/stream/producer.h"
#include "rectrain/stream/testing/servers.h"

namespace rectrain::stream {
namespace {

namespace fs = std::filesystem;

data::DataConfig CsvData() {
  data::DataConfig d;
  d.schema.format = data::DataFormat::kCsv;
  d.schema.delimiter = ',';
  d.schema.columns = {"label", "age", "city"};
  d.schema.dense = {"age"};
  d.schema.sparse = {"city"};
  d.cache = data::CacheMode::kOff;
  return d;
}

std::unique_ptr<data::RowParser> Parser(data::DataConfig d = CsvData()) {
  auto p = data::RowParser::Create(std::move(d), data::RowLayout{.format = data::DataFormat::kCsv, .header = {}, .stats = {}},
                                   data::RowParser::Options{.training = true});
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(p).value();
}

class StreamReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::RedisServerPath().empty()) GTEST_SKIP() << "no redis-server";
    dir_ = fs::temp_directory_path() / ("rectrain_stream_reader_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    auto r = testing::RedisServer::Start((dir_ / "redis").string(), false);
    ASSERT_TRUE(r.ok()) << r.status();
    redis_ = std::move(r).value();
    ASSERT_TRUE(ParseStreamUrl("redis://" + redis_->address() + "/events", &config_).ok());
    config_.start = StartPosition::kEarliest;
  }
  void TearDown() override {
    redis_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Produce(const std::vector<std::string>& lines, const std::vector<std::string>& keys = {}) {
    const std::string path = (dir_ / "lines.txt").string();
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n";
    f.close();
    ProduceOptions o;
    o.files = {path};
    o.to = config_.url;
    o.keys = keys;
    ASSERT_TRUE(ProduceFiles(o).ok());
  }
  std::unique_ptr<StreamReader> Open(StreamReaderOptions o, const StreamPosition& at = {}, data::DataConfig d = CsvData()) {
    auto s = OpenSource(config_, 0, 1);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!o.log) o.log = [this](const std::string& l) { log_.push_back(l); };
    auto r = StreamReader::Open(std::move(s).value(), config_, Parser(std::move(d)), at, std::move(o));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  std::vector<std::string> Range(const std::string& key) {
    auto c = internal::RedisClient::Connect(redis_->address(), 1000);
    auto r = (*c)->Command({"XRANGE", key, "-", "+"});
    std::vector<std::string> rows;
    for (size_t i = 0; r.ok() && i < (*r)->elements; ++i) {
      rows.emplace_back(internal::ReplyText(internal::ReplyField((*r)->element[i]->element[1], "row")));
    }
    return rows;
  }

  fs::path dir_;
  std::unique_ptr<testing::RedisServer> redis_;
  StreamConfig config_;
  std::vector<std::string> log_;
};

std::vector<std::string> Rows(int n, int first = 0) {
  std::vector<std::string> v;
  for (int i = first; i < first + n; ++i) v.push_back(std::to_string(i % 2) + "," + std::to_string(i) + ",c" + std::to_string(i % 7));
  return v;
}

TEST_F(StreamReaderTest, BatchesParseAsTheRowParserDoesAndCarryTheirPosition) {
  const std::vector<std::string> rows = Rows(10);
  Produce(rows);
  auto r = Open({.batch_size = 4, .deterministic = true, .max_rows = 10});
  ASSERT_NE(r, nullptr);
  data::Batch want;
  ASSERT_TRUE(Parser()->ParseLines(rows, "x", &want).ok());
  std::vector<int64_t> sizes;
  int64_t at = 0;
  StreamPosition after_two;
  while (true) {
    auto b = r->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    if (!b->has_value()) break;
    const data::Batch& batch = **b;
    sizes.push_back(batch.size);
    for (int64_t i = 0; i < batch.size; ++i, ++at) {
      EXPECT_EQ(batch.labels[i], want.labels[at]);
      EXPECT_EQ(batch.dense[i], want.dense[at]);
      EXPECT_EQ(batch.sparse[0].ids[i], want.sparse[0].ids[at]);
    }
    if (sizes.size() == 2) after_two = r->position();
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(r->end_reason(), StreamEnd::kMaxRows);
  EXPECT_GT(r->newest_event_ms(), 0);
  r.reset();
  // A new reader at the position after two batches reads the last two rows.
  auto again = Open({.batch_size = 4, .deterministic = true, .max_rows = 2}, after_two);
  auto b = again->Next();
  ASSERT_TRUE(b.ok() && b->has_value());
  ASSERT_EQ((*b)->size, 2);
  EXPECT_EQ((*b)->dense[1], want.dense[9]);
}

TEST_F(StreamReaderTest, BadMessagesAreCountedLoggedDeadLetteredAndSkipped) {
  std::vector<std::string> rows = Rows(20);
  rows[3] = "1,notanumber,c1";
  rows[11] = "2,5,c1";  // label not 0/1
  Produce(rows);
  config_.dead_letter = "dead";
  config_.log_bad = 1;
  auto r = Open({.batch_size = 18, .deterministic = true, .max_rows = 18});
  auto b = r->Next();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->size, 18);
  const StreamStats st = r->stream_stats();
  EXPECT_EQ(st.bad, 2);
  EXPECT_EQ(st.messages, 20);
  EXPECT_EQ(r->Stats().rows_rejected, 2);
  ASSERT_EQ(log_.size(), 2u);  // the first bad message, then that the rest are only counted
  EXPECT_NE(log_[0].find("bad message events@"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("age"), std::string::npos) << log_[0];
  EXPECT_NE(log_[1].find("data.stream.log_bad"), std::string::npos);
  EXPECT_EQ(Range("dead"), (std::vector<std::string>{rows[3], rows[11]}));
}

TEST_F(StreamReaderTest, ABadShareAboveTheLimitStopsTheRunWithAClearError) {
  std::vector<std::string> rows = Rows(30);
  for (int i = 10; i < 14; ++i) rows[static_cast<size_t>(i)] = "garbage";
  Produce(rows);
  config_.bad_window = 10;
  config_.max_bad_share = 0.3;  // 4 of 10 > 30%
  auto r = Open({.batch_size = 100, .deterministic = true});
  auto b = r->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("4 of the last 10 messages were bad"), std::string::npos) << b.status();
  EXPECT_NE(b.status().message().find("data.stream.max_bad_share"), std::string::npos);
}

TEST_F(StreamReaderTest, JsonRowsByColumnNameAndTheirMistakes) {
  Produce({R"({"label": 1, "age": 3, "city": "x"})", R"({"age": 3, "city": "x"})", R"({"label": 0, "size": 1})",
           R"([1, 2])", R"({"label": 0, "age": null, "city": "y"})"});
  config_.format = MessageFormat::kJson;
  auto r = Open({.batch_size = 2, .deterministic = true, .max_rows = 2});
  auto b = r->Next();
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
  EXPECT_EQ((*b)->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(r->stream_stats().bad, 3);
  ASSERT_GE(log_.size(), 3u);
  EXPECT_NE(log_[0].find("label 'label' is missing"), std::string::npos) << log_[0];
  EXPECT_NE(log_[1].find("unknown field \"size\""), std::string::npos) << log_[1];
  EXPECT_NE(log_[2].find("expected a JSON object"), std::string::npos) << log_[2];
}

TEST_F(StreamReaderTest, EventTimeComesFromTheConfiguredColumn) {
  // The rows carry their own time (column ts); the broker's (the entry IDs: now) is not used. A
  // row whose time is missing, not a number or implausible in the unit (1700000009000 s is
  // after the year 10000) is a bad message like any other.
  data::DataConfig d = CsvData();
  d.schema.columns.push_back("ts");
  Produce({"1,1,a,1700000000", "0,2,b,1700000005.25", "1,3,c,", "0,4,d,soon", "0,6,f,1700000009000", "1,7,g",
           "1,5,e, 1700000001 "});
  config_.event_time_column = "ts";
  config_.max_bad_share = 1;
  auto drain = [](StreamReader* r) {
    int64_t rows = 0;
    for (auto b = r->Next(); b.ok() && b->has_value(); b = r->Next()) rows += (*b)->size;
    return rows;
  };
  auto r = Open({.batch_size = 2, .deterministic = true, .max_rows = 3}, {}, d);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(drain(r.get()), 3);
  EXPECT_EQ(r->newest_event_ms(), 1700000005250);  // seconds, the decimal kept to the millisecond
  EXPECT_EQ(r->stream_stats().bad, 4);
  std::string all;
  for (const auto& l : log_) all += l + "\n";
  EXPECT_NE(all.find("data.stream.event_time_column ts: missing"), std::string::npos) << all;
  EXPECT_NE(all.find("\"soon\" is not a time in seconds since 1970-01-01 UTC"), std::string::npos) << all;
  EXPECT_NE(all.find("(milliseconds? set data.stream.event_time_unit: ms)"), std::string::npos) << all;
  EXPECT_NE(all.find("no field ts"), std::string::npos) << all;  // the last row lacks the column
  // In milliseconds (another group reads the same stream): 1700000009000 is the newest.
  config_.event_time_unit = EventTimeUnit::kMilliseconds;
  config_.group = "ms";
  auto ms = Open({.batch_size = 2, .deterministic = true, .max_rows = 4}, {}, d);
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(drain(ms.get()), 4);
  EXPECT_EQ(ms->newest_event_ms(), 1700000009000);
  // A column the rows do not have stops the reader at the start, listing theirs.
  config_.event_time_column = "time";
  auto src = OpenSource(config_, 0, 1);
  ASSERT_TRUE(src.ok());
  auto none = StreamReader::Open(std::move(src).value(), config_, Parser(d), {}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no column \"time\"; their columns are label, age, city, ts"), std::string::npos)
      << none.status();
}

TEST_F(StreamReaderTest, APartialBatchIsHandedOverAfterTheWaitLimit) {
  Produce(Rows(5));
  config_.max_batch_wait_ms = 200;
  auto r = Open({.batch_size = 100});
  auto b = r->Next();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->size, 5);
}

TEST_F(StreamReaderTest, TheStopFlagEndsAnIdleStream) {
  std::atomic<int> stop{0};
  auto r = Open({.batch_size = 100, .stop = &stop});
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = 15;
  });
  auto b = r->Next();
  t.join();
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());
  EXPECT_EQ(r->end_reason(), StreamEnd::kStopped);
}

TEST_F(StreamReaderTest, DeterministicBatchesTakeThePartitionsInTurn) {
  // Lines go to events:0 and events:1 in turn; each key is produced separately, so arrival
  // order says nothing: the batches must still come back in the original order.
  const std::vector<std::string> rows = Rows(40);
  std::vector<std::string> even, odd;
  for (size_t i = 0; i < rows.size(); ++i) (i % 2 ? odd : even).push_back(rows[i]);
  Produce(odd, {"events:1"});
  Produce(even, {"events:0"});
  config_.partitions = {"events:0", "events:1"};
  auto r = Open({.batch_size = 40, .deterministic = true, .max_rows = 40});
  auto b = r->Next();
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
  data::Batch want;
  ASSERT_TRUE(Parser()->ParseLines(rows, "x", &want).ok());
  EXPECT_EQ((*b)->dense, want.dense);
  EXPECT_EQ(r->position().partitions.size(), 2u);
}

TEST(StreamReaderKafkaTest, ReadsAKafkaTopicToMaxRows) {
  auto mock = testing::KafkaMock::Start(1);
  ASSERT_TRUE(mock.ok());
  ASSERT_TRUE((*mock)->CreateTopic("events", 2).ok());
  const fs::path path = fs::temp_directory_path() / ("rectrain_kafka_rows_" + std::to_string(getpid()));
  {
    std::ofstream f(path);
    for (const auto& l : Rows(50)) f << l << "\n";
  }
  ProduceOptions o;
  o.files = {path.string()};
  o.to = "kafka://" + (*mock)->bootstraps() + "/events";
  ASSERT_TRUE(ProduceFiles(o).ok());
  fs::remove(path);
  StreamConfig c;
  ASSERT_TRUE(ParseStreamUrl(o.to, &c).ok());
  c.start = StartPosition::kEarliest;
  auto src = OpenSource(c, 0, 1);
  ASSERT_TRUE(src.ok()) << src.status();
  auto r = StreamReader::Open(std::move(src).value(), c, Parser(), {}, {.batch_size = 16, .deterministic = true, .max_rows = 50});
  ASSERT_TRUE(r.ok()) << r.status();
  int64_t rows = 0;
  std::vector<float> dense;
  while (true) {
    auto b = (*r)->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    if (!b->has_value()) break;
    rows += (*b)->size;
    dense.insert(dense.end(), (*b)->dense.begin(), (*b)->dense.end());
  }
  EXPECT_EQ(rows, 50);
  data::Batch want;
  ASSERT_TRUE(Parser()->ParseLines(Rows(50), "x", &want).ok());
  EXPECT_EQ(dense, want.dense);  // produced in turn, read in turn
  EXPECT_EQ((*r)->position().partitions, (std::map<std::string, std::string>{{"0", "25"}, {"1", "25"}}));
}

}  // namespace
}  // namespace rectrain::stream
