// rectrain/train/internal/online.h (internal to train/): the stream side of an online run
// (data.stream; docs/online.md), the TrainSource (run_setup.h) of its one endless pass. It opens
// this rank's StreamReader where the checkpoint left off, writes the job's position into each
// checkpoint, commits it once that checkpoint has landed, and keeps the progressive-validation
// window (every batch is scored before it is trained on; the AUC and logloss of the last
// train.online_window predictions are the online metrics).
//
// Exactly-once: a checkpoint holds the model and the position after the last row it trained
// on, written together; the position is committed to the broker only after the checkpoint is
// complete on every rank, so a crash at any moment resumes (from the checkpoint) at exactly the
// rows the restored model has not seen. What the broker holds as committed may lag behind (a
// commit that failed is retried by the next checkpoint); it is never ahead.
//
// Thread safety: the training thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/row_parser.h"
#include "rectrain/serve/model_package.h"
#include "rectrain/stream/stream_reader.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/run_setup.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

// A training-mode parser of an online run's rows and (*layout) their layout: data.train's files
// give the header and the statistics of standardize / quantiles when there are files; otherwise
// the config's schema alone (such steps then fail with InvalidArgument saying to set data.train).
Result<std::unique_ptr<data::RowParser>> StreamRowParser(const config::TrainConfig& c, data::RowLayout* layout);

struct OnlineOptions {
  int64_t rank_batch = 0;        // this rank's rows per step
  int64_t rows_done = 0;         // training rows of earlier sessions (the checkpoint's)
  const std::atomic<int>* stop = nullptr;
  std::chrono::system_clock::time_point until{};  // --until; {} = none
  std::function<void(const std::string&)> log;
};

// What ends an online run besides train.max_rows: TrainerOptions' stop flag and --until.
struct OnlineControls {
  const std::atomic<int>* stop = nullptr;
  std::chrono::system_clock::time_point until{};
};

// data.stream for this rank of `job`, continuing at `at`'s stream position (a fresh run:
// data.stream.start): TrainData with the OnlineStream as its source and its one pass open.
Result<TrainData> OpenOnlineData(const config::TrainConfig& c, const Job& job, const RunScale& scale,
                                 const checkpoint::CheckpointMeta& at, const OnlineControls& controls, const LogFn& log);

class OnlineStream final : public TrainSource {
 public:
  // Opens this rank's partitions at meta.stream_position (empty: data.stream.start). The rows
  // are parsed with data.* (statistics of standardize / quantiles from data.train's files).
  static Result<std::unique_ptr<OnlineStream>> Open(const config::TrainConfig& c,
                                                    const checkpoint::CheckpointMeta& meta, const Job& job,
                                                    OnlineOptions options);
  // TrainSource. The one pass (OpenPass once; FailedPrecondition after): the reader stays owned
  // by the pass, which must outlive every later call of this object.
  Result<std::unique_ptr<data::BatchReader>> OpenPass(int64_t epoch) override;
  void EndPass() override {}
  // The job's position (every rank's partitions) into meta->stream_position.
  Status SavePosition(checkpoint::CheckpointMeta* meta) override;
  // Commits this rank's position of the last SavePosition. A failure is logged (the first of a
  // series) and counted, never fatal: the next checkpoint's commit retries.
  void CheckpointLanded() override;
  bool in_memory() const override { return false; }

  // Why the stream ended (Next() returned no batch), for the log and the run's status.
  stream::StreamEnd end_reason() const { return reader_->end_reason(); }
  // Progressive validation: the predictions of a step's rows (made before it trained on them).
  void Score(std::span<const float> probs, std::span<const float> labels);
  // The figures for reports (lag, event time, bad messages, window AUC/logloss).
  OnlineFigures Figures(const ComputeContext& compute);
  std::string Describe() const { return reader_->Describe(); }
  // What the model has trained on so far, for the manifest of a published version: the event
  // time of the newest message trained on any rank (ms since the epoch; 0: none yet) and the
  // job's position (every rank's partitions). Every rank of a job calls it together.
  Result<serve::TrainedEvents> JobEvents();

 private:
  // The job's position (every rank's partitions) as JSON; every rank of a job calls it together.
  // JobPosition also keeps this rank's part as the one CheckpointLanded commits.
  Result<std::string> JobPosition();
  Result<std::string> MergedPosition(const stream::StreamPosition& mine);

  OnlineStream(const Job& job, int64_t window) : job_(job), probs_(static_cast<size_t>(window)), labels_(probs_.size()) {}

  Job job_;
  stream::StreamReader* reader_ = nullptr;  // owned by the pass after OpenPass
  std::unique_ptr<stream::StreamReader> owned_;
  std::function<void(const std::string&)> log_;
  stream::StreamPosition mine_;  // this rank's position in the last JobPosition()
  int64_t commit_failures_in_a_row_ = 0;
  std::vector<float> probs_, labels_;
  size_t pos_ = 0;
  bool full_ = false;
};

}  // namespace rectrain::train::internal
