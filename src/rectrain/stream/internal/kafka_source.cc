// rectrain/stream/internal/kafka_source.cc: see kafka_source.h.
#include "rectrain/stream/internal/kafka_source.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>
#include <thread>

namespace rectrain::stream::internal {
namespace {

constexpr int kMetadataTimeoutMs = 10000;

std::string Joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// librdkafka configuration from the stream config; `defaults` first, the user's `kafka`
// properties last (they may override any of them).
Result<rd_kafka_conf_t*> MakeConf(const StreamConfig& c, const std::vector<std::pair<std::string, std::string>>& defaults) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      return InvalidArgumentError("kafka property " + k + "=" + v + ": " + err + " (data.stream.kafka)");
    }
    return OkStatus();
  };
  Status s = set("bootstrap.servers", Joined(c.hosts, ","));
  for (const auto& [k, v] : defaults) {
    if (s.ok()) s = set(k, v);
  }
  for (const auto& [k, v] : c.kafka) {
    if (s.ok()) s = set(k, v);
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  return conf;
}

bool IsDisconnect(int err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
         err == RD_KAFKA_RESP_ERR__RESOLVE || err == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

class KafkaSource final : public MessageSource {
 public:
  explicit KafkaSource(const StreamConfig& config) : MessageSource(config) {}
  ~KafkaSource() override {
    if (rk_ != nullptr) {
      rd_kafka_consumer_close(rk_);
      rd_kafka_destroy(rk_);
    }
  }

  Status Open(int rank, int world);
  std::string Describe() const override {
    return "kafka topic " + config_.topic + " partitions " + Joined(partitions_, ",") + " at " + Joined(config_.hosts, ",");
  }
  const std::vector<std::string>& partitions() const override { return partitions_; }
  Result<StreamPosition> Start(const StreamPosition& position) override;
  Status Poll(int max_messages, int timeout_ms, std::vector<Message>* out) override;
  void Pause(int partition, bool paused) override;
  std::string TokenAfter(int partition, const MessageId& id) const override { return std::to_string(id.a + 1); }
  Status Commit(const StreamPosition& position) override;
  Status DeadLetter(const Message& message, std::string_view reason) override;
  int64_t Lag() override;

 private:
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    static_cast<KafkaSource*>(opaque)->UpdateStats([&](SourceStats& s) {
      ++s.errors;
      s.last_error = std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " + reason;
      if (IsDisconnect(err)) s.connected = false;
    });
  }
  // librdkafka's own log lines (connection refused, ...) would go to stderr; errors reach
  // OnError, and the reader logs outages once.
  static void OnLog(const rd_kafka_t*, int, const char*, const char*) {}
  Status MessageError(const rd_kafka_message_t* m);
  int IndexOf(int32_t partition) const {
    return partition >= 0 && partition < static_cast<int32_t>(index_of_.size()) ? index_of_[static_cast<size_t>(partition)] : -1;
  }
  rd_kafka_topic_partition_list_t* ListOf(const StreamPosition& position, bool with_offsets, Status* status) const;

  rd_kafka_t* rk_ = nullptr;
  std::vector<std::string> partitions_;
  std::vector<int32_t> numbers_;
  std::vector<int> index_of_;  // partition number -> index, -1 = not ours
  std::mutex dead_letter_mu_;
  std::unique_ptr<KafkaProducer> dead_letter_;  // guarded by dead_letter_mu_, made on first use
};

