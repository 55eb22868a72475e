// rectrain/stream/internal/redis_source.cc: the Redis Streams MessageSource (source.h). Each
// partition is a stream key, read with XREADGROUP as one consumer of the group.
//
// Exactly-once needs the group's delivery point to follow the trainer's checkpoint, not the
// messages the process happened to read: Start sets it (XGROUP SETID) to the checkpoint's ID,
// so what was read but not checkpointed before a crash is delivered again; after a reconnect it
// is set to what this process has read, so a server that restarted from an older save does not
// deliver twice. Commit acknowledges (XACK) this consumer's pending entries up to the position,
// found page by page with XPENDING.
#include "rectrain/stream/internal/redis_source.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

#include "rectrain/stream/internal/redis_client.h"

namespace rectrain::stream::internal {
namespace {

constexpr int kControlTimeoutMs = 5000;
constexpr int kAckPage = 1000;
constexpr const char* kDeadLetterMaxLen = "100000";  // XADD MAXLEN ~: the dead-letter stream stays bounded

using Clock = std::chrono::steady_clock;

// The ID just before `id` (the position from which `id` is the next entry).
MessageId Before(MessageId id) {
  if (id.b > 0) return {id.a, id.b - 1};
  if (id.a == 0) return {0, 0};
  return {id.a - 1, static_cast<int64_t>(std::numeric_limits<uint64_t>::max())};
}

class RedisSource final : public MessageSource {
 public:
  explicit RedisSource(const StreamConfig& config) : MessageSource(config) {}

  Status Open(int rank, int world);
  std::string Describe() const override {
    std::string keys;
    for (size_t i = 0; i < keys_.size(); ++i) keys += (i ? "," : "") + keys_[i];
    return "redis stream " + keys + " at " + config_.hosts[0] + " (group " + config_.group + ", consumer " + consumer_ + ")";
  }
  const std::vector<std::string>& partitions() const override { return keys_; }
  Result<StreamPosition> Start(const StreamPosition& position) override;
  Status Poll(int max_messages, int timeout_ms, std::vector<Message>* out) override;
  void Pause(int partition, bool paused) override { paused_[static_cast<size_t>(partition)] = paused; }
  std::string TokenAfter(int partition, const MessageId& id) const override { return FormatRedisId(id); }
  Status Commit(const StreamPosition& position) override;
  Status DeadLetter(const Message& message, std::string_view reason) override;
  int64_t Lag() override;

 private:
  // Creates the group at `id` (with the stream, when missing) or moves it there.
  static Status GroupAt(RedisClient& c, const std::string& key, const std::string& group, std::string_view id);
  Result<std::string> StartToken(const std::string& key, const StreamPosition& position);
  // Reconnects the reading connection after a failure, once its backoff has passed; puts each
  // group back at what this process has read.
  Status Reconnect(int timeout_ms);
  void NoteFailure(const Status& s);
  Status ParseEntries(const redisReply* reply, std::vector<Message>* out, int64_t* bytes);
  // The control connection (commits, dead letters, lag), reconnected on demand. Needs ctl_mu_.
  Result<RedisClient*> Control();

  std::vector<std::string> keys_;
  std::string consumer_;
  std::vector<bool> paused_;
  std::vector<std::string> delivered_;  // per key: the ID of the last entry Poll returned
  std::unique_ptr<RedisClient> read_;   // reader thread only
  Clock::time_point retry_at_{};
  int backoff_ms_ = 100;
  std::mutex ctl_mu_;
  std::unique_ptr<RedisClient> ctl_;    // guarded by ctl_mu_
};

Status RedisSource::Open(int rank, int world) {
  const std::vector<std::string> all = config_.partitions.empty() ? std::vector<std::string>{config_.topic} : config_.partitions;
  keys_ = PartitionsOfRank(all, rank, world);
  if (keys_.empty()) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " of " + std::to_string(world) + " has no redis stream key (" +
                                std::to_string(all.size()) + " in data.stream.partitions): list at least one key per rank");
  }
  consumer_ = config_.consumer.empty() ? "rectrain-" + std::to_string(rank) : config_.consumer;
  paused_.assign(keys_.size(), false);
  delivered_.assign(keys_.size(), "0-0");
  RECTRAIN_ASSIGN_OR_RETURN(read_, RedisClient::Connect(config_.hosts[0], kControlTimeoutMs));
  return OkStatus();
}

