// rectrain/stream/position.h: where a consumer stands in a stream, as explicit state the trainer
// keeps in its checkpoints (docs/online.md, docs/formats/checkpoint.md "stream").
//
// A position maps each partition to a token whose meaning belongs to the source kind:
//   kafka  partition number -> the next offset to read (decimal)
//   redis  stream key       -> the ID of the last entry consumed ("0-0": none yet)
// It is serialized as one JSON object:
//   {"source": "kafka", "topic": "events", "partitions": {"0": "1234", "1": "1180"}}
//
// Thread safety: a value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "rectrain/base/result.h"

namespace rectrain::stream {

struct StreamPosition {
  std::string source;  // "kafka" | "redis"
  std::string topic;   // the kafka topic / the redis URL's key
  std::map<std::string, std::string> partitions;

  bool empty() const { return partitions.empty(); }
  std::string ToJson() const;
  // DataLoss names what is malformed (the checkpoint's meta.json holds it).
  static Result<StreamPosition> FromJson(std::string_view text);
  bool operator==(const StreamPosition&) const = default;
};

// One message's identity within its partition: kafka (offset, 0); redis (milliseconds, sequence).
struct MessageId {
  int64_t a = 0;
  int64_t b = 0;
};

// A Redis stream entry ID "MS-SEQ". Parse: InvalidArgument for anything else.
Result<MessageId> ParseRedisId(std::string_view text);
std::string FormatRedisId(const MessageId& id);
// Strict order of Redis IDs.
inline bool RedisIdLess(const MessageId& x, const MessageId& y) {
  return static_cast<uint64_t>(x.a) < static_cast<uint64_t>(y.a) ||
         (x.a == y.a && static_cast<uint64_t>(x.b) < static_cast<uint64_t>(y.b));
}

}  // namespace rectrain::stream