Status KafkaSource::Open(int rank, int world) {
  RECTRAIN_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                            MakeConf(config_, {{"group.id", config_.group},
                                               {"enable.auto.commit", "false"},
                                               {"enable.auto.offset.store", "false"},
                                               {"enable.partition.eof", "false"},
                                               // A position the topic no longer holds is an error,
                                               // never a silent jump (see MessageError).
                                               {"auto.offset.reset", "error"},
                                               {"fetch.wait.max.ms", "100"},
                                               {"reconnect.backoff.max.ms", "1000"}}));
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_error_cb(conf, &KafkaSource::OnError);
  rd_kafka_conf_set_log_cb(conf, &KafkaSource::OnLog);
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return InvalidArgumentError(std::string("cannot create a kafka consumer: ") + err);
  }
  rd_kafka_poll_set_consumer(rk_);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, config_.topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t merr = rd_kafka_metadata(rk_, 0, rkt, &md, kMetadataTimeoutMs);
  rd_kafka_topic_destroy(rkt);
  if (merr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return UnavailableError("cannot reach the kafka brokers " + Joined(config_.hosts, ",") + " within " +
                            std::to_string(kMetadataTimeoutMs / 1000) + "s: " + rd_kafka_err2str(merr));
  }
  std::vector<int32_t> all;
  Status s;
  if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR || md->topics[0].partition_cnt == 0) {
    s = NotFoundError("kafka topic " + config_.topic + " does not exist at " + Joined(config_.hosts, ",") +
                      (md->topic_cnt == 1 ? std::string(" (") + rd_kafka_err2str(md->topics[0].err) + ")" : ""));
  } else {
    for (int i = 0; i < md->topics[0].partition_cnt; ++i) all.push_back(md->topics[0].partitions[i].id);
  }
  rd_kafka_metadata_destroy(md);
  RECTRAIN_RETURN_IF_ERROR(s);
  std::sort(all.begin(), all.end());
  std::vector<std::string> names;
  if (config_.partitions.empty()) {
    for (int32_t p : all) names.push_back(std::to_string(p));
  } else {
    for (const std::string& p : config_.partitions) {
      int32_t n = -1;
      auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
      if (ec != std::errc() || end != p.data() + p.size() || !std::binary_search(all.begin(), all.end(), n)) {
        return InvalidArgumentError("data.stream.partitions: \"" + p + "\" is not a partition of kafka topic " + config_.topic +
                                    " (it has " + std::to_string(all.size()) + ": 0.." + std::to_string(all.size() - 1) + ")");
      }
      names.push_back(p);
    }
  }
  partitions_ = PartitionsOfRank(names, rank, world);
  if (partitions_.empty()) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of " + std::to_string(world) + " has no partition of kafka topic " +
                                config_.topic + " (" + std::to_string(names.size()) +
                                " partitions): run at most as many ranks as partitions");
  }
  for (const std::string& p : partitions_) {
    const int32_t n = std::stoi(p);
    numbers_.push_back(n);
    if (n >= static_cast<int32_t>(index_of_.size())) index_of_.resize(static_cast<size_t>(n) + 1, -1);
    index_of_[static_cast<size_t>(n)] = static_cast<int>(numbers_.size()) - 1;
  }
  return OkStatus();
}

rd_kafka_topic_partition_list_t* KafkaSource::ListOf(const StreamPosition& position, bool with_offsets,
                                                     Status* status) const {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(numbers_.size()));
  for (size_t i = 0; i < numbers_.size(); ++i) {
    auto it = position.partitions.find(partitions_[i]);
    if (with_offsets && it == position.partitions.end()) continue;
    rd_kafka_topic_partition_t* tp = rd_kafka_topic_partition_list_add(list, config_.topic.c_str(), numbers_[i]);
    if (!with_offsets) continue;
    int64_t offset = -1;
    auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), offset);
    if (ec != std::errc() || end != it->second.data() + it->second.size() || offset < 0) {
      *status = InvalidArgumentError("kafka partition " + it->first + ": \"" + it->second + "\" is not an offset");
    }
    tp->offset = offset;
  }
  return list;
}

Result<StreamPosition> KafkaSource::Start(const StreamPosition& position) {
  if (!position.empty() && (position.source != "kafka" || position.topic != config_.topic)) {
    return InvalidArgumentError("the checkpoint's stream position is of " + position.source + " " + position.topic +
                                ", but data.stream names kafka topic " + config_.topic);
  }
  Status bad;
  rd_kafka_topic_partition_list_t* list = ListOf(StreamPosition{}, false, &bad);
  // Offsets: the position's, else the group's committed ones (start: committed), else the
  // topic's first or next offset, made concrete from the watermarks.
  bool need_committed = config_.start == StartPosition::kCommitted;
  Status s;
  if (need_committed) {
    const rd_kafka_resp_err_t err = rd_kafka_committed(rk_, list, kMetadataTimeoutMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      s = UnavailableError("cannot read the committed offsets of group " + config_.group + ": " + rd_kafka_err2str(err));
    }
  }
  StreamPosition start = EmptyPosition();
  for (int i = 0; s.ok() && i < list->cnt; ++i) {
    rd_kafka_topic_partition_t& tp = list->elems[i];
    const std::string name = std::to_string(tp.partition);
    int64_t offset = need_committed && tp.err == RD_KAFKA_RESP_ERR_NO_ERROR ? tp.offset : RD_KAFKA_OFFSET_INVALID;
    if (auto it = position.partitions.find(name); it != position.partitions.end()) {
      auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), offset);
      if (ec != std::errc() || end != it->second.data() + it->second.size() || offset < 0) {
        s = InvalidArgumentError("kafka partition " + name + ": \"" + it->second + "\" is not an offset");
        break;
      }
    }
    if (offset < 0) {
      int64_t lo = 0, hi = 0;
      const rd_kafka_resp_err_t err =
          rd_kafka_query_watermark_offsets(rk_, config_.topic.c_str(), tp.partition, &lo, &hi, kMetadataTimeoutMs);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        s = UnavailableError("cannot read the offsets of kafka partition " + name + ": " + rd_kafka_err2str(err));
        break;
      }
      offset = config_.start == StartPosition::kLatest ? hi : lo;
    }
    tp.offset = offset;
    start.partitions[name] = std::to_string(offset);
  }
  if (s.ok()) {
    const rd_kafka_resp_err_t err = rd_kafka_assign(rk_, list);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) s = InternalError(std::string("kafka assign: ") + rd_kafka_err2str(err));
  }
  rd_kafka_topic_partition_list_destroy(list);
  RECTRAIN_RETURN_IF_ERROR(s);
  return start;
}

