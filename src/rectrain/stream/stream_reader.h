// rectrain/stream/stream_reader.h: a never-ending BatchReader over a MessageSource (source.h).
// A background thread polls the source, parses each message with the training data's parse
// plan (data::RowParser in training mode: the same transforms, frozen statistics, filters and
// feature ids as the file readers) and hands full batches to the trainer through a bounded
// queue. Every batch carries the stream position after its last message, so the trainer can
// checkpoint exactly what it trained on (position()) and commit it once the checkpoint has
// landed (Commit()).
//
// Batches: data.batch_size rows each. Outside deterministic mode a partial batch is handed over
// once its first row has waited StreamConfig::max_batch_wait_ms, so a slow stream still trains
// (and publishes) within seconds. With `deterministic` batches are always full, and with several
// partitions each batch takes their messages in turn (partition 0, 1, ..., 0, 1, ...; a partition
// that runs ahead is paused), so a run's batches depend only on the stream's content.
//
// Bad messages (a malformed row, a JSON object with an unknown column, a missing label, a Redis
// entry without the row field) never stop the loop by themselves: each is counted, the first
// StreamConfig::log_bad are logged with where they came from and why, and each is sent to the
// dead-letter topic/stream when one is configured. Next() fails with FailedPrecondition once
// more than max_bad_share of the last bad_window messages were bad.
//
// End of stream: Next() returns std::nullopt when *options.stop becomes non-zero, at
// options.until, or once options.max_rows rows have been delivered (end_reason() says which).
// A source outage is not an end: Next() waits, and the outage and the recovery are logged.
//
// Thread safety: the BatchReader methods, position() and end_reason() belong to the consumer
// thread; Commit(), Lag() and stream_stats() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/reader.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/stream/position.h"
#include "rectrain/stream/source.h"
#include "rectrain/stream/stream_config.h"

namespace rectrain::stream {

struct StreamReaderOptions {
  int64_t batch_size = 4096;
  bool deterministic = false;
  int64_t max_rows = -1;                          // rows to deliver in all; -1 = no limit
  std::chrono::system_clock::time_point until{};  // end of stream at this time; {} = never
  const std::atomic<int>* stop = nullptr;         // non-zero: end of stream at once
  // > 0: Next() returns an empty batch after waiting this long with none ready (a rank of a
  // job must take part in every step, with or without rows); 0: Next() waits.
  int64_t idle_batch_ms = 0;
  std::function<void(const std::string&)> log;    // bad messages, outages; null: stderr
};

enum class StreamEnd : uint8_t { kNone, kStopped, kMaxRows, kUntil };

struct StreamStats {
  int64_t messages = 0;          // messages in delivered batches (good, bad and filtered)
  int64_t rows = 0;              // rows delivered
  int64_t bad = 0;               // bad messages skipped (counted into delivered batches' span)
  int64_t filtered = 0;          // dropped by data.filters or negative downsampling
  int64_t newest_event_ms = 0;   // event time of the newest message of a delivered batch
  SourceStats source;
};

class StreamReader final : public data::BatchReader {
 public:
  // Starts `source` at `start` (empty: StreamConfig::start) and the reading thread. `parser`
  // was made with RowParser::Options::training. Errors: InvalidArgument when
  // config.event_time_column is not one of the parser's columns; the source's Start errors.
  static Result<std::unique_ptr<StreamReader>> Open(std::unique_ptr<MessageSource> source, const StreamConfig& config,
                                                    std::unique_ptr<data::RowParser> parser, const StreamPosition& start,
                                                    StreamReaderOptions options);
  ~StreamReader() override;
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  Result<std::optional<data::Batch>> Next() override;
  data::ReaderStats Stats() const override;
  void Recycle(data::Batch&& batch) override;
  const std::vector<std::string>& dense_names() const override;
  const std::vector<std::string>& sparse_names() const override;

  // The position after the last batch Next() returned (the start position before the first).
  const StreamPosition& position() const;
  // Event time (ms since the epoch) of the newest message in the batches returned so far
  // (config.event_time_column's value, else the broker's time); 0 before the first.
  int64_t newest_event_ms() const;
  StreamEnd end_reason() const;
  // Records `position` with the broker (MessageSource::Commit).
  Status Commit(const StreamPosition& position);
  // Messages not yet delivered in a batch: the broker's lag plus what this reader holds; -1
  // when the broker cannot tell.
  int64_t Lag();
  StreamStats stream_stats() const;
  std::string Describe() const;

 private:
  struct Impl;
  explicit StreamReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rectrain::stream
