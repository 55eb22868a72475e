// rectrain/stream/source.cc: see source.h.
#include "rectrain/stream/source.h"

#include "rectrain/stream/internal/kafka_source.h"
#include "rectrain/stream/internal/redis_source.h"

namespace rectrain::stream {

StreamPosition MessageSource::EmptyPosition() const {
  StreamPosition p;
  p.source = SourceKindName(config_.kind);
  p.topic = config_.topic;
  return p;
}

Result<std::unique_ptr<MessageSource>> OpenSource(const StreamConfig& config, int rank, int world) {
  if (config.hosts.empty()) return InvalidArgumentError("data.stream.url is required (kafka://HOST:PORT/TOPIC or redis://HOST:PORT/KEY)");
  if (config.kind == SourceKind::kKafka) return internal::OpenKafkaSource(config, rank, world);
  return internal::OpenRedisSource(config, rank, world);
}

}  // namespace rectrain::stream