Status RedisSource::GroupAt(RedisClient& c, const std::string& key, const std::string& group, std::string_view id) {
  auto created = c.Command({"XGROUP", "CREATE", key, group, id, "MKSTREAM"});
  if (created.ok()) return OkStatus();
  if (created.status().message().find("BUSYGROUP") == std::string_view::npos) return created.status();
  return c.Command({"XGROUP", "SETID", key, group, id}).status();
}

Result<std::string> RedisSource::StartToken(const std::string& key, const StreamPosition& position) {
  if (auto it = position.partitions.find(key); it != position.partitions.end()) {
    RECTRAIN_RETURN_IF_ERROR(ParseRedisId(it->second).status()) << "the checkpoint's position in redis stream " << key;
    RECTRAIN_RETURN_IF_ERROR(GroupAt(*read_, key, config_.group, it->second));
    return it->second;
  }
  if (config_.start != StartPosition::kCommitted) {
    RECTRAIN_RETURN_IF_ERROR(GroupAt(*read_, key, config_.group, config_.start == StartPosition::kLatest ? "$" : "0"));
  } else {
    // The group's committed point: before this consumer's first unacknowledged entry, else the
    // group's delivery point; a new group starts at the beginning.
    auto created = read_->Command({"XGROUP", "CREATE", key, config_.group, "0", "MKSTREAM"});
    if (!created.ok() && created.status().message().find("BUSYGROUP") == std::string_view::npos) return created.status();
    RECTRAIN_ASSIGN_OR_RETURN(RedisReply pending, read_->Command({"XPENDING", key, config_.group, "-", "+", "1", consumer_}));
    if (pending->type == REDIS_REPLY_ARRAY && pending->elements > 0 && pending->element[0]->type == REDIS_REPLY_ARRAY &&
        pending->element[0]->elements > 0) {
      RECTRAIN_ASSIGN_OR_RETURN(MessageId first, ParseRedisId(ReplyText(pending->element[0]->element[0])));
      RECTRAIN_RETURN_IF_ERROR(GroupAt(*read_, key, config_.group, FormatRedisId(Before(first))));
    }
  }
  RECTRAIN_ASSIGN_OR_RETURN(RedisReply groups, read_->Command({"XINFO", "GROUPS", key}));
  for (size_t g = 0; groups->type == REDIS_REPLY_ARRAY && g < groups->elements; ++g) {
    if (ReplyText(ReplyField(groups->element[g], "name")) == config_.group) {
      return std::string(ReplyText(ReplyField(groups->element[g], "last-delivered-id")));
    }
  }
  return InternalError("redis stream " + key + ": group " + config_.group + " vanished while starting");
}

Result<StreamPosition> RedisSource::Start(const StreamPosition& position) {
  if (!position.empty() && (position.source != "redis" || position.topic != config_.topic)) {
    return InvalidArgumentError("the checkpoint's stream position is of " + position.source + " " + position.topic +
                                ", but data.stream names redis stream " + config_.topic);
  }
  StreamPosition start = EmptyPosition();
  for (size_t i = 0; i < keys_.size(); ++i) {
    auto token = StartToken(keys_[i], position);
    if (!token.ok()) return token.status().WithContext("while starting redis stream " + keys_[i] + " at " + config_.hosts[0]);
    delivered_[i] = *token;
    start.partitions[keys_[i]] = delivered_[i];
  }
  return start;
}

void RedisSource::NoteFailure(const Status& s) {
  UpdateStats([&](SourceStats& st) {
    ++st.errors;
    st.last_error = std::string(s.message());
    st.connected = false;
  });
}

