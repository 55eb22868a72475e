// rectrain/config/stream_section.cc: the data.stream section and the online-training keys of
// train.* (docs/config.md "data.stream", docs/online.md), bound apart from the file-based keys so
// that a config without a stream resolves exactly as before.
#include "rectrain/config/train_config.h"

namespace rectrain::config {
namespace {

constexpr double kMaxInt = 9.0e18;

// data.stream.event_time_column / event_time_unit, bound only when given so that a stream config
// without them resolves (and hashes) as before the keys existed. The column itself is looked up
// in the rows' columns when the stream opens (a csv header may come from data.train's files).
void BindEventTime(ConfigBinder& b, const TrainConfig* c, stream::StreamConfig* s) {
  if (!b.Has("data.stream.event_time_column")) {
    if (b.Has("data.stream.event_time_unit")) {
      b.AddError("data.stream.event_time_unit", "applies only with data.stream.event_time_column (the column that holds the event time)");
    }
    return;
  }
  s->event_time_column = b.String("data.stream.event_time_column", "");
  if (b.Has("data.stream.event_time_unit")) {
    const bool ms = b.String("data.stream.event_time_unit", "s", {"s", "ms"}) == "ms";
    s->event_time_unit = ms ? stream::EventTimeUnit::kMilliseconds : stream::EventTimeUnit::kSeconds;
  }
  if (s->event_time_column.empty()) {
    b.AddError("data.stream.event_time_column", "must name a column of the rows (leave the key out for the broker's time)");
    return;
  }
  const data::DataFormat f = c->data.schema.format;
  if (f != data::DataFormat::kAuto && f != data::DataFormat::kCriteo && f != data::DataFormat::kCsv &&
      f != data::DataFormat::kTsv) {
    b.AddError("data.stream.event_time_column",
               std::string("needs rows with named columns (data.format criteo, csv or tsv), not ") + data::FormatName(f));
  }
}

}  // namespace

void BindStreamSection(ConfigBinder& b, TrainConfig* c) {
  c->train.max_rows = b.Int("train.max_rows", 0, Range::Closed(0, kMaxInt));
  c->train.checkpoint_every_s = b.Double("train.checkpoint_every_s", 0.0, Range::Closed(0, 1e9));
  if (!b.Has("data.stream")) {
    if (b.Has("train.online_window")) b.AddError("train.online_window", "applies to online runs only: add data.stream");
    return;
  }
  c->train.online_window = b.Int("train.online_window", 100000, Range::Closed(1, 100000000));
  stream::StreamConfig& s = c->stream.emplace();
  const std::string url = b.String("data.stream.url", "");
  if (url.empty()) {
    b.AddError("data.stream.url", "is required: kafka://HOST:PORT[,HOST:PORT]/TOPIC or redis://HOST:PORT/KEY");
  } else if (Status st = stream::ParseStreamUrl(url, &s); !st.ok()) {
    b.AddError("data.stream.url", st.message());
  }
  s.partitions = b.StringList("data.stream.partitions", {});
  s.group = b.String("data.stream.group", "rectrain");
  s.consumer = b.String("data.stream.consumer", "");
  const std::string start = b.String("data.stream.start", "committed", {"committed", "earliest", "latest"});
  s.start = start == "earliest" ? stream::StartPosition::kEarliest
            : start == "latest" ? stream::StartPosition::kLatest
                                : stream::StartPosition::kCommitted;
  s.format = b.String("data.stream.format", "line", {"line", "json"}) == "json" ? stream::MessageFormat::kJson
                                                                               : stream::MessageFormat::kLine;
  s.field = b.String("data.stream.field", "row");
  BindEventTime(b, c, &s);
  s.dead_letter = b.String("data.stream.dead_letter", "");
  s.log_bad = b.Int("data.stream.log_bad", 10, Range::Closed(0, kMaxInt));
  s.max_bad_share = b.Double("data.stream.max_bad_share", 0.05, Range::Closed(0, 1));
  s.bad_window = b.Int("data.stream.bad_window", 10000, Range::Closed(1, 100000000));
  s.max_batch_wait_ms = b.Int("data.stream.max_batch_wait_ms", 1000, Range::Closed(0, 3600000));
  s.poll_ms = b.Int("data.stream.poll_ms", 100, Range::Closed(1, 60000));
  s.prefetch_batches = b.Int("data.stream.prefetch", 4, Range::Closed(1, 1024));
  s.kafka = b.StringMap("data.stream.kafka", {});
  if (s.kind == stream::SourceKind::kRedis && !s.kafka.empty()) {
    b.AddError("data.stream.kafka", "librdkafka properties, but data.stream.url is a redis stream");
  }
  if (s.field.empty()) b.AddError("data.stream.field", "must not be empty (default row)");
  // A stream is one endless pass: epochs, a shuffle order and a validation split per epoch do not
  // apply, and the run's data split is each rank's own partitions.
  if (c->train.epochs != 1) b.AddError("train.epochs", "does not apply to data.stream (one endless pass; stop with train.max_rows, --until or SIGTERM)");
  if (c->dist.data_split == DataSplit::kBatches) {
    b.AddError("dist.data_split", "batches does not apply to data.stream: every rank reads its own partitions");
  }
  if (c->dist.mode == DistMode::kAsync) b.AddError("dist.mode", "async is not supported with data.stream (use sync)");
}

}  // namespace rectrain::config
