// rectrain/train/internal/online.cc: see online.h.
#include "rectrain/train/internal/online.h"

#include <algorithm>
#include <chrono>

#include "rectrain/data/pass_plan.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/train/metrics.h"

namespace rectrain::train::internal {

Result<std::unique_ptr<data::RowParser>> StreamRowParser(const config::TrainConfig& c, data::RowLayout* layout) {
  if (!c.train_files.empty()) {
    data::DataConfig d = c.data;
    d.files = c.train_files;
    d.cache = data::CacheMode::kOff;
    data::ReadOptions ro = c.read;
    ro.shuffle = false;
    RECTRAIN_ASSIGN_OR_RETURN(auto reader, data::OpenBatchReader(d, ro));
    RECTRAIN_ASSIGN_OR_RETURN(*layout, reader->row_layout());
  } else {
    *layout = data::RowLayout{};
    layout->format = c.data.schema.format == data::DataFormat::kAuto ? data::DataFormat::kCriteo : c.data.schema.format;
  }
  auto parser = data::RowParser::Create(c.data, *layout, {.training = true});
  if (!parser.ok() && c.train_files.empty() && parser.status().message().find("statistic") != std::string::npos) {
    return InvalidArgumentError(std::string(parser.status().message()) +
                                " (with data.stream, standardize / quantiles take their statistics from data.train's files: "
                                "set data.train)");
  }
  return parser;
}

Result<std::unique_ptr<OnlineStream>> OnlineStream::Open(const config::TrainConfig& c,
                                                         const checkpoint::CheckpointMeta& meta, const Job& job,
                                                         OnlineOptions o) {
  const stream::StreamConfig& sc = *c.stream;
  data::RowLayout layout;
  RECTRAIN_ASSIGN_OR_RETURN(auto parser, StreamRowParser(c, &layout));
  stream::StreamPosition start;
  if (!meta.stream_position.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(start, stream::StreamPosition::FromJson(meta.stream_position));
  }
  RECTRAIN_ASSIGN_OR_RETURN(auto source, stream::OpenSource(sc, job.rank(), job.world()));
  stream::StreamReaderOptions ro;
  ro.batch_size = std::max<int64_t>(1, o.rank_batch);
  ro.deterministic = c.deterministic;
  if (c.train.max_rows > 0) {
    // This rank's share of the rows still to train on (the ranks' shares add up to it).
    const int64_t left = std::max<int64_t>(0, c.train.max_rows - o.rows_done);
    ro.max_rows = left / job.world() + (job.rank() < left % job.world() ? 1 : 0);
  }
  ro.until = o.until;
  ro.stop = o.stop;
  // A rank of a job takes part in every step; with nothing to train on it brings no rows.
  if (job.lockstep() && !c.deterministic) ro.idle_batch_ms = std::max<int64_t>(1, sc.max_batch_wait_ms);
  ro.log = o.log;
  auto stream_reader = stream::StreamReader::Open(std::move(source), sc, std::move(parser), start, std::move(ro));
  if (!stream_reader.ok()) return stream_reader.status();
  auto online = std::unique_ptr<OnlineStream>(new OnlineStream(job, c.train.online_window));
  online->owned_ = std::move(stream_reader).value();
  online->reader_ = online->owned_.get();
  online->log_ = o.log;
  online->mine_ = online->reader_->position();
  // The checkpoint resumed from has landed, but the session that wrote it may have died before
  // committing it (or its commit failed): commit it now, so the broker catches up even when this
  // session writes no checkpoint of its own (resumed at the last one, train.max_rows reached).
  if (!meta.stream_position.empty()) online->CheckpointLanded();
  return online;
}

Result<TrainData> OpenOnlineData(const config::TrainConfig& c, const Job& job, const RunScale& scale,
                                 const checkpoint::CheckpointMeta& at, const OnlineControls& controls, const LogFn& log) {
  OnlineOptions o;
  o.rank_batch = std::max<int64_t>(1, data::SliceOfBatch(scale.global_batch, job.rank(), job.world()).size());
  o.rows_done = at.rows_read_total;
  o.stop = controls.stop;
  o.until = controls.until;
  o.log = log;
  auto opened = OnlineStream::Open(c, at, job, std::move(o));
  if (!opened.ok()) return opened.status().WithContext("data.stream");
  TrainData d;
  d.online = opened->get();
  d.source = std::move(opened).value();
  RECTRAIN_ASSIGN_OR_RETURN(d.first_pass, d.source->OpenPass(at.epoch));
  d.sparse_names = d.first_pass->sparse_names();
  d.dense_names = d.first_pass->dense_names();
  log("online: training from " + d.online->Describe() +
      (at.stream_position.empty() ? " at data.stream.start" : " at the checkpoint's position") +
      (c.train.max_rows > 0 ? ", until train.max_rows " + std::to_string(c.train.max_rows) : std::string()));
  return d;
}

Result<std::unique_ptr<data::BatchReader>> OnlineStream::OpenPass(int64_t) {
  if (!owned_) return FailedPreconditionError("data.stream is one endless pass; it has no second pass to open");
  return std::unique_ptr<data::BatchReader>(std::move(owned_));
}

Status OnlineStream::SavePosition(checkpoint::CheckpointMeta* meta) {
  RECTRAIN_ASSIGN_OR_RETURN(meta->stream_position, JobPosition());
  return OkStatus();
}

Result<std::string> OnlineStream::JobPosition() {
  mine_ = reader_->position();
  return MergedPosition(mine_);
}

Result<serve::TrainedEvents> OnlineStream::JobEvents() {
  serve::TrainedEvents events;
  std::vector<int64_t> newest = {reader_->newest_event_ms()};
  if (job_.distributed()) {
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(newest), dist::ReduceOp::kMax));
  }
  events.newest_ms = newest[0];
  RECTRAIN_ASSIGN_OR_RETURN(events.stream_position, MergedPosition(reader_->position()));
  return events;
}

