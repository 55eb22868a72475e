// rectrain/stream/source.h: a stream of messages from a broker (Kafka, Redis Streams), read
// from explicit positions and committed on request. The StreamReader (stream_reader.h) turns
// its messages into Batches; the trainer stores positions in checkpoints and commits them once
// the checkpoint holding them has landed (docs/online.md, "Exactly-once effect").
//
// Failures: a connection that drops or a broker that goes away is not an error of Poll: the
// source retries with backoff (bounded by Poll's timeout), counts it (SourceStats::errors,
// reconnects, last_error) and carries on where it stood. Poll returns an error only for what
// retrying cannot fix: an unknown topic or partition, a rejected configuration, a position the
// broker no longer holds.
//
// Kafka: partitions are assigned explicitly at the positions given to Start (no group
// rebalance); the group only records committed offsets. Redis: each partition is a stream key
// read with XREADGROUP as one consumer of the group; Start sets the group's last-delivered ID to
// the position (XGROUP SETID) so entries after it are delivered again after a crash, and Commit
// acknowledges (XACK) this consumer's pending entries up to the position.
//
// Thread safety: Start, Poll and Pause belong to one thread (the reader's). Commit, DeadLetter,
// Lag and stats() may be called from any thread, concurrently with Poll.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/stream/position.h"
#include "rectrain/stream/stream_config.h"

namespace rectrain::stream {

struct Message {
  int partition = 0;          // index into MessageSource::partitions()
  MessageId id;               // its place in the partition
  int64_t timestamp_ms = 0;   // event time: kafka's message timestamp, redis: the ID's time
  std::string payload;        // the row (kafka: the value; redis: the entry's `field`)
  std::string defect;         // non-empty: why the source already knows it is bad (no `field`)
};

struct SourceStats {
  int64_t messages = 0;            // delivered by Poll
  int64_t bytes = 0;               // payload bytes delivered
  int64_t errors = 0;              // transient failures retried (drops, broker down, timeouts)
  int64_t reconnects = 0;          // connections re-established after a failure
  int64_t commits = 0;
  int64_t commit_failures = 0;
  int64_t dead_lettered = 0;
  int64_t dead_letter_failures = 0;
  bool connected = true;           // false while the source is retrying
  std::string last_error;          // the latest transient failure ("" = none)
};

class MessageSource {
 public:
  virtual ~MessageSource() = default;
  // "kafka topic events partitions 0,1 at 127.0.0.1:9092" (for logs and errors).
  virtual std::string Describe() const = 0;
  // This consumer's partitions (Message::partition indexes them).
  virtual const std::vector<std::string>& partitions() const = 0;
  // Positions reading at `position` for the partitions it names, at the configured start
  // (StreamConfig::start) for the others, and returns where each partition starts as concrete
  // tokens (the position before the first message Poll will return). Called once, before the
  // first Poll. Partitions of `position` this consumer does not read are ignored (another rank
  // reads them). Errors: the broker unreachable within its timeout (Unavailable), an unknown
  // topic (NotFound), a malformed token (InvalidArgument).
  virtual Result<StreamPosition> Start(const StreamPosition& position) = 0;
  // Appends up to `max_messages` messages to *out, in partition order within each partition,
  // waiting at most `timeout_ms` for the first. Zero messages is OK (nothing arrived).
  virtual Status Poll(int max_messages, int timeout_ms, std::vector<Message>* out) = 0;
  // Stops (true) or resumes delivering partition `partition` (deterministic batching holds back
  // a partition that runs ahead).
  virtual void Pause(int partition, bool paused) = 0;
  // The position after `id` in partition `partition` (kafka: offset + 1; redis: the ID).
  virtual std::string TokenAfter(int partition, const MessageId& id) const = 0;
  // Records `position` with the broker for the group (kafka offsets commit; redis XACK of the
  // pending entries up to it). Unavailable when the broker cannot be reached: the position stays
  // in the checkpoint, and the next commit covers it.
  virtual Status Commit(const StreamPosition& position) = 0;
  // Sends a bad message to StreamConfig::dead_letter with the reason and where it came from.
  virtual Status DeadLetter(const Message& message, std::string_view reason) = 0;
  // Messages in the stream not yet returned by Poll, summed over partitions; -1 when unknown.
  virtual int64_t Lag() = 0;
  SourceStats stats() const {
    std::lock_guard lock(stats_mu_);
    return stats_;
  }
  // An empty position of this source (source kind and topic, no partitions).
  StreamPosition EmptyPosition() const;

 protected:
  explicit MessageSource(const StreamConfig& config) : config_(config) {}
  // Changes the counters under their lock: UpdateStats([&](SourceStats& s) { ++s.errors; }).
  template <typename F>
  void UpdateStats(F&& f) {
    std::lock_guard lock(stats_mu_);
    f(stats_);
  }
  StreamConfig config_;

 private:
  mutable std::mutex stats_mu_;
  SourceStats stats_;  // guarded by stats_mu_
};

// Opens the source of `config` for rank `rank` of `world` (its partitions: PartitionsOfRank).
// Connects and resolves partitions (kafka: the topic's metadata when none are listed).
// InvalidArgument when the rank has no partition (more ranks than partitions).
Result<std::unique_ptr<MessageSource>> OpenSource(const StreamConfig& config, int rank, int world);

}  // namespace rectrain::stream
