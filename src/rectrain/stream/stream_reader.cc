// rectrain/stream/stream_reader.cc: see stream_reader.h.
#include "rectrain/stream/stream_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "rectrain/base/stopwatch.h"

namespace rectrain::stream {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A batch ready for the trainer, or (end) the marker that max_rows rows were delivered.
struct Ready {
  data::Batch batch;
  StreamPosition position;     // after its last message
  int64_t newest_event_ms = 0;
  int64_t messages = 0;        // consumed into it (good, bad, filtered)
  int64_t bad = 0;
  int64_t filtered = 0;
  double parse_seconds = 0;
  bool end = false;
};

// The last `window` messages' verdicts; `bad` of them were bad.
class BadWindow {
 public:
  explicit BadWindow(int64_t window) : marks_(static_cast<size_t>(std::max<int64_t>(1, window)), 0) {}
  void Add(bool is_bad) {
    bad_ += static_cast<int64_t>(is_bad) - marks_[pos_];
    marks_[pos_] = is_bad ? 1 : 0;
    pos_ = (pos_ + 1) % marks_.size();
  }
  int64_t bad() const { return bad_; }
  int64_t size() const { return static_cast<int64_t>(marks_.size()); }

 private:
  std::vector<uint8_t> marks_;
  size_t pos_ = 0;
  int64_t bad_ = 0;
};

// The index of data.stream.event_time_column among the rows' columns.
Result<int> EventColumn(const std::string& name, const data::RowParser& parser) {
  const std::vector<std::string>& cols = parser.columns();
  const auto it = std::find(cols.begin(), cols.end(), name);
  if (parser.has_named_columns() && it != cols.end()) return static_cast<int>(it - cols.begin());
  std::string names;
  for (size_t i = 0; i < cols.size() && i < 20; ++i) names += (i ? ", " : "") + cols[i];
  if (cols.size() > 20) names += ", ...";
  return InvalidArgumentError("data.stream.event_time_column: the rows have no column \"" + name + "\"" +
                              (parser.has_named_columns() ? "; their columns are " + names : std::string(" (no named columns)")) +
                              " (name it as data.columns or the csv header does)");
}

}  // namespace

struct StreamReader::Impl {
  std::unique_ptr<MessageSource> source;
  StreamConfig config;
  std::unique_ptr<data::RowParser> parser;
  StreamReaderOptions options;
  std::string describe;

  // Reader thread state.
  std::vector<std::deque<Message>> buffered;  // per partition (deterministic, several partitions)
  std::deque<Message> arrivals;               // otherwise: in arrival order
  std::vector<Message> polled;
  std::vector<MessageId> last_id;             // per partition: the last message consumed
  std::vector<bool> has_id;
  std::vector<std::string> start_tokens;
  std::vector<bool> paused;
  BadWindow window{1};
  int64_t bad_logged = 0;
  int64_t delivered_rows = 0;                 // counted when a batch is made (for max_rows)
  bool was_connected = true;
  SteadyClock::time_point outage_since{};
  std::string line;                           // scratch: a JSON row as a line
  int event_column = -1;                      // config.event_time_column's index; -1: broker time

  // Shared with the consumer.
  mutable std::mutex mu;
  std::condition_variable ready_cv;   // consumer waits for a batch
  std::condition_variable space_cv;   // reader waits for room
  std::deque<Ready> queue;            // guarded by mu
  std::vector<data::Batch> pool;      // guarded by mu: recycled batches
  Status error;                       // guarded by mu: latched, returned by Next()
  bool stopping = false;              // guarded by mu
  int64_t buffered_messages = 0;      // guarded by mu: polled, not yet in a queued batch
  double parse_seconds = 0;           // guarded by mu
  std::thread thread;

  // Consumer state.
  StreamPosition position;
  int64_t newest_event_ms = 0;
  StreamEnd end = StreamEnd::kNone;
  StreamStats delivered;               // guarded by mu (read by stream_stats())
  double wait_seconds = 0;
  int64_t bytes_read = 0;

