// rectrain/stream/internal/kafka_source.h (internal to stream/): the Kafka MessageSource over
// librdkafka (source.h has the contract), and the producer that `rectrain data produce` and the
// dead-letter path share.
//
// Thread safety: as MessageSource; KafkaProducer::Send from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/stream/source.h"

namespace rectrain::stream::internal {

Result<std::unique_ptr<MessageSource>> OpenKafkaSource(const StreamConfig& config, int rank, int world);

// A producer to the brokers of `config` (its `kafka` properties applied).
class KafkaProducer {
 public:
  static Result<std::unique_ptr<KafkaProducer>> Create(const StreamConfig& config);
  ~KafkaProducer();
  // Queues one message for `topic` (partition -1: the partitioner's choice) with headers.
  // ResourceExhausted when the local queue stays full for 10 s (the brokers are unreachable).
  Status Send(const std::string& topic, int partition, std::string_view payload,
              const std::vector<std::pair<std::string, std::string>>& headers = {});
  // Waits until every queued message is acknowledged or `timeout_ms` passes (Unavailable then,
  // with the number still queued), and reports the first delivery failure.
  Status Flush(int timeout_ms);
  // The number of partitions of `topic` (NotFound when it does not exist; Unavailable when the
  // brokers cannot be reached in 10 s).
  Result<int> Partitions(const std::string& topic);
  // Serves delivery reports (call now and then while sending).
  void Poll();
  int64_t delivered() const;
  int64_t failed() const;

 private:
  struct Impl;
  explicit KafkaProducer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::stream::internal
