// rectrain/config/train_config.h: the schema of a training run's YAML config (TrainConfig) and
// its strict binding. Every key, its default and its range are documented in docs/config.md;
// keep the two in sync (tests/examples_test.cc parses every example config).
//
// The config aggregates the contracts of the modules a run touches: data::DataConfig and
// data::ReadOptions (data.*, features.*), nn::ModelConfig (model.*), the embedding table
// template embedding::EmbeddingTableConfig (embedding.*), the dense optimizer and its
// learning-rate schedule (optimizer.*), and the trainer's own settings (train.*, eval.*).
//
// Thread safety: pure functions over value types.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(LoadedConfig c, LoadTrainConfig("examples/deepfm.yaml",
//                                                             {"model.hidden=[256,128]"}));
//   WriteFile(run_dir + "/config.yaml", c.resolved_yaml);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/binder.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/profile.h"
#include "rectrain/data/reader.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/base/named_enum.h"
#include "rectrain/optim/lr_schedule.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/stream/stream_config.h"

namespace rectrain::config {

// train.early_stopping.metric: auc, accuracy (higher is better) | logloss (lower is better).
enum class EarlyStoppingMetric : uint8_t { kAuc, kLogloss, kAccuracy };
inline constexpr NamedEnum<EarlyStoppingMetric>::Entry kEarlyStoppingMetricEntries[] = {
    {EarlyStoppingMetric::kAuc, "auc"}, {EarlyStoppingMetric::kLogloss, "logloss"}, {EarlyStoppingMetric::kAccuracy, "accuracy"}};
inline constexpr NamedEnum<EarlyStoppingMetric> kEarlyStoppingMetrics(kEarlyStoppingMetricEntries);

struct EarlyStoppingConfig {
  EarlyStoppingMetric metric = EarlyStoppingMetric::kAuc;
  int64_t patience = 0;        // evaluations without improvement before stopping; 0 = off
  double min_delta = 0.0;      // an improvement must exceed this
};

// train.publish: the trainer publishes its in-memory model every every_s seconds of wall time
// into a versions directory that `rectrain serve` watches (serve/publish.h, docs/online.md
// "Publishing to serving"): serving deltas, a full export every full_every deltas.
struct PublishSettings {
  std::string to;            // a local (or shared) directory
  double every_s = 5;
  int64_t full_every = 10;   // 0: only the first publish is a full export
};

struct TrainerSettings {
  int64_t epochs = 1;
  int64_t max_steps = 0;               // 0 = no limit (epochs decide)
  int64_t eval_every_steps = 0;        // 0 = evaluate only at the end of each epoch
  int64_t checkpoint_every_steps = 0;  // 0 = checkpoint only at the end (and on SIGINT/SIGTERM)
  int64_t keep_checkpoints = 3;
  // Incremental checkpoints: every this-many-th checkpoint is full, the ones between are deltas
  // of the embedding tables' changes since the previous checkpoint (docs/formats/checkpoint.md).
  // 1 = every checkpoint full (tables keep no change record).
  int64_t checkpoint_full_every = 1;
  // Where checkpoints are kept besides RUN_DIR/checkpoints/ (their local staging copy): empty, or
  // an object-store prefix such as s3://bucket/runs/x/checkpoints that each checkpoint is
  // uploaded to (meta.json last) and --resume reads from (docs/storage.md).
  std::string checkpoint_dir;
  int64_t log_every_steps = 100;
  // Gradient accumulation: every step's batch is run through the model in this many slices (the
  // activations of one slice in memory at a time) whose gradients are summed before one update.
  int64_t accumulate_steps = 1;
  EarlyStoppingConfig early_stopping;
  // Online training (data.stream, docs/online.md): stop after this many training rows in all
  // (0 = no limit), and checkpoint every this many seconds of wall time (0 = off).
  int64_t max_rows = 0;
  double checkpoint_every_s = 0;
  // data.stream: the progressive-validation window (the last this many scored rows).
  int64_t online_window = 100000;
  std::optional<PublishSettings> publish;  // train.publish; absent: the trainer does not publish
};

struct EvalSettings {
  bool gauc = false;       // group AUC over data.group_key
  int64_t batch_size = 0;  // 0 = data.batch_size
};

// tracking.*: where and how `rectrain train` records the run (docs/tracking.md).
struct TrackingSettings {
  bool enabled = true;
  std::string workspace;            // "" = the current directory
  std::string store;                // "" = <workspace>/.rectrain/tracking.db
  std::string run_name;             // "" = the run directory's name
  std::vector<std::string> tags;
  std::string group;                // group id ("" = none), e.g. a tune study
  int64_t parent_id = 0;            // parent run id (0 = none); the run must exist
};

// monitoring.*: the /metrics endpoint of `rectrain train`.
struct MonitoringSettings {
  bool enabled = true;
  std::string host = "127.0.0.1";  // non-loopback needs $RECTRAIN_METRICS_TOKEN
  int port = 0;                     // 0 = an ephemeral port, printed at start
  // After a failed run (e.g. a diverged loss), keep serving /metrics this long so that a scrape
  // sees the final values; 0 = exit at once. SIGINT/SIGTERM end the wait.
  double linger_on_failure_s = 0;
};

// dist.*: how a job of several ranks (mpirun/srun; docs/scaling.md) trains. A single process
// ignores it.
enum class DistMode : uint8_t { kSync, kAsync };
// How the ranks share the data: shards = each reads its units of every pass (text chunks,
// Parquet row groups, cache blocks; data/pass_plan.h); batches = each reads the whole pass and
// trains on its slice of every global batch, so the model does not depend on the rank count.
enum class DataSplit : uint8_t { kAuto, kShards, kBatches };
// dist.lr_scaling: the learning rates multiplied by the number of ranks (linear) or its root.
enum class LrScaling : uint8_t { kNone, kLinear, kSqrt };
struct DistSettings {
  DistMode mode = DistMode::kSync;
  DataSplit data_split = DataSplit::kAuto;  // auto: batches with deterministic: true, else shards
  double timeout_s = 300;                   // a peer silent this long fails the job, naming it
  // dist.batch per_rank: data.batch_size rows per rank, so the global batch grows with the ranks
  // (PyTorch DDP's convention); global (default): data.batch_size is the global batch.
  bool batch_per_rank = false;
  LrScaling lr_scaling = LrScaling::kNone;
  // dist.mode async: the last `servers` ranks hold the rows and dense parameters and apply the
  // updates; a worker's pull waits while it is more than `staleness` steps ahead of the slowest.
  int servers = 1;
  int64_t staleness = 4;
};
const char* DataSplitName(DataSplit split);

struct TrainConfig {
  uint64_t seed = 42;
  bool deterministic = false;
  int threads = 2;                       // compute threads (the one OpenMP pool)
  data::DataConfig data;                 // files left empty; see train_files / valid_files
  std::vector<std::string> train_files;  // data.train
  std::vector<std::string> valid_files;  // data.valid (may be empty: no evaluation)
  data::ReadOptions read;                // batch_size, shuffle, buffers, reader threads
  data::EpochOptions epoch;              // data.shuffle mode/key, data.memory_cache(_bytes)
  nn::ModelConfig model;
  bool model_precision_auto = false;     // model.precision: auto (model.precision holds the choice)
  // model.task_labels / model.task_weights (mmoe): the extra tasks' dense label columns and the
  // loss weight of every task (the label first); resolved against the reader's columns by the
  // trainer (train/internal/model_bundle.h).
  std::vector<std::string> task_labels;
  std::vector<float> task_weights;
  embedding::EmbeddingTableConfig embedding;  // template for every table of the model
  float embedding_lr = 0.05f;                 // embedding.optimizer.lr (sparse rules)
  optim::DenseOptimizerConfig optimizer;
  optim::LrScheduleConfig lr_schedule;        // optimizer.lr, warmup_steps, decay, ...
  TrainerSettings train;
  EvalSettings eval;
  TrackingSettings tracking;
  MonitoringSettings monitoring;
  data::DataChecks checks;               // checks.*: thresholds of `rectrain data check`
  DistSettings dist;                     // dist.*
  // data.stream: train from a Kafka topic or a Redis stream instead of data.train's files
  // (which then only give the statistics of standardize / quantiles, if any).
  std::optional<stream::StreamConfig> stream;

