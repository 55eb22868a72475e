// rectrain/stream/producer.cc: see producer.h.
#include "rectrain/stream/producer.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "rectrain/base/stopwatch.h"
#include "rectrain/stream/internal/kafka_source.h"
#include "rectrain/stream/internal/redis_client.h"
#include "rectrain/stream/stream_config.h"

namespace rectrain::stream {
namespace {

constexpr int kRedisPipeline = 256;

// One line at a time from the files, `repeat` times (0 = forever), headers skipped.
class LineSource {
 public:
  explicit LineSource(const ProduceOptions& o) : o_(o) {}
  // False at the end; NotFound through *status for a file that cannot be opened.
  bool Next(std::string* line, Status* status) {
    while (true) {
      if (in_.is_open() && std::getline(in_, *line)) {
        if (!line->empty() && line->back() == '\r') line->pop_back();
        if (line->empty()) continue;
        return true;
      }
      in_.close();
      if (file_ == o_.files.size()) {
        file_ = 0;
        if (o_.repeat > 0 && ++pass_ >= o_.repeat) return false;
      }
      const std::string& path = o_.files[file_++];
      in_.open(path, std::ios::binary);
      if (!in_) {
        *status = NotFoundError("cannot read " + path);
        return false;
      }
      std::string header;
      if (o_.skip_header) std::getline(in_, header);
    }
  }

 private:
  const ProduceOptions& o_;
  std::ifstream in_;
  size_t file_ = 0;
  int64_t pass_ = 0;
};

// Paces the loop at `rate` messages per second and reports progress about once a second.
class Pacer {
 public:
  explicit Pacer(const ProduceOptions& o) : o_(o) {}
  void Sent(int64_t n) {
    if (o_.rate > 0) {
      const double due = static_cast<double>(n) / o_.rate;
      const double ahead = due - clock_.Seconds();
      if (ahead > 0.001) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
    }
    if (o_.progress && clock_.Seconds() >= next_report_) {
      o_.progress(n, clock_.Seconds());
      next_report_ = clock_.Seconds() + 1.0;
    }
  }
  bool Stopped() const { return o_.stop != nullptr && o_.stop->load(std::memory_order_relaxed) != 0; }
  double Seconds() const { return clock_.Seconds(); }

 private:
  const ProduceOptions& o_;
  Stopwatch clock_;
  double next_report_ = 1.0;
};

Result<ProduceReport> ProduceKafka(const ProduceOptions& o, const StreamConfig& c) {
  RECTRAIN_ASSIGN_OR_RETURN(auto producer, internal::KafkaProducer::Create(c));
  RECTRAIN_ASSIGN_OR_RETURN(const int partitions, producer->Partitions(c.topic));
  LineSource lines(o);
  Pacer pacer(o);
  ProduceReport r;
  std::string line;
  Status read;
  while ((o.max_messages == 0 || r.messages < o.max_messages) && !pacer.Stopped() && lines.Next(&line, &read)) {
    RECTRAIN_RETURN_IF_ERROR(producer->Send(c.topic, static_cast<int>(r.messages % partitions), line))
        << "after " << r.messages << " messages";
    ++r.messages;
    r.bytes += static_cast<int64_t>(line.size());
    if (r.messages % 1024 == 0) producer->Poll();
    pacer.Sent(r.messages);
  }
  RECTRAIN_RETURN_IF_ERROR(read);
  RECTRAIN_RETURN_IF_ERROR(producer->Flush(30000));
  r.seconds = pacer.Seconds();
  return r;
}

Result<ProduceReport> ProduceRedis(const ProduceOptions& o, const StreamConfig& c) {
  RECTRAIN_ASSIGN_OR_RETURN(auto client, internal::RedisClient::Connect(c.hosts[0], 10000));
  const std::vector<std::string> keys = o.keys.empty() ? std::vector<std::string>{c.topic} : o.keys;
  const std::string max_len = std::to_string(o.max_len);
  LineSource lines(o);
  Pacer pacer(o);
  ProduceReport r;
  std::vector<std::string> batch;
  Status read;
  auto flush = [&]() -> Status {
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string& key = keys[static_cast<size_t>(r.messages + static_cast<int64_t>(i)) % keys.size()];
      if (o.max_len > 0) {
        RECTRAIN_RETURN_IF_ERROR(client->Append({"XADD", key, "MAXLEN", "~", max_len, "*", o.field, batch[i]}));
      } else {
        RECTRAIN_RETURN_IF_ERROR(client->Append({"XADD", key, "*", o.field, batch[i]}));
      }
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      RECTRAIN_RETURN_IF_ERROR(client->GetReply().status()) << "after " << r.messages << " messages";
    }
    r.messages += static_cast<int64_t>(batch.size());
    batch.clear();
    return OkStatus();
  };
  // Pipelined in groups; at a set rate, groups of about 5 ms of messages, each sent when due.
  const size_t group = o.rate > 0 ? static_cast<size_t>(std::clamp(o.rate / 200, 1.0, double{kRedisPipeline})) : kRedisPipeline;
  std::string line;
  while ((o.max_messages == 0 || r.messages + static_cast<int64_t>(batch.size()) < o.max_messages) && !pacer.Stopped() &&
         lines.Next(&line, &read)) {
    r.bytes += static_cast<int64_t>(line.size());
    batch.push_back(std::move(line));
    if (batch.size() >= group) {
      RECTRAIN_RETURN_IF_ERROR(flush());
      pacer.Sent(r.messages);
    }
  }
  RECTRAIN_RETURN_IF_ERROR(read);
  RECTRAIN_RETURN_IF_ERROR(flush());
  r.seconds = pacer.Seconds();
  return r;
}

}  // namespace

Result<ProduceReport> ProduceFiles(const ProduceOptions& options) {
  if (options.files.empty()) return InvalidArgumentError("no file to produce from");
  StreamConfig c;
  RECTRAIN_RETURN_IF_ERROR(ParseStreamUrl(options.to, &c)) << "--to";
  c.kafka = options.kafka;
  if (c.kind == SourceKind::kKafka) return ProduceKafka(options, c);
  return ProduceRedis(options, c);
}

}  // namespace rectrain::stream
