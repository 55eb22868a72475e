// rectrain/stream/stream_config.h: where a training stream comes from (the data.stream section,
// docs/online.md) and how its messages are read. A value type, bound by config/ and passed to
// OpenSource (source.h) and StreamReader (stream_reader.h).
//
// Addresses:
//   kafka://HOST:PORT[,HOST:PORT...]/TOPIC     brokers and topic (librdkafka)
//   redis://HOST:PORT/KEY                      a Redis server and a stream key
// Partitions: Kafka partition numbers, or Redis stream keys (each key one "partition"; the
// URL's key when none are listed). Under mpirun every rank reads its own partitions: partition
// i of the list (or of the topic) belongs to rank i % world.
//
// Thread safety: a value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::stream {

enum class SourceKind : uint8_t { kKafka, kRedis };
// Where a run without a checkpoint starts: the group's committed position (falling back to
// earliest when the group has none), the oldest message kept, or only messages that arrive
// after the start. A resumed run always starts at its checkpoint's position.
enum class StartPosition : uint8_t { kCommitted, kEarliest, kLatest };
// What a message holds: a line of the training layout (data.format), or a JSON object of
// column: value as `rectrain serve` takes rows.
enum class MessageFormat : uint8_t { kLine, kJson };
// The unit of an event time column: seconds or milliseconds since 1970-01-01 UTC.
enum class EventTimeUnit : uint8_t { kSeconds, kMilliseconds };

struct StreamConfig {
  SourceKind kind = SourceKind::kKafka;
  std::string url;                 // as given (for messages)
  std::vector<std::string> hosts;  // kafka: bootstrap brokers; redis: one host:port
  std::string topic;               // kafka topic; redis: the URL's stream key
  std::vector<std::string> partitions;  // kafka: numbers ("" = every partition); redis: keys
  std::string group = "rectrain";  // kafka consumer group / redis consumer group
  std::string consumer;            // redis consumer name; "" = "rectrain-<rank>"
  StartPosition start = StartPosition::kCommitted;
  MessageFormat format = MessageFormat::kLine;
  std::string field = "row";       // redis: the entry field that holds the row
  // The event time of a message (freshness, the lag metric, a published version's events): this
  // column of the row, a number of `event_time_unit` since the epoch; a row whose value is
  // missing or not such a number is a bad message. "" = the broker's time (Kafka: the message
  // timestamp; Redis: the entry ID's milliseconds).
  std::string event_time_column;
  EventTimeUnit event_time_unit = EventTimeUnit::kSeconds;
  std::string dead_letter;         // kafka topic / redis key for bad messages; "" = none
  // Bad messages: counted and skipped; the first `log_bad` are logged with their position and
  // reason; the run stops (FailedPrecondition) once more than max_bad_share of the last
  // bad_window messages were bad.
  int64_t log_bad = 10;
  double max_bad_share = 0.05;
  int64_t bad_window = 10000;
  // A partial batch is handed to the trainer after waiting this long for more rows (0: only full
  // batches). deterministic: true ignores it (batch boundaries must not depend on timing).
  int64_t max_batch_wait_ms = 1000;
  int64_t poll_ms = 100;           // one poll of the broker waits at most this long
  int64_t prefetch_batches = 4;    // parsed batches ready ahead of the trainer
  // Extra librdkafka properties (security.protocol, sasl.*, fetch.*, ...), passed as given.
  std::map<std::string, std::string> kafka;
};

// Parses "kafka://h:p[,h:p]/topic" or "redis://h:p/key" into kind, hosts, topic (and url).
// InvalidArgument says what is wrong and shows the two forms.
Status ParseStreamUrl(const std::string& url, StreamConfig* out);

const char* SourceKindName(SourceKind kind);  // "kafka" | "redis"

// The partitions this rank reads: of `all` (in order), those with index % world == rank.
std::vector<std::string> PartitionsOfRank(const std::vector<std::string>& all, int rank, int world);

}  // namespace rectrain::stream