Status KafkaSource::MessageError(const rd_kafka_message_t* m) {
  const std::string where = "kafka topic " + config_.topic + " partition " + std::to_string(m->partition);
  switch (m->err) {
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
      return OkStatus();
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
      return DataLossError(where + ": the position to read from (offset " + std::to_string(m->offset) +
                           ") is no longer in the topic (retention removed it, or the topic was recreated): " +
                           rd_kafka_message_errstr(m) + "; start afresh with a new run (data.stream.start)");
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return NotFoundError(where + ": " + rd_kafka_message_errstr(m));
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
      return PermissionDeniedError(where + ": " + rd_kafka_message_errstr(m));
    default:
      UpdateStats([&](SourceStats& s) {
        ++s.errors;
        s.last_error = std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_message_errstr(m);
        if (IsDisconnect(m->err)) s.connected = false;
      });
      return OkStatus();
  }
}

Status KafkaSource::Poll(int max_messages, int timeout_ms, std::vector<Message>* out) {
  int got = 0;
  int64_t bytes = 0;
  for (int i = 0; i < max_messages; ++i) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, got == 0 && i == 0 ? timeout_ms : 0);
    if (m == nullptr) break;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      Status s = MessageError(m);
      rd_kafka_message_destroy(m);
      RECTRAIN_RETURN_IF_ERROR(s);
      continue;
    }
    const int index = IndexOf(m->partition);
    if (index >= 0) {
      Message& msg = out->emplace_back();
      msg.partition = index;
      msg.id = {m->offset, 0};
      rd_kafka_timestamp_type_t type;
      msg.timestamp_ms = rd_kafka_message_timestamp(m, &type);
      msg.payload.assign(static_cast<const char*>(m->payload), m->len);
      msg.defect.clear();
      bytes += static_cast<int64_t>(m->len);
      ++got;
    }
    rd_kafka_message_destroy(m);
  }
  if (got > 0) {
    UpdateStats([&](SourceStats& s) {
      s.messages += got;
      s.bytes += bytes;
      if (!s.connected) {
        s.connected = true;
        ++s.reconnects;
      }
    });
  }
  return OkStatus();
}

void KafkaSource::Pause(int partition, bool paused) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, config_.topic.c_str(), numbers_[static_cast<size_t>(partition)]);
  if (paused) {
    rd_kafka_pause_partitions(rk_, list);
  } else {
    rd_kafka_resume_partitions(rk_, list);
  }
  rd_kafka_topic_partition_list_destroy(list);
}

Status KafkaSource::Commit(const StreamPosition& position) {
  Status s;
  rd_kafka_topic_partition_list_t* list = ListOf(position, true, &s);
  if (s.ok() && list->cnt > 0) {
    const rd_kafka_resp_err_t err = rd_kafka_commit(rk_, list, /*async=*/0);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      s = UnavailableError("kafka offset commit for group " + config_.group + ": " + rd_kafka_err2str(err));
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  UpdateStats([&](SourceStats& st) { ++(s.ok() ? st.commits : st.commit_failures); });
  return s;
}

Status KafkaSource::DeadLetter(const Message& message, std::string_view reason) {
  std::lock_guard lock(dead_letter_mu_);
  Status s;
  if (!dead_letter_) {
    auto p = KafkaProducer::Create(config_);
    if (p.ok()) {
      dead_letter_ = std::move(p).value();
    } else {
      s = p.status();
    }
  }
  if (s.ok()) {
    const std::string source = config_.topic + "/" + partitions_[static_cast<size_t>(message.partition)] + "@" +
                               std::to_string(message.id.a);
    s = dead_letter_->Send(config_.dead_letter, -1, message.payload,
                           {{"rectrain-reason", std::string(reason.substr(0, 1000))}, {"rectrain-source", source}});
    dead_letter_->Poll();
  }
  UpdateStats([&](SourceStats& st) { ++(s.ok() ? st.dead_lettered : st.dead_letter_failures); });
  return s;
}

int64_t KafkaSource::Lag() {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(numbers_.size()));
  for (int32_t n : numbers_) rd_kafka_topic_partition_list_add(list, config_.topic.c_str(), n);
  int64_t lag = 0;
  if (rd_kafka_position(rk_, list) != RD_KAFKA_RESP_ERR_NO_ERROR) lag = -1;
  for (int i = 0; lag >= 0 && i < list->cnt; ++i) {
    int64_t lo = 0, hi = 0;
    if (rd_kafka_get_watermark_offsets(rk_, config_.topic.c_str(), list->elems[i].partition, &lo, &hi) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        hi < 0 || list->elems[i].offset < 0) {
      lag = -1;
    } else {
      lag += std::max<int64_t>(0, hi - list->elems[i].offset);
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  return lag;
}

}  // namespace

Result<std::unique_ptr<MessageSource>> OpenKafkaSource(const StreamConfig& config, int rank, int world) {
  auto source = std::make_unique<KafkaSource>(config);
  RECTRAIN_RETURN_IF_ERROR(source->Open(rank, world));
  return std::unique_ptr<MessageSource>(std::move(source));
}

struct KafkaProducer::Impl {
  rd_kafka_t* rk = nullptr;
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> failed{0};
  std::mutex mu;
  std::string first_failure;  // guarded by mu

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* impl = static_cast<Impl*>(opaque);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      impl->delivered.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    impl->failed.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(impl->mu);
    if (impl->first_failure.empty()) impl->first_failure = rd_kafka_err2str(m->err);
  }
  static void OnLog(const rd_kafka_t*, int, const char*, const char*) {}
};