  void Log(const std::string& s) const {
    if (options.log) {
      options.log(s);
    } else {
      std::fprintf(stderr, "%s\n", s.c_str());
    }
  }
  bool Stopping() {
    std::lock_guard lock(mu);
    return stopping;
  }
  void Latch(const Status& s) {
    std::lock_guard lock(mu);
    if (error.ok()) error = s;
    ready_cv.notify_all();
  }
  std::string Where(const Message& m) const {
    const std::string& p = source->partitions()[static_cast<size_t>(m.partition)];
    if (config.kind == SourceKind::kKafka) return config.topic + "/" + p + "@" + std::to_string(m.id.a);
    return p + "@" + FormatRedisId(m.id);
  }
  StreamPosition PositionNow() const {
    StreamPosition p = source->EmptyPosition();
    for (size_t i = 0; i < has_id.size(); ++i) {
      p.partitions[source->partitions()[i]] = has_id[i] ? source->TokenAfter(static_cast<int>(i), last_id[i]) : start_tokens[i];
    }
    return p;
  }

  void Run();
  // Polls once into the buffers; false when the thread must end (stopping, or an error latched).
  bool PollOnce();
  void NoteConnection();
  // The next message to consume, or null when none is buffered (deterministic: none from the
  // partition whose turn it is).
  Message* Peek(size_t turn);
  void Pop(size_t turn);
  // Parses one message into the batch under way; false when the bad share stops the run.
  // BadMessage takes the reason with where the message came from.
  bool Consume(Message& m, Ready* r);
  // The event time of a row from event_column, in ms since the epoch; the reason when it has none.
  Result<int64_t> EventTime(std::string_view row);
  bool BadMessage(const Message& m, const std::string& reason, Ready* r);
  // Builds the next batch (up to `rows` rows); false when the thread must end.
  bool BuildBatch(int64_t rows, Ready* r);
};

void StreamReader::Impl::NoteConnection() {
  const SourceStats st = source->stats();
  if (was_connected && !st.connected) {
    outage_since = SteadyClock::now();
    Log("stream: " + describe + " is unavailable (" + st.last_error + "); retrying");
  } else if (!was_connected && st.connected) {
    const double s = std::chrono::duration<double>(SteadyClock::now() - outage_since).count();
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", s);
    Log("stream: " + describe + " is back after " + buf + "s");
  }
  was_connected = st.connected;
}

bool StreamReader::Impl::PollOnce() {
  polled.clear();
  const Status s = source->Poll(1024, static_cast<int>(config.poll_ms), &polled);
  if (!s.ok()) {
    Latch(s.WithContext("stream " + describe));
    return false;
  }
  NoteConnection();
  const bool per_partition = options.deterministic && buffered.size() > 1;
  for (Message& m : polled) {
    if (per_partition) {
      buffered[static_cast<size_t>(m.partition)].push_back(std::move(m));
    } else {
      arrivals.push_back(std::move(m));
    }
  }
  if (per_partition) {
    // A partition far ahead of the others waits (bounded memory; the turn order needs the others).
    const size_t cap = static_cast<size_t>(std::max<int64_t>(1024, 2 * options.batch_size));
    for (size_t p = 0; p < buffered.size(); ++p) {
      const bool full = buffered[p].size() >= cap;
      if (full != paused[p]) {
        source->Pause(static_cast<int>(p), full);
        paused[p] = full;
      }
    }
  }
  std::lock_guard lock(mu);
  buffered_messages += static_cast<int64_t>(polled.size());
  return !stopping;
}

Message* StreamReader::Impl::Peek(size_t turn) {
  if (options.deterministic && buffered.size() > 1) {
    std::deque<Message>& q = buffered[turn];
    return q.empty() ? nullptr : &q.front();
  }
  return arrivals.empty() ? nullptr : &arrivals.front();
}

void StreamReader::Impl::Pop(size_t turn) {
  if (options.deterministic && buffered.size() > 1) {
    buffered[turn].pop_front();
  } else {
    arrivals.pop_front();
  }
}