Status RedisSource::Reconnect(int timeout_ms) {
  const auto now = Clock::now();
  if (now < retry_at_) {
    std::this_thread::sleep_for(std::min(retry_at_ - now, std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::milliseconds(timeout_ms))));
    if (Clock::now() < retry_at_) return OkStatus();
  }
  auto c = RedisClient::Connect(config_.hosts[0], kControlTimeoutMs);
  Status s = c.status();
  for (size_t i = 0; s.ok() && i < keys_.size(); ++i) s = GroupAt(**c, keys_[i], config_.group, delivered_[i]);
  if (!s.ok()) {
    NoteFailure(s);
    retry_at_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
    backoff_ms_ = std::min(2000, backoff_ms_ * 2);
    if (s.code() != StatusCode::kUnavailable) return s;  // the server answered: no retry can fix it
    return OkStatus();
  }
  read_ = std::move(c).value();
  backoff_ms_ = 100;
  UpdateStats([](SourceStats& st) {
    st.connected = true;
    ++st.reconnects;
  });
  return OkStatus();
}

Status RedisSource::ParseEntries(const redisReply* reply, std::vector<Message>* out, int64_t* bytes) {
  if (reply->type == REDIS_REPLY_NIL) return OkStatus();  // BLOCK timed out
  if (reply->type != REDIS_REPLY_ARRAY) return InternalError("redis XREADGROUP: unexpected reply type");
  for (size_t s = 0; s < reply->elements; ++s) {
    const redisReply* stream = reply->element[s];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2) continue;
    const std::string_view key = ReplyText(stream->element[0]);
    const auto it = std::find(keys_.begin(), keys_.end(), key);
    if (it == keys_.end()) continue;
    const int index = static_cast<int>(it - keys_.begin());
    const redisReply* entries = stream->element[1];
    for (size_t e = 0; entries->type == REDIS_REPLY_ARRAY && e < entries->elements; ++e) {
      const redisReply* entry = entries->element[e];
      if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2) continue;
      const std::string_view id_text = ReplyText(entry->element[0]);
      RECTRAIN_ASSIGN_OR_RETURN(MessageId id, ParseRedisId(id_text));
      Message& m = out->emplace_back();
      m.partition = index;
      m.id = id;
      m.timestamp_ms = id.a;
      m.payload.clear();
      m.defect.clear();
      const redisReply* fields = entry->element[1];
      const redisReply* value = ReplyField(fields, config_.field);
      if (value != nullptr && value->type == REDIS_REPLY_STRING) {
        m.payload.assign(value->str, value->len);
        *bytes += static_cast<int64_t>(value->len);
      } else {
        std::string names;
        for (size_t f = 0; fields != nullptr && fields->type == REDIS_REPLY_ARRAY && f < fields->elements && f < 16; f += 2) {
          names += (f ? ", " : "") + std::string(ReplyText(fields->element[f]));
        }
        m.defect = "the entry has no field \"" + config_.field + "\" (its fields: " + names + "; data.stream.field)";
      }
      delivered_[static_cast<size_t>(index)] = std::string(id_text);
    }
  }
  return OkStatus();
}

Status RedisSource::Poll(int max_messages, int timeout_ms, std::vector<Message>* out) {
  if (read_ == nullptr || read_->broken()) {
    RECTRAIN_RETURN_IF_ERROR(Reconnect(timeout_ms));
    if (read_ == nullptr || read_->broken()) return OkStatus();
  }
  std::vector<std::string_view> args = {"XREADGROUP", "GROUP", config_.group, consumer_, "COUNT", "", "BLOCK", ""};
  const std::string count = std::to_string(std::max<size_t>(1, static_cast<size_t>(max_messages) / keys_.size()));
  const std::string block = std::to_string(std::max(1, timeout_ms));
  args[5] = count;
  args[7] = block;
  args.push_back("STREAMS");
  size_t active = 0;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (!paused_[i]) {
      args.push_back(keys_[i]);
      ++active;
    }
  }
  if (active == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return OkStatus();
  }
  for (size_t i = 0; i < active; ++i) args.push_back(">");
  read_->SetTimeout(timeout_ms + kControlTimeoutMs);
  auto reply = read_->Command(args);
  if (!reply.ok()) {
    if (reply.status().code() == StatusCode::kUnavailable) {  // dropped: retry on the next Poll
      NoteFailure(reply.status());
      retry_at_ = Clock::now();
      return OkStatus();
    }
    if (reply.status().message().find("NOGROUP") != std::string_view::npos) {
      // The server lost the group (it restarted without the data, or the stream was deleted):
      // recreate it where this process stands.
      NoteFailure(reply.status());
      for (size_t i = 0; i < keys_.size(); ++i) RECTRAIN_RETURN_IF_ERROR(GroupAt(*read_, keys_[i], config_.group, delivered_[i]));
      return OkStatus();
    }
    return reply.status().WithContext("reading " + Describe());
  }
  const size_t before = out->size();
  int64_t bytes = 0;
  RECTRAIN_RETURN_IF_ERROR(ParseEntries(reply->get(), out, &bytes));
  UpdateStats([&](SourceStats& st) {
    st.messages += static_cast<int64_t>(out->size() - before);
    st.bytes += bytes;
  });
  return OkStatus();
}

