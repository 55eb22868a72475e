// rectrain/stream/testing/servers.h (test-only): real brokers for the stream tests and benches.
//
// RedisServer: a private `redis-server` on a free loopback port in its own directory, that a
// test can kill -9 and restart on the same port and directory (with `durable`, every write is
// fsync'd to the append-only file first, so a restart keeps the streams).
// KafkaMock: librdkafka's in-process mock cluster (test.mock.num.brokers): brokers that speak
// the Kafka protocol on loopback ports, topics, consumer-group offset commits, and brokers that
// can be taken down and brought back. It lives as long as the object, in this process; a test
// that kills the consumer runs it in the `stream_kafka_mock` helper process instead.
//
// Thread safety: one thread per object.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/testing/free_port.h"

namespace rectrain::stream::testing {

using ::rectrain::testing::FreePort;

// "/usr/bin/redis-server" when installed (tests skip without it), else "".
std::string RedisServerPath();

class RedisServer {
 public:
  // Starts it in `dir` (created) and waits until it answers PING (10 s).
  static Result<std::unique_ptr<RedisServer>> Start(const std::string& dir, bool durable);
  ~RedisServer();  // kills it
  Status Kill();     // SIGKILL and reap
  Status Restart();  // start again on the same port and directory, wait for PING
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  RedisServer(std::string dir, bool durable, int port) : dir_(std::move(dir)), durable_(durable), port_(port) {}
  Status Launch();
  std::string dir_;
  bool durable_;
  int port_;
  pid_t pid_ = -1;
};

class KafkaMock {
 public:
  static Result<std::unique_ptr<KafkaMock>> Start(int brokers);
  ~KafkaMock();
  // "127.0.0.1:P1,127.0.0.1:P2,..."
  const std::string& bootstraps() const { return bootstraps_; }
  Status CreateTopic(const std::string& topic, int partitions);
  // Makes metadata requests for `topic` answer "unknown topic or partition" (the mock creates any
  // topic it is asked about, so a missing topic has to be told to it).
  Status SetTopicUnknown(const std::string& topic);
  // Takes broker `id` (1-based) down / back up: its connections drop and it refuses new ones.
  Status SetBrokerDown(int id, bool down);

 private:
  struct Impl;
  explicit KafkaMock(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string bootstraps_;
};

}  // namespace rectrain::stream::testing