bool StreamReader::Impl::BadMessage(const Message& m, const std::string& reason, Ready* r) {
  ++r->bad;
  window.Add(true);
  if (bad_logged < config.log_bad) {
    Log("bad message " + reason);
    if (++bad_logged == config.log_bad) {
      Log("further bad messages are counted, not logged (data.stream.log_bad " + std::to_string(config.log_bad) + ")");
    }
  }
  if (!config.dead_letter.empty()) {
    if (Status s = source->DeadLetter(m, reason); !s.ok() && source->stats().dead_letter_failures == 1) {
      Log("warning: cannot send a bad message to the dead-letter stream " + config.dead_letter + ": " + s.ToString() +
          " (counted in rectrain_stream_dead_letter_failures_total; the run goes on)");
    }
  }
  if (static_cast<double>(window.bad()) > config.max_bad_share * static_cast<double>(window.size())) {
    char share[64];
    std::snprintf(share, sizeof(share), "%.1f%% > data.stream.max_bad_share %.1f%%",
                  100.0 * static_cast<double>(window.bad()) / static_cast<double>(window.size()), 100.0 * config.max_bad_share);
    Latch(FailedPreconditionError("stream " + describe + ": " + std::to_string(window.bad()) + " of the last " +
                                  std::to_string(window.size()) + " messages were bad (" + share + "); the last: " + reason +
                                  ". Fix the producer, or raise data.stream.max_bad_share / data.stream.bad_window"));
    return false;
  }
  return true;
}

Result<int64_t> StreamReader::Impl::EventTime(std::string_view row) {
  // Strings only on the error path: this runs for every message.
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("data.stream.event_time_column " + config.event_time_column + ": " + why);
  };
  Result<std::string_view> field = parser->Field(row, event_column);
  if (!field.ok()) return bad(std::string(field.status().message()));
  std::string_view text = *field;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return bad("missing (each row needs its event time)");
  const bool ms = config.event_time_unit == EventTimeUnit::kMilliseconds;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const bool number = ec == std::errc() && end == text.data() + text.size() && std::isfinite(v);
  // 253402300800 s is 10000-01-01: a larger value is a unit mix-up (or garbage), not a time.
  constexpr double kMaxSeconds = 253402300800.0;
  if (!number || v < 0 || v / (ms ? 1000.0 : 1.0) >= kMaxSeconds) {
    return bad("\"" + std::string(text.substr(0, 40)) + "\" is not a time in " + (ms ? "milliseconds" : "seconds") +
               " since 1970-01-01 UTC" +
               (number && !ms && v >= kMaxSeconds ? " (milliseconds? set data.stream.event_time_unit: ms)" : ""));
  }
  return static_cast<int64_t>(std::llround(ms ? v : v * 1000.0));
}

bool StreamReader::Impl::Consume(Message& m, Ready* r) {
  ++r->messages;
  if (event_column < 0) r->newest_event_ms = std::max(r->newest_event_ms, m.timestamp_ms);
  last_id[static_cast<size_t>(m.partition)] = m.id;
  has_id[static_cast<size_t>(m.partition)] = true;
  if (!m.defect.empty()) return BadMessage(m, Where(m) + ": " + m.defect, r);
  std::string_view text = m.payload;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (config.format == MessageFormat::kJson) {
    Result<std::string> l = parser->LineFromJson(text);
    if (!l.ok()) return BadMessage(m, Where(m) + ": " + l.status().message(), r);
    line = std::move(l).value();
    text = line;
  }
  int64_t event_ms = 0;
  if (event_column >= 0) {
    Result<int64_t> t = EventTime(text);
    if (!t.ok()) return BadMessage(m, Where(m) + ": " + t.status().message(), r);
    event_ms = *t;
  }
  bool kept = false;
  // The source is named only when the row is bad (no string per message on the hot path): with an
  // empty source the parser's message starts at ", column C: ...".
  if (Status s = parser->AddLine(text, {}, 0, &kept); !s.ok()) return BadMessage(m, Where(m) + s.message(), r);
  window.Add(false);
  if (!kept) ++r->filtered;
  r->newest_event_ms = std::max(r->newest_event_ms, event_ms);
  return true;
}

