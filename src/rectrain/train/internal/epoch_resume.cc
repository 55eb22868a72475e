#include "rectrain/train/internal/epoch_resume.h"

#include <numeric>
#include <optional>

namespace rectrain::train::internal {
namespace {

std::string Streams(int world) {
  return world == 1 ? "one stream of the whole pass" : std::to_string(world) + " shards (dist.data_split shards)";
}

// The old streams one after another (epoch_resume.h, OpenReplay).
class ReplayReader final : public data::BatchReader {
 public:
  ReplayReader(EpochStart start, int64_t epoch, StreamOpener open)
      : start_(std::move(start)), epoch_(epoch), open_(std::move(open)), to_skip_(start_.replay_rows) {}

  // Opens the first stream (its fields name the batches).
  Status Begin() { return OpenNext(); }

  Result<std::optional<data::Batch>> Next() override {
    while (current_.reader) {
      RECTRAIN_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, current_.reader->Next());
      if (batch.has_value()) return batch;
      // This stream is done: the replay's rows it skipped beyond its own are no longer to skip.
      const data::ReaderStats s = current_.reader->Stats();
      to_skip_ -= std::max<int64_t>(0, s.rows_skipped - start_.plan_rows[static_cast<size_t>(next_ - 1)]);
      Add(s, &done_);
      current_ = OpenedStream();
      if (next_ < start_.plan_world) {
        RECTRAIN_RETURN_IF_ERROR(OpenNext());
      }
    }
    return std::optional<data::Batch>();
  }

  data::ReaderStats Stats() const override {
    data::ReaderStats s = done_;
    if (current_.reader) {
      const data::ReaderStats c = current_.reader->Stats();
      Add(c, &s);
      s.queue_depth = c.queue_depth;
    }
    return s;
  }
  void Recycle(data::Batch&& batch) override {
    if (current_.reader) current_.reader->Recycle(std::move(batch));
  }
  const std::vector<std::string>& dense_names() const override { return dense_; }
  const std::vector<std::string>& sparse_names() const override { return sparse_; }

 private:
  static void Add(const data::ReaderStats& a, data::ReaderStats* to) {
    to->rows_read += a.rows_read;
    to->rows_rejected += a.rows_rejected;
    to->bytes_read += a.bytes_read;
    to->files += a.files;
    to->parse_seconds += a.parse_seconds;
    to->wait_seconds += a.wait_seconds;
    to->rows_skipped += a.rows_skipped;
    to->rows_filtered += a.rows_filtered;
    to->rows_downsampled += a.rows_downsampled;
  }

  Status OpenNext() {
    const int k = next_++;
    RECTRAIN_ASSIGN_OR_RETURN(current_,
                              open_(k, start_.plan_world, epoch_, start_.plan_rows[static_cast<size_t>(k)] + to_skip_));
    if (k == 0) {
      dense_ = current_.reader->dense_names();
      sparse_ = current_.reader->sparse_names();
    }
    return OkStatus();
  }

  const EpochStart start_;
  const int64_t epoch_;
  const StreamOpener open_;
  int64_t to_skip_;  // rows of the replay still to skip (the rest of start_.replay_rows)
  int next_ = 0;     // the next old stream to open
  OpenedStream current_;
  data::ReaderStats done_;  // of the streams already read
  std::vector<std::string> dense_, sparse_;
};

}  // namespace

Result<EpochStart> PlanEpochStart(const checkpoint::CheckpointMeta& meta, int world, int rank) {
  EpochStart s;
  const std::string epoch = std::to_string(meta.epoch);
  if (meta.plan_world > 0) {  // the checkpoint was written during a replay: continue it
    s.replay = true;
    s.plan_world = meta.plan_world;
    s.plan_rows = meta.plan_rows;
    s.replay_rows = meta.rows_in_epoch - std::accumulate(s.plan_rows.begin(), s.plan_rows.end(), int64_t{0});
    if (s.replay_rows < 0) {
      return DataLossError("checkpoint of step " + std::to_string(meta.step) + ": rows_in_epoch " +
                           std::to_string(meta.rows_in_epoch) + " is below the rows its epoch_plan had trained");
    }
    s.note = "note: epoch " + epoch + " continues as it was being read, as " + Streams(s.plan_world) +
             " one after another, split batch by batch over the ranks (" + std::to_string(s.replay_rows) +
             " rows of that replay are done); epoch " + std::to_string(meta.epoch + 1) + " is planned for this job";
    return s;
  }
  int old_world = 1;
  std::vector<int64_t> old_rows = {meta.rows_in_epoch};
  if (meta.data_split == "shards" && meta.world > 1) {
    if (static_cast<int>(meta.rank_rows_in_epoch.size()) != meta.world) {
      return DataLossError("checkpoint of step " + std::to_string(meta.step) + ": rank_rows_in_epoch has " +
                           std::to_string(meta.rank_rows_in_epoch.size()) + " entries for " +
                           std::to_string(meta.world) + " ranks");
    }
    old_world = meta.world;
    old_rows = meta.rank_rows_in_epoch;
  }
  if (meta.rows_in_epoch == 0) return s;
  if (old_world == world) {
    s.skip = old_rows[static_cast<size_t>(rank)];
    return s;
  }
  s.replay = true;
  s.plan_world = old_world;
  s.plan_rows = old_rows;
  s.note = "note: the checkpoint's job read epoch " + epoch + " as " + Streams(old_world) + " and this one reads " +
           Streams(world) + ": the rest of epoch " + epoch + " is read as the former, one after another, each after " +
           "the rows it had trained (" + std::to_string(meta.rows_in_epoch) + " in all), and split batch by batch " +
           "over the ranks, so every row of the epoch is trained once; each rank reads that rest whole; epoch " +
           std::to_string(meta.epoch + 1) + " is planned for this job";
  return s;
}

Result<std::unique_ptr<data::BatchReader>> OpenReplay(const EpochStart& start, int64_t epoch, StreamOpener open) {
  if (!start.replay || start.plan_world < 1 || static_cast<int>(start.plan_rows.size()) != start.plan_world) {
    return InternalError("OpenReplay needs the plan of a replay");
  }
  auto reader = std::make_unique<ReplayReader>(start, epoch, std::move(open));
  RECTRAIN_RETURN_IF_ERROR(reader->Begin());
  return std::unique_ptr<data::BatchReader>(std::move(reader));
}

}  // namespace rectrain::train::internal