Result<RedisClient*> RedisSource::Control() {
  if (ctl_ == nullptr || ctl_->broken()) {
    RECTRAIN_ASSIGN_OR_RETURN(ctl_, RedisClient::Connect(config_.hosts[0], kControlTimeoutMs));
  }
  return ctl_.get();
}

Status RedisSource::Commit(const StreamPosition& position) {
  std::lock_guard ctl_lock(ctl_mu_);
  Status s;
  for (size_t i = 0; s.ok() && i < keys_.size(); ++i) {
    auto it = position.partitions.find(keys_[i]);
    if (it == position.partitions.end()) continue;
    auto c = Control();
    if (!c.ok()) {
      s = c.status();
      break;
    }
    // This consumer's pending entries up to the position, a page at a time.
    std::string from = "-";
    while (s.ok()) {
      auto page = (*c)->Command({"XPENDING", keys_[i], config_.group, from, it->second, std::to_string(kAckPage), consumer_});
      if (!page.ok()) {
        s = page.status();
        break;
      }
      const redisReply* r = page->get();
      if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) break;
      std::vector<std::string_view> ack = {"XACK", keys_[i], config_.group};
      for (size_t e = 0; e < r->elements; ++e) {
        if (r->element[e]->type == REDIS_REPLY_ARRAY && r->element[e]->elements > 0) ack.push_back(ReplyText(r->element[e]->element[0]));
      }
      s = (*c)->Command(ack).status();
      if (r->elements < static_cast<size_t>(kAckPage)) break;
      from = "(" + std::string(ack.back());
    }
  }
  UpdateStats([&](SourceStats& st) { ++(s.ok() ? st.commits : st.commit_failures); });
  return s;
}

Status RedisSource::DeadLetter(const Message& message, std::string_view reason) {
  std::lock_guard ctl_lock(ctl_mu_);
  auto c = Control();
  Status s = c.status();
  if (s.ok()) {
    const std::string& key = keys_[static_cast<size_t>(message.partition)];
    const std::string id = FormatRedisId(message.id);
    s = (*c)->Command({"XADD", config_.dead_letter, "MAXLEN", "~", kDeadLetterMaxLen, "*", config_.field, message.payload,
                       "reason", reason.substr(0, 1000), "source", key, "id", id})
            .status();
  }
  UpdateStats([&](SourceStats& st) { ++(s.ok() ? st.dead_lettered : st.dead_letter_failures); });
  return s;
}

int64_t RedisSource::Lag() {
  std::lock_guard ctl_lock(ctl_mu_);
  auto c = Control();
  if (!c.ok()) return -1;
  int64_t lag = 0;
  for (const std::string& key : keys_) {
    auto groups = (*c)->Command({"XINFO", "GROUPS", key});
    if (!groups.ok()) return -1;
    bool found = false;
    for (size_t g = 0; (*groups)->type == REDIS_REPLY_ARRAY && g < (*groups)->elements; ++g) {
      const redisReply* info = (*groups)->element[g];
      if (ReplyText(ReplyField(info, "name")) != config_.group) continue;
      const redisReply* l = ReplyField(info, "lag");
      if (l == nullptr || l->type != REDIS_REPLY_INTEGER) return -1;  // Redis cannot tell (after SETID, XDEL)
      lag += l->integer;
      found = true;
    }
    if (!found) return -1;
  }
  return lag;
}

}  // namespace

Result<std::unique_ptr<MessageSource>> OpenRedisSource(const StreamConfig& config, int rank, int world) {
  auto source = std::make_unique<RedisSource>(config);
  RECTRAIN_RETURN_IF_ERROR(source->Open(rank, world));
  return std::unique_ptr<MessageSource>(std::move(source));
}

}  // namespace rectrain::stream::internal
