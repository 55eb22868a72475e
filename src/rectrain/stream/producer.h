// rectrain/stream/producer.h: replays the lines of files into a stream as messages, at a given
// rate: `rectrain data produce` (docs/online.md), the tests and the benchmarks.
//
// Kafka: one message per line, spread over the topic's partitions in turn (line i to partition
// i % P, so partitions stay balanced), timestamped when produced. Redis: XADD KEY * FIELD LINE,
// spread over `keys` in turn (the URL's key when none), pipelined; the entry ID is the event time.
//
// Example:
//   ProduceOptions o;
//   o.files = {"data/train.tsv"};
//   o.to = "redis://127.0.0.1:6379/events";
//   o.rate = 20000;                          // messages per second
//   RECTRAIN_ASSIGN_OR_RETURN(ProduceReport r, ProduceFiles(o));
//
// Thread safety: ProduceFiles runs on the calling thread; `stop` may be set from another.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::stream {

struct ProduceOptions {
  std::vector<std::string> files;    // read in order, line by line
  std::string to;                    // kafka://HOSTS/TOPIC | redis://HOST:PORT/KEY
  double rate = 0;                   // messages per second; 0 = as fast as the broker takes them
  int64_t max_messages = 0;          // stop after this many; 0 = every line (times `repeat`)
  int64_t repeat = 1;                // pass over the files this many times; 0 = until stopped
  bool skip_header = false;          // the first line of each file is a header, not a row
  std::vector<std::string> keys;     // redis: stream keys to spread over (default: the URL's)
  std::string field = "row";         // redis: the entry field holding the line
  int64_t max_len = 0;               // redis: XADD MAXLEN ~ this (0 = unbounded)
  std::map<std::string, std::string> kafka;  // extra librdkafka properties
  const std::atomic<int>* stop = nullptr;    // non-zero: stop after the current message
  // Called about once a second with the messages sent so far.
  std::function<void(int64_t messages, double seconds)> progress;
};

struct ProduceReport {
  int64_t messages = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

// Sends the lines; returns once all are acknowledged by the broker. Errors: a file that cannot
// be read (NotFound), a bad URL (InvalidArgument), the broker unreachable or refusing
// (Unavailable, with the number sent so far).
Result<ProduceReport> ProduceFiles(const ProduceOptions& options);

}  // namespace rectrain::stream