KafkaProducer::KafkaProducer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaProducer::~KafkaProducer() {
  if (impl_->rk != nullptr) {
    rd_kafka_flush(impl_->rk, 2000);
    rd_kafka_destroy(impl_->rk);
  }
}

Result<std::unique_ptr<KafkaProducer>> KafkaProducer::Create(const StreamConfig& config) {
  auto impl = std::make_unique<Impl>();
  RECTRAIN_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                            MakeConf(config, {{"linger.ms", "5"}, {"reconnect.backoff.max.ms", "1000"}}));
  rd_kafka_conf_set_opaque(conf, impl.get());
  rd_kafka_conf_set_dr_msg_cb(conf, &Impl::OnDelivery);
  rd_kafka_conf_set_log_cb(conf, &Impl::OnLog);
  char err[512];
  impl->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (impl->rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return InvalidArgumentError(std::string("cannot create a kafka producer: ") + err);
  }
  return std::unique_ptr<KafkaProducer>(new KafkaProducer(std::move(impl)));
}

Status KafkaProducer::Send(const std::string& topic, int partition, std::string_view payload,
                           const std::vector<std::pair<std::string, std::string>>& headers) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    rd_kafka_headers_t* hdrs = nullptr;
    if (!headers.empty()) {
      hdrs = rd_kafka_headers_new(headers.size());
      for (const auto& [k, v] : headers) rd_kafka_header_add(hdrs, k.data(), static_cast<ssize_t>(k.size()), v.data(), static_cast<ssize_t>(v.size()));
    }
    const rd_kafka_resp_err_t err =
        hdrs != nullptr
            ? rd_kafka_producev(impl_->rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END)
            : rd_kafka_producev(impl_->rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return OkStatus();
    if (hdrs != nullptr) rd_kafka_headers_destroy(hdrs);  // not taken over on failure
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      return UnavailableError("kafka produce to " + topic + ": " + rd_kafka_err2str(err));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return ResourceExhaustedError("kafka produce to " + topic + ": the local queue stayed full for 10s (are the brokers reachable?)");
    }
    rd_kafka_poll(impl_->rk, 100);
  }
}

void KafkaProducer::Poll() { rd_kafka_poll(impl_->rk, 0); }

Result<int> KafkaProducer::Partitions(const std::string& topic) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(impl_->rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_metadata(impl_->rk, 0, rkt, &md, kMetadataTimeoutMs);
  rd_kafka_topic_destroy(rkt);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return UnavailableError(std::string("kafka metadata: ") + rd_kafka_err2str(err));
  int n = 0;
  Status s;
  if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    s = NotFoundError("kafka topic " + topic + " does not exist");
  } else {
    n = md->topics[0].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  RECTRAIN_RETURN_IF_ERROR(s);
  return n;
}

Status KafkaProducer::Flush(int timeout_ms) {
  const rd_kafka_resp_err_t err = rd_kafka_flush(impl_->rk, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return UnavailableError("kafka: " + std::to_string(rd_kafka_outq_len(impl_->rk)) + " messages still unacknowledged after " +
                            std::to_string(timeout_ms) + "ms");
  }
  std::lock_guard lock(impl_->mu);
  if (impl_->failed.load() > 0) {
    return UnavailableError("kafka: " + std::to_string(impl_->failed.load()) + " messages failed: " + impl_->first_failure);
  }
  return OkStatus();
}

int64_t KafkaProducer::delivered() const { return impl_->delivered.load(); }
int64_t KafkaProducer::failed() const { return impl_->failed.load(); }

}  // namespace rectrain::stream::internal