  // dist.data_split with auto resolved.
  DataSplit ResolvedDataSplit() const {
    if (dist.data_split != DataSplit::kAuto) return dist.data_split;
    return deterministic && dist.mode == DistMode::kSync ? DataSplit::kBatches : DataSplit::kShards;
  }

  // The schedule of the sparse learning rate: optimizer.* warm-up and decay applied to
  // embedding.optimizer.lr (min_lr scaled by the same ratio).
  optim::LrScheduleConfig SparseLrSchedule() const;
};

// Binds data.stream.* (when the section is present) and train.max_rows / checkpoint_every_s
// into *config (config/stream_section.cc); BindTrainConfig calls it.
void BindStreamSection(ConfigBinder& binder, TrainConfig* config);

// Binds train.publish.* (when the section is present, so that a config without it resolves as
// before) into *config (config/publish_section.cc); BindTrainConfig calls it.
void BindPublishSection(ConfigBinder& binder, TrainConfig* config);

// Binds every key of the schema from `binder`, recording type/range/consistency errors in
// it; the caller then calls binder.Finish() (which also reports unknown keys).
TrainConfig BindTrainConfig(ConfigBinder& binder);

// The schema as BindTrainConfig declares it: every key with its type, range and choices, in
// binding order (docs/config.md documents each; train_config_test holds the two together).
std::vector<KeySpec> TrainConfigSchema();

struct LoadedConfig {
  TrainConfig config;
  std::string resolved_yaml;  // every key with its effective value
  uint64_t hash = 0;          // HashBytes(resolved_yaml): identifies the configuration
};

// Parses `text`, applies the `--set` overrides in order, binds and finishes. Every config
// error is reported together in one InvalidArgument (see binder.h for the format).
Result<LoadedConfig> LoadTrainConfigFromString(std::string_view text, const std::string& source,
                                               const std::vector<std::string>& sets);
// Same, reading `path` (NotFound if unreadable).
Result<LoadedConfig> LoadTrainConfig(const std::string& path, const std::vector<std::string>& sets);

}  // namespace rectrain::config