bool StreamReader::Impl::BuildBatch(int64_t rows, Ready* r) {
  {
    std::lock_guard lock(mu);
    if (!pool.empty()) {
      r->batch = std::move(pool.back());
      pool.pop_back();
    }
  }
  parser->BeginBatch(rows);
  Stopwatch parse_clock;
  double parse_s = 0;
  std::optional<SteadyClock::time_point> first_row_at;
  size_t turn = 0;
  const bool wait_limited = !options.deterministic && config.max_batch_wait_ms > 0;
  const auto max_wait = std::chrono::milliseconds(config.max_batch_wait_ms);
  while (parser->rows() < rows) {
    Message* m = Peek(turn);
    if (m == nullptr) {
      parse_s += parse_clock.Seconds();
      if (wait_limited && first_row_at && SteadyClock::now() - *first_row_at >= max_wait) break;
      if (!PollOnce()) return false;
      parse_clock.Reset();
      continue;
    }
    const int64_t before = parser->rows();
    const bool go_on = Consume(*m, r);
    Pop(turn);
    if (!go_on) return false;
    if (parser->rows() > before && !first_row_at) first_row_at = SteadyClock::now();
    if (!buffered.empty()) turn = (turn + 1) % buffered.size();
  }
  parser->FinishBatch(&r->batch);
  r->batch.source = describe;
  r->position = PositionNow();
  r->parse_seconds = parse_s + parse_clock.Seconds();
  return true;
}

void StreamReader::Impl::Run() {
  while (true) {
    {
      std::unique_lock lock(mu);
      space_cv.wait(lock, [&] { return stopping || static_cast<int64_t>(queue.size()) < config.prefetch_batches; });
      if (stopping) return;
    }
    Ready r;
    if (options.max_rows >= 0 && delivered_rows >= options.max_rows) {
      r.end = true;
      std::lock_guard lock(mu);
      queue.push_back(std::move(r));
      ready_cv.notify_all();
      return;
    }
    const int64_t rows = options.max_rows >= 0 ? std::min(options.batch_size, options.max_rows - delivered_rows) : options.batch_size;
    if (!BuildBatch(rows, &r)) return;
    if (r.batch.size == 0 && r.messages == 0) continue;
    delivered_rows += r.batch.size;
    std::lock_guard lock(mu);
    buffered_messages -= r.messages;
    parse_seconds += r.parse_seconds;
    queue.push_back(std::move(r));
    ready_cv.notify_all();
  }
}

StreamReader::StreamReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StreamReader::~StreamReader() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->space_cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<StreamReader>> StreamReader::Open(std::unique_ptr<MessageSource> source, const StreamConfig& config,
                                                         std::unique_ptr<data::RowParser> parser, const StreamPosition& start,
                                                         StreamReaderOptions options) {
  if (options.batch_size < 1) return InvalidArgumentError("the batch size must be >= 1");
  auto impl = std::make_unique<Impl>();
  if (!config.event_time_column.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(impl->event_column, EventColumn(config.event_time_column, *parser));
  }
  impl->config = config;
  impl->options = std::move(options);
  impl->describe = source->Describe();
  RECTRAIN_ASSIGN_OR_RETURN(impl->position, source->Start(start));
  const size_t n = source->partitions().size();
  for (const std::string& p : source->partitions()) impl->start_tokens.push_back(impl->position.partitions[p]);
  impl->last_id.assign(n, MessageId{});
  impl->has_id.assign(n, false);
  impl->paused.assign(n, false);
  impl->buffered.resize(n);
  impl->window = BadWindow(config.bad_window);
  impl->source = std::move(source);
  impl->parser = std::move(parser);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<StreamReader>(new StreamReader(std::move(impl)));
}

