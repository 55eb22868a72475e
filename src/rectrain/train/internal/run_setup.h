// rectrain/train/internal/run_setup.h (internal to train/): the parts of a training run, built
// before its first step by functions that return them as plain structs, in the order the trainer
// calls them (each logs what it decides through `log`, so train.log reads in that order):
//
//   ScaleOf          the global batch and the learning-rate factor of the job
//   FindResumePoint  the newest checkpoint of a resumed run and its meta.json (with
//                    train.checkpoint_dir in an object store, the trainer first fetches a newer
//                    one from the store: internal/remote_checkpoints.h)
//   OpenTrainData    data.train as a TrainSource, its first pass open, its fields (data.stream:
//                    OpenOnlineData, internal/online.h)
//   BuildRunModel    the model, its tables and store, the dense optimizer, the step runner
//   RestoreRun       the checkpoint's parameters, optimizer state and rows into that model
//   OpenValidation   data.valid for evaluations (null without it)
//
// TrainSource is the seam of the batch source: the training loop asks it for one reader per pass
// and never looks at files. An online run (internal/online.h: a never-ending data::BatchReader
// over Kafka or Redis Streams) implements it with a pass that never ends, SavePosition() writing
// the stream's offsets into the checkpoint and CheckpointLanded() committing them to the broker;
// the loop's per-step actions (trainer.cc AfterStep) hold its clock decisions (--until,
// train.checkpoint_every_s) and train.max_rows, and Step() its progressive validation.
//
// Thread safety: used by the training thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/reader.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/train/internal/evaluator.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/internal/step_runner.h"

namespace rectrain::train::internal {

using LogFn = std::function<void(const std::string&)>;
class OnlineStream;

// data.batch_size is the global batch, or with dist.batch per_rank each rank's (DDP style);
// dist.lr_scaling multiplies the learning rates by the ranks or their root.
struct RunScale {
  int64_t global_batch = 0;  // rows per step over the job
  double lr_factor = 1.0;
};
RunScale ScaleOf(const config::TrainConfig& c, int world);

// train.log's first lines: the run (model, threads, batch), the job (ranks, transport, data split
// or the asynchronous roles), an automatic model.precision, the scaled batch and learning rates.
std::vector<std::string> StartLines(const config::TrainConfig& c, const Job& job, const RunScale& scale, bool resume,
                                    const std::string& run_dir);

// The newest checkpoint under `checkpoints_dir` when `resume` (NotFound when there is none),
// with its meta.json; a fresh run: no directory and a zero meta.
struct ResumePoint {
  std::optional<std::string> dir;
  checkpoint::CheckpointMeta meta;
};
Result<ResumePoint> FindResumePoint(const std::string& checkpoints_dir, bool resume);

// Where the training batches come from, pass after pass (see the top comment). The loop's side
// of the contract (trainer.cc Loop, EndEpoch, Checkpoint), one rank's view:
//   - The first pass comes from TrainData::first_pass; after that, OpenPass(meta.epoch) whenever
//     no pass is open. Every rank of a sync job reads its reader in lockstep (internal/job.h).
//   - A reader that ends (no more batches, agreed by the job's ranks) ends the pass: EndPass(),
//     then the epoch counter moves on (evaluation, early stopping, train.epochs). A reader that
//     never ends keeps the run in one pass, ended by train.max_steps or a stop signal.
//   - At every checkpoint, SavePosition() after the loop's counters are set; on resume the
//     source is rebuilt from that meta (OpenTrainData's `at`).
//   - in_memory() for each epoch line of train.log.
// OpenTrainData builds the files' source; another source is built beside it and returned in a
// TrainData the same way (first_pass, the field names).
class TrainSource {
 public:
  virtual ~TrainSource() = default;
  // The reader of pass `epoch` for this rank: its share (shards), its slice of every global
  // batch (batches), or the whole pass (one process, an asynchronous worker's units). The first
  // pass of a resumed run starts where the checkpoint left it.
  virtual Result<std::unique_ptr<data::BatchReader>> OpenPass(int64_t epoch) = 0;
  // The pass just read has ended: the next one starts at its beginning.
  virtual void EndPass() = 0;
  // What a checkpoint must hold to resume this source where it is, beyond the loop's counters
  // (step, rows_in_epoch, rank_rows_in_epoch): files write the plan of a replayed epoch, a stream
  // every rank's offsets. Every rank of a job calls it together (a stream gathers the ranks').
  [[nodiscard]] virtual Status SavePosition(checkpoint::CheckpointMeta* meta) = 0;
  // The checkpoint holding that position is complete on every rank: a stream may now commit it
  // to the broker (never before, so the broker is never ahead of a checkpoint).
  virtual void CheckpointLanded() {}
  // True once the split is held in memory (train.log's epoch line says so).
  virtual bool in_memory() const = 0;
};

struct TrainData {
  std::unique_ptr<TrainSource> source;
  // The first pass, already open (its reader names the fields); null for a run whose epochs are
  // done and for an async server, which read no training data.
  std::unique_ptr<data::BatchReader> first_pass;
  std::vector<std::string> sparse_names, dense_names;  // data.train's fields: the model's inputs
  int64_t rows_per_epoch = 0;  // an estimate from the file sizes, for the ETA (0: unknown)
  int64_t local_rows_done = 0;  // rows of the epoch in progress this rank had trained (resume)
  // data.stream: `source` itself, for the loop's online hooks (scoring, figures, the end reason).
  OnlineStream* online = nullptr;
};

// data.train for this rank of `job` (deterministic: true pins data.memory_cache and data.cache
// auto to off), continuing at `at` (a fresh run: zeros). `budget` is shared with data.valid.
Result<TrainData> OpenTrainData(const config::TrainConfig& c, const Job& job, const RunScale& scale,
                                const checkpoint::CheckpointMeta& at, std::shared_ptr<data::MemoryBudget> budget, const LogFn& log);

struct RunModel {
  ModelBundle bundle;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<StepRunner> runner;  // points into bundle and optimizer
  int classes = 1;  // outputs reported: 1 (CTR, and a multi-task model's first task) or a classifier's
};
Result<std::unique_ptr<RunModel>> BuildRunModel(const config::TrainConfig& c, const TrainData& data, const Job& job,
                                                const LogFn& log);

// Loads the checkpoint of `point` into `model` (every rank its rows) and returns its meta.
// InvalidArgument when it holds another model.type; logs a note when the config changed.
Result<checkpoint::CheckpointMeta> RestoreRun(const ResumePoint& point, const config::LoadedConfig& lc, const Job& job,
                                  RunModel* model, const LogFn& log);

// data.valid, read whole and in file order by every rank (evaluations step every rank
// together, also in an asynchronous job); null without data.valid.
Result<std::unique_ptr<EvalSplit>> OpenValidation(const config::TrainConfig& c, const Job& job,
                                                  std::shared_ptr<data::MemoryBudget> budget, const LogFn& log);

}  // namespace rectrain::train::internal