Result<std::string> OnlineStream::MergedPosition(const stream::StreamPosition& mine) {
  if (!job_.distributed()) return mine.ToJson();
  const std::string text = mine.ToJson();
  std::vector<char> all;
  std::vector<int64_t> counts;
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllGatherV(std::span<const char>(text.data(), text.size()), &all, &counts));
  stream::StreamPosition merged = mine;
  merged.partitions.clear();
  int64_t at = 0;
  for (int64_t n : counts) {
    RECTRAIN_ASSIGN_OR_RETURN(stream::StreamPosition p,
                              stream::StreamPosition::FromJson(std::string_view(all.data() + at, static_cast<size_t>(n))));
    merged.partitions.insert(p.partitions.begin(), p.partitions.end());
    at += n;
  }
  return merged.ToJson();
}

void OnlineStream::CheckpointLanded() {
  const Status s = reader_->Commit(mine_);
  if (s.ok()) {
    if (commit_failures_in_a_row_ > 0 && log_) {
      log_("stream: offsets committed again after " + std::to_string(commit_failures_in_a_row_) + " failed commit(s)");
    }
    commit_failures_in_a_row_ = 0;
    return;
  }
  if (commit_failures_in_a_row_++ == 0 && log_) {
    log_("warning: cannot commit the stream position to the broker: " + s.ToString() +
         " (the checkpoint holds it; the next checkpoint retries; a restart resumes from the checkpoint)");
  }
}

void OnlineStream::Score(std::span<const float> probs, std::span<const float> labels) {
  for (size_t i = 0; i < labels.size() && i < probs.size(); ++i) {
    probs_[pos_] = probs[i];
    labels_[pos_] = labels[i];
    if (++pos_ == probs_.size()) {
      pos_ = 0;
      full_ = true;
    }
  }
}

OnlineFigures OnlineStream::Figures(const ComputeContext& compute) {
  OnlineFigures f;
  f.enabled = true;
  const size_t n = full_ ? probs_.size() : pos_;
  f.window_rows = static_cast<int64_t>(n);
  if (n > 0) {
    const std::span<const float> p(probs_.data(), n), l(labels_.data(), n);
    f.auc = ExactAuc(p, l, compute);
    f.logloss = LogLoss(p, l);
  }
  const stream::StreamStats st = reader_->stream_stats();
  f.lag_messages = reader_->Lag();
  f.newest_event_ms = reader_->newest_event_ms();
  if (f.newest_event_ms > 0) {
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    f.event_lag_seconds = static_cast<double>(now_ms - f.newest_event_ms) / 1000.0;
  }
  f.messages = st.messages;
  f.bad_messages = st.bad;
  f.dead_lettered = st.source.dead_lettered;
  f.dead_letter_failures = st.source.dead_letter_failures;
  f.source_errors = st.source.errors;
  f.reconnects = st.source.reconnects;
  f.connected = st.source.connected;
  f.commits = st.source.commits;
  f.commit_failures = st.source.commit_failures;
  return f;
}

}  // namespace rectrain::train::internal