Result<std::optional<data::Batch>> StreamReader::Next() {
  Impl& s = *impl_;
  Stopwatch waited;
  std::unique_lock lock(s.mu);
  auto stop_asked = [&] { return s.options.stop != nullptr && s.options.stop->load(std::memory_order_relaxed) != 0; };
  const bool has_until = s.options.until != std::chrono::system_clock::time_point{};
  while (true) {
    if (stop_asked()) {
      s.end = StreamEnd::kStopped;
      break;
    }
    if (has_until && std::chrono::system_clock::now() >= s.options.until) {
      s.end = StreamEnd::kUntil;
      break;
    }
    if (!s.queue.empty()) {
      if (s.queue.front().end) {
        s.end = StreamEnd::kMaxRows;
        break;
      }
      Ready r = std::move(s.queue.front());
      s.queue.pop_front();
      s.space_cv.notify_all();
      s.delivered.messages += r.messages;
      s.delivered.rows += r.batch.size;
      s.delivered.bad += r.bad;
      s.delivered.filtered += r.filtered;
      s.delivered.newest_event_ms = std::max(s.delivered.newest_event_ms, r.newest_event_ms);
      lock.unlock();
      s.position = std::move(r.position);
      s.newest_event_ms = std::max(s.newest_event_ms, r.newest_event_ms);
      s.wait_seconds += waited.Seconds();
      return std::optional<data::Batch>(std::move(r.batch));
    }
    if (!s.error.ok()) return s.error;
    if (s.options.idle_batch_ms > 0 && waited.Seconds() * 1000 >= static_cast<double>(s.options.idle_batch_ms)) {
      lock.unlock();
      s.wait_seconds += waited.Seconds();
      return std::optional<data::Batch>(data::Batch());
    }
    s.ready_cv.wait_for(lock, std::chrono::milliseconds(s.options.idle_batch_ms > 0 ? std::min<int64_t>(s.options.idle_batch_ms, 50) : 50));
  }
  s.wait_seconds += waited.Seconds();
  return std::optional<data::Batch>();
}

data::ReaderStats StreamReader::Stats() const {
  data::ReaderStats st;
  std::lock_guard lock(impl_->mu);
  st.rows_read = impl_->delivered.rows;
  st.rows_rejected = impl_->delivered.bad;
  st.rows_filtered = impl_->delivered.filtered;
  st.parse_seconds = impl_->parse_seconds;
  st.wait_seconds = impl_->wait_seconds;
  st.queue_depth = static_cast<int64_t>(impl_->queue.size());
  st.bytes_read = impl_->source->stats().bytes;
  return st;
}

void StreamReader::Recycle(data::Batch&& batch) {
  std::lock_guard lock(impl_->mu);
  if (impl_->pool.size() < 8) impl_->pool.push_back(std::move(batch));
}

const std::vector<std::string>& StreamReader::dense_names() const { return impl_->parser->dense_names(); }
const std::vector<std::string>& StreamReader::sparse_names() const { return impl_->parser->sparse_names(); }
const StreamPosition& StreamReader::position() const { return impl_->position; }
int64_t StreamReader::newest_event_ms() const { return impl_->newest_event_ms; }
StreamEnd StreamReader::end_reason() const { return impl_->end; }
Status StreamReader::Commit(const StreamPosition& position) { return impl_->source->Commit(position); }
std::string StreamReader::Describe() const { return impl_->describe; }

int64_t StreamReader::Lag() {
  const int64_t broker = impl_->source->Lag();
  if (broker < 0) return -1;
  std::lock_guard lock(impl_->mu);
  int64_t held = impl_->buffered_messages;
  for (const Ready& r : impl_->queue) held += r.messages;
  return broker + held;
}

StreamStats StreamReader::stream_stats() const {
  std::lock_guard lock(impl_->mu);
  StreamStats st = impl_->delivered;
  st.source = impl_->source->stats();
  return st;
}

}  // namespace rectrain::stream
