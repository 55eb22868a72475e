#include "rectrain/train/trainer.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <system_error>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/generator.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/optim/lr_schedule.h"
#include "rectrain/dist/launch.h"
#include "rectrain/train/internal/epoch_resume.h"
#include "rectrain/train/internal/remote_checkpoints.h"
#include "rectrain/train/internal/evaluator.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/internal/run_log.h"
#include "rectrain/train/internal/step_runner.h"

namespace rectrain::train {
namespace fs = std::filesystem;
using checkpoint::CheckpointMeta;
using checkpoint::ListCheckpoints;
using checkpoint::PruneCheckpoints;
using checkpoint::ReadCheckpoint;
using checkpoint::ReadCheckpointMeta;
using checkpoint::WriteCheckpoint;
using internal::Fixed;
using internal::FormatCount;
using internal::FormatDuration;

const char* RunOutcomeName(RunOutcome outcome) {
  switch (outcome) {
    case RunOutcome::kCompleted: return "completed";
    case RunOutcome::kEarlyStopped: return "early_stopped";
    case RunOutcome::kInterrupted: return "interrupted";
    case RunOutcome::kFailed: return "failed";
  }
  return "?";
}

namespace {

template <typename T>
Result<T> WithContext(Result<T> r, const std::string& context) {
  if (r.ok()) return r;
  return r.status().WithContext(context);
}

// A train.log line saying which sample cache a split reads (data/cache.h), when data.cache is on.
std::string CacheLine(const std::string& split, const data::DataConfig& d) {
  if (std::all_of(d.files.begin(), d.files.end(),
                  [](const std::string& f) { return f.size() >= 4 && f.compare(f.size() - 4, 4, ".rtc") == 0; })) {
    return split + ": reading sample cache files (*.rtc input; docs/data.md \"Sample cache\")";
  }
  auto found = data::FindCache(d);
  if (found.ok() && found->has_value()) {
    return split + ": reading the sample cache " + (*found)->path + " (" + std::to_string((*found)->rows) + " rows)";
  }
  return split + ": no sample cache matches (data.cache: " + d.cache + "); parsing the files" +
         (d.cache == "build" ? " (the cache is written on the first pass)"
                             : " (`rectrain data cache CONFIG` builds one)");
}

// Hard-links (or copies) every file of checkpoint `src` into a fresh `dst` atomically: the
// final model is the last checkpoint, without writing large tables twice.
Status PublishModelDir(const std::string& src, const std::string& dst) {
  const std::string tmp = dst + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), src, ec);
    const fs::path target = fs::path(tmp) / rel;
    if (it->is_directory()) {
      fs::create_directories(target, ec);
    } else {
      fs::create_directories(target.parent_path(), ec);
      fs::create_hard_link(it->path(), target, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
      }
    }
    if (ec) return ErrnoToStatus(ec.value(), "cannot publish the model from " + src + " to " + tmp);
  }
  if (ec) return ErrnoToStatus(ec.value(), "cannot read checkpoint " + src);
  fs::remove_all(dst, ec);
  fs::rename(tmp, dst, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot rename " + tmp + " to " + dst);
  return OkStatus();
}

// Rows per epoch, estimated from the files' total size and the newline density of the first
// MiB of the first file (for the progress ETA only). 0 when unknown.
int64_t EstimateRows(const std::vector<std::string>& patterns) {
  auto files = io::ExpandPathsWithSizes(patterns);
  if (!files.ok() || files->empty()) return 0;
  int64_t total = 0;
  for (const auto& f : *files) total += f.size;
  auto first = io::RandomAccessFile::Open(files->front().path);
  if (!first.ok()) return 0;
  std::string sample(static_cast<size_t>(std::min<int64_t>(1 << 20, (*first)->size())), '\0');
  auto got = (*first)->ReadAt(0, static_cast<int64_t>(sample.size()), sample.data());
  if (!got.ok()) return 0;
  sample.resize(static_cast<size_t>(*got));
  const int64_t lines = std::count(sample.begin(), sample.end(), '\n');
  if (lines == 0) return 0;
  return static_cast<int64_t>(static_cast<double>(total) * static_cast<double>(lines) /
                              static_cast<double>(sample.size()));
}

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// A multi-task model's per-task metrics: {"income": {"auc": ..., "logloss": ..., "positives": ...}, ...}.
nlohmann::json TasksJson(const EvalMetrics& m) {
  nlohmann::json t = nlohmann::json::object();
  for (const EvalMetrics::Task& task : m.tasks) {
    t[task.name] = {{"auc", Num(task.auc)}, {"logloss", Num(task.logloss)}, {"positives", task.positives}};
  }
  return t;
}

class TrainLoop {
 public:
  TrainLoop(const config::LoadedConfig& config, const TrainerOptions& options, dist::Communicator* comm)
      : lc_(config), c_(config.config), opt_(options) {
    job_.comm = comm;
    job_.split = c_.ResolvedDataSplit() == config::DataSplit::kBatches ? config::DataSplit::kBatches
                                                                       : config::DataSplit::kShards;
    if (c_.dist.mode == config::DistMode::kAsync && comm->distributed()) job_.servers = c_.dist.servers;
  }

  Result<TrainSummary> Run();

 private:
  // Setup in two halves: what each rank does on its own (may fail on one rank only), then, once
  // every rank is known to be ready, what they do together.
  Status SetupLocal();
  Status SetupTogether();
  Status Loop();
  // dist.mode async: a server serves until every worker is done; then every rank gathers the
  // servers' dense parameters, and the job's totals.
  Status ServeAsServer();
  Status ConcludeAsync();
  Status Step(const internal::LockstepPass::Step& step);
  Status OpenTrainPass();
  Status RunEval(const char* why);
  bool EarlyStopCheck();
  Status Checkpoint();
  void LogProgress(bool force_line);
  Status Finish();
  void WriteSummary();
  void AppendEvalRecord(const EvalMetrics& m);
  // Job-wide figures (every rank calls it at the same step): table counters, rejected rows and
  // each rank's figures, kept for the reports and the summary.
  Status RefreshJobFigures();
  void LogRanks();
  bool lead() const { return job_.lead(); }
  // An error every rank already knows about (from an agreement whose collectives worked);
  // any other error of a job takes this rank out of step (Communicator::Abandon).
  Status Agreed(Status s) {
    if (!s.ok() && job_.comm->status().ok()) agreed_error_ = true;
    return s;
  }
  // Names the phase in a collective's errors ("rank 0 of 2 in allreduce at <what>: ...").
  void Phase(const std::string& what) {
    if (job_.distributed()) job_.comm->set_context(what);
  }

  const config::LoadedConfig& lc_;
  const config::TrainConfig& c_;
  const TrainerOptions& opt_;
  internal::Job job_;
  Stopwatch wall_;
  ComputeContext compute_;
  std::unique_ptr<internal::RunLogger> log_;
  std::shared_ptr<data::MemoryBudget> memory_budget_;  // data.memory_cache_bytes, train + valid
  std::unique_ptr<data::EpochSource> train_source_;
  std::unique_ptr<internal::LockstepPass> pass_;
  std::vector<std::string> sparse_names_;
  std::vector<std::string> dense_names_;
  internal::ModelBundle bundle_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::Optimizer> server_optimizer_;  // an async server's, over its dense chunk
  ps::ServerStats server_stats_;
  std::unique_ptr<internal::StepRunner> runner_;
  std::unique_ptr<internal::EvalSplit> valid_;
  optim::LrScheduleConfig sparse_schedule_;
  CheckpointMeta meta_;
  std::optional<std::string> resume_from_;
  TrainSummary summary_;
  std::string checkpoints_dir_;
  int64_t last_checkpoint_step_ = -1;
  int64_t rows_per_epoch_ = 0;  // estimated until an epoch completes
  bool agreed_error_ = false;
  int classes_ = 1;           // model outputs: 1 (CTR) or the classes of a classifier
  int64_t global_batch_ = 0;  // rows per step over the job (data.batch_size, or × ranks)
  double lr_factor_ = 1.0;    // dist.lr_scaling
  // This rank's rows of the current epoch (dist.data_split shards resumes from it).
  int64_t local_rows_in_epoch_ = 0;
  int64_t local_skip_ = 0;  // rows of the epoch this rank's first pass skips (resume)
  internal::EpochStart start_;          // how the first pass is read (a resume may replay an old plan)
  internal::StreamOpener open_stream_;  // a stream of data.train under another plan (a replay)
  // At the start of the current epoch (this session): for the per-epoch log line.
  double epoch_start_wait_ = 0;
  double epoch_start_seconds_ = 0;
  int64_t epoch_start_rows_ = 0;

  // Recent training predictions for the "AUC so far" shown in logs (rank 0's rows).
  std::vector<float> window_probs_, window_labels_;
  size_t window_pos_ = 0;
  bool window_full_ = false;
  double loss_sum_ = 0;  // since the last log line
  int64_t loss_count_ = 0;
  double last_loss_ = kNaN;
  float last_lr_ = 0;
  double session_seconds_ = 0;  // training loop time, excluding eval/checkpoints
  int64_t session_rows_ = 0;    // global rows
  int64_t local_session_rows_ = 0;
  int64_t session_steps_ = 0;
  int64_t rows_at_log_ = 0;
  double seconds_at_log_ = 0;
  Stopwatch since_bar_;
  double base_train_seconds_ = 0;  // from earlier sessions (resume)
  int64_t rejected_before_ = 0;     // this rank's rejected rows of earlier sessions and finished epochs
  int64_t job_rejected_ = 0;        // the job's, as of the last RefreshJobFigures
  std::vector<TableSummary> job_tables_;
  RunOutcome stop_status_ = RunOutcome::kCompleted;

  // Observer reports (options.observer, rank 0): accumulators since the previous report.
  double TrainAuc();
  void Report(bool log_line);
  double report_interval_s_ = 0;
  Stopwatch since_report_;
  double report_loss_sum_ = 0;
  int64_t report_loss_count_ = 0;
  int64_t rows_at_report_ = 0;
  double seconds_at_report_ = 0;
  int64_t step_at_report_ = -1;
};

Status TrainLoop::SetupLocal() {
  std::error_code ec;
  fs::create_directories(opt_.run_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot create run directory " + opt_.run_dir);
  checkpoints_dir_ = opt_.run_dir + "/checkpoints";
  const bool bar = opt_.progress == 1 || (opt_.progress == -1 && isatty(STDERR_FILENO));
  log_ = std::make_unique<internal::RunLogger>(lead() ? opt_.run_dir + "/train.log" : "", opt_.echo, bar);
  job_.comm->set_timeout(std::chrono::milliseconds(static_cast<int64_t>(c_.dist.timeout_s * 1000)));
  if (job_.async() && job_.workers() < 1) {
    return FailedPreconditionError("dist.mode async with dist.servers " + std::to_string(job_.servers) + " needs more than " +
                                   std::to_string(job_.servers) + " ranks (the others are workers); got " +
                                   std::to_string(job_.world()));
  }

  compute_.num_threads = c_.threads;
  if (opt_.size_compute_pool) opt_.size_compute_pool(c_.threads);  // oneDNN's GEMMs follow the pool

  if (opt_.resume && !c_.train.checkpoint_dir.empty()) {
    // The store may hold a newer checkpoint than this machine (another node ran the job, or
    // the local copy is gone): the lead fetches it into the run directory the ranks share.
    Status fetched = lead() ? internal::FetchNewerCheckpoint(c_.train.checkpoint_dir, checkpoints_dir_) : OkStatus();
    RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, fetched)));
  }
  if (opt_.resume) {
    auto all = ListCheckpoints(checkpoints_dir_);
    if (all.empty()) {
      return NotFoundError("no checkpoint to resume in " + checkpoints_dir_ + " (start a new run without --resume)");
    }
    resume_from_ = all.back().second;
    RECTRAIN_ASSIGN_OR_RETURN(meta_, ReadCheckpointMeta(*resume_from_));
  }
  if (lead()) {
    RECTRAIN_RETURN_IF_ERROR(io::WriteFileAtomically(opt_.run_dir + "/config.yaml", lc_.resolved_yaml));
  }
  log_->Log(std::string(opt_.resume ? "resuming" : "starting") + " run in " + opt_.run_dir + ": model " +
            c_.model.type + ", " + std::to_string(c_.threads) + " threads, batch " +
            std::to_string(c_.read.batch_size) + (c_.deterministic ? ", deterministic" : ""));
  if (job_.async()) {
    log_->Log("job: " + std::to_string(job_.world()) + " ranks over " + job_.comm->transport_name() +
              ", dist.mode async: " + std::to_string(job_.workers()) + " workers, " + std::to_string(job_.servers) +
              " parameter servers (ranks " + std::to_string(job_.workers()) + ".." + std::to_string(job_.world() - 1) +
              "), dist.staleness " + std::to_string(c_.dist.staleness) + "; logs show worker 0's progress");
  } else if (job_.distributed()) {
    log_->Log("job: " + std::to_string(job_.world()) + " ranks over " + job_.comm->transport_name() +
              ", dist.data_split " + config::DataSplitName(job_.split) + " (data.batch_size " +
              std::to_string(c_.read.batch_size) + " is the global batch), dist.timeout_s " +
              Fixed(c_.dist.timeout_s, 0));
  }
  if (c_.model_precision_auto) {
    log_->Log(c_.model.precision == nn::GemmPrecision::kBf16
                  ? "model.precision: auto -> bf16 (this CPU has AVX512_BF16)"
                  : "model.precision: auto -> fp32 (this CPU has no AVX512_BF16)");
  }

  // data.batch_size is the global batch, or with dist.batch per_rank each rank's (DDP style).
  global_batch_ = c_.read.batch_size * (c_.dist.batch_per_rank ? job_.world() : 1);
  if (c_.dist.lr_scaling == config::LrScaling::kLinear) lr_factor_ = job_.world();
  if (c_.dist.lr_scaling == config::LrScaling::kSqrt) lr_factor_ = std::sqrt(static_cast<double>(job_.world()));
  if (c_.dist.batch_per_rank || lr_factor_ != 1.0) {
    log_->Log("dist: global batch " + std::to_string(global_batch_) + " (" + std::to_string(job_.world()) +
              " ranks), learning rates x " + Fixed(lr_factor_, 3) + " (dist.lr_scaling)");
  }
  // The first epoch's reader gives the field names the model needs.
  data::DataConfig train_data = c_.data;
  train_data.files = c_.train_files;
  data::ReadOptions ro = c_.read;
  ro.batch_size = global_batch_;
  if (job_.async() && !job_.is_server()) {
    // Each worker reads its units of every pass; the workers' batches add up to the global one.
    ro.rank = job_.rank();
    ro.world = job_.workers();
    ro.batch_size = std::max<int64_t>(1, data::SliceOfBatch(global_batch_, job_.rank(), job_.workers()).size());
  } else if (job_.distributed() && job_.split == config::DataSplit::kShards && !job_.async()) {
    // Each rank reads its units of every pass, in batches of its share of the global batch.
    ro.rank = job_.rank();
    ro.world = job_.world();
    ro.batch_size = std::max<int64_t>(1, data::SliceOfBatch(global_batch_, job_.rank(), job_.world()).size());
  }
  memory_budget_ = std::make_shared<data::MemoryBudget>(
      c_.epoch.memory_cache_bytes > 0 ? c_.epoch.memory_cache_bytes : data::MemoryBudget::DefaultBytes());
  auto log_line = [this](const std::string& line) { log_->Log(line); };
  data::EpochOptions train_epoch = c_.epoch;
  train_epoch.epochs = c_.train.epochs;  // auto: the last pass is not copied into memory
  if (c_.deterministic) {
    // `auto` decides from the machine's state (free memory for the epoch cache, whether a sample
    // cache happens to exist), and each choice gives a different shuffle order after epoch 0.
    // deterministic: true pins them so the run depends only on its config: data.train is
    // re-read from its files every epoch unless the config asks for memory (on, or global
    // shuffle) or a sample cache (build) explicitly. Validation is read in file order, where
    // every source gives the same batches, so it keeps `auto`.
    if (train_epoch.memory_cache == data::MemoryCacheMode::kAuto && train_epoch.shuffle != data::ShuffleMode::kGlobal) {
      train_epoch.memory_cache = data::MemoryCacheMode::kOff;
      log_->Log("deterministic: data.memory_cache auto -> off for data.train");
    }
    if (train_data.cache == "auto") {
      train_data.cache = "off";
      log_->Log("deterministic: data.cache auto -> off for data.train");
    }
  }
  RECTRAIN_ASSIGN_OR_RETURN(train_source_, WithContext(data::EpochSource::Create(train_data, ro, train_epoch,
                                                                                 memory_budget_, "data.train", log_line),
                                                       "data.train"));
  // Where this rank's first pass starts (a resume; internal/epoch_resume.h). An asynchronous
  // worker reads its own units; with another number of workers it re-plans the rest of the epoch.
  if (job_.async()) {
    local_skip_ = meta_.rows_in_epoch;
    if (opt_.resume && meta_.world == job_.world() && static_cast<int>(meta_.rank_rows_in_epoch.size()) == job_.world()) {
      local_skip_ = meta_.rank_rows_in_epoch[static_cast<size_t>(job_.rank())];
    } else if (opt_.resume && meta_.rows_in_epoch > 0) {
      local_skip_ = meta_.rows_in_epoch / job_.workers();
      log_->Log("note: the checkpoint was written by " + std::to_string(meta_.world) + " rank(s) mid-epoch; the rest of "
                "epoch " + std::to_string(meta_.epoch) + " is re-planned for " + std::to_string(job_.workers()) +
                " asynchronous workers and each skips " + std::to_string(local_skip_) + " rows of its new share "
                "(some rows may be seen twice or not at all in this epoch)");
    }
  } else {
    const bool shards = job_.distributed() && job_.split == config::DataSplit::kShards;
    RECTRAIN_ASSIGN_OR_RETURN(start_, internal::PlanEpochStart(meta_, shards ? job_.world() : 1, shards ? job_.rank() : 0));
    if (!start_.note.empty()) log_->Log(start_.note);
    local_skip_ = start_.skip;
    // A replay reads the old plan's streams in global batches, with the epoch options of data.train.
    open_stream_ = [this, train_data, train_epoch, log_line](int rank, int world, int64_t epoch,
                                                            int64_t skip) -> Result<internal::OpenedStream> {
      data::ReadOptions o = c_.read;
      o.batch_size = global_batch_;
      o.rank = rank;
      o.world = world;
      internal::OpenedStream out;
      RECTRAIN_ASSIGN_OR_RETURN(out.source, WithContext(data::EpochSource::Create(train_data, o, train_epoch,
                                                                                  memory_budget_, "data.train", log_line),
                                                        "data.train"));
      RECTRAIN_ASSIGN_OR_RETURN(out.reader, WithContext(out.source->Open(epoch, skip), "data.train"));
      return out;
    };
  }
  local_rows_in_epoch_ = local_skip_;
  if (meta_.epoch < c_.train.epochs && !job_.is_server()) {
    RECTRAIN_RETURN_IF_ERROR(OpenTrainPass());
    sparse_names_ = pass_->reader().sparse_names();
    dense_names_ = pass_->reader().dense_names();
  } else {  // a finished run, or a server: the fields only
    data::ReadOptions probe = c_.read;
    RECTRAIN_ASSIGN_OR_RETURN(auto r, WithContext(data::OpenBatchReader(train_data, probe), "data.train"));
    sparse_names_ = r->sparse_names();
    dense_names_ = r->dense_names();
  }
  rows_per_epoch_ = EstimateRows(c_.train_files);
  if (train_data.cache != "off") log_->Log(CacheLine("data.train", train_data));

  RECTRAIN_ASSIGN_OR_RETURN(bundle_, internal::BuildModel(c_, sparse_names_, dense_names_, job_));
  RECTRAIN_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(c_.optimizer));
  RECTRAIN_RETURN_IF_ERROR(optimizer_->Init(bundle_.params)) << "while initialising the optimizer";
  runner_ = std::make_unique<internal::StepRunner>(&bundle_, optimizer_.get(), job_, c_.train.accumulate_steps);
  // A multi-task model reports its first task (the label) where a CTR model reports its one.
  classes_ = bundle_.model->num_tasks() > 1 ? 1 : bundle_.model->num_outputs();
  if (c_.train.accumulate_steps > 1) {
    log_->Log("train.accumulate_steps " + std::to_string(c_.train.accumulate_steps) + ": every step's batch runs in " +
              std::to_string(c_.train.accumulate_steps) + " slices whose gradients are summed");
  }
  sparse_schedule_ = c_.SparseLrSchedule();

  if (resume_from_) {
    RECTRAIN_ASSIGN_OR_RETURN(meta_, WithContext(ReadCheckpoint(*resume_from_, bundle_.params, optimizer_.get(),
                                                                bundle_.tables, job_.comm,
                                                                [owners = bundle_.owners, rank = job_.rank()](uint64_t id) {
                                                                  return owners.Of(id) == rank;
                                                                }),
                                                 "while resuming from " + *resume_from_));
    if (meta_.model_type != c_.model.type) {
      return InvalidArgumentError("checkpoint " + *resume_from_ + " holds a " + meta_.model_type +
                                  " model but model.type is " + c_.model.type);
    }
    if (meta_.config_hash != lc_.hash) {
      log_->Log("note: the configuration differs from the checkpoint's (resuming with changed settings)");
    }
    last_checkpoint_step_ = meta_.step;
    summary_.last_checkpoint = *resume_from_;
    base_train_seconds_ = meta_.train_seconds;
    rejected_before_ = lead() ? meta_.rows_rejected_total : 0;  // counted once for the job
    log_->Log("resumed from " + *resume_from_ + " at step " + std::to_string(meta_.step) + ", epoch " +
              std::to_string(meta_.epoch) + ", row " + std::to_string(meta_.rows_in_epoch) +
              (meta_.world != job_.world() ? " (written by " + std::to_string(meta_.world) + " rank(s), now " +
                                                 std::to_string(job_.world()) + ")"
                                           : std::string()));
  }
  meta_.config_hash = lc_.hash;
  meta_.model_type = c_.model.type;
  meta_.tables.clear();
  for (const auto* t : bundle_.tables) meta_.tables.push_back(t->config().name);

  if (!c_.valid_files.empty()) {
    data::DataConfig vd = c_.data;
    vd.files = c_.valid_files;
    vd.max_bad_rows = c_.data.max_bad_rows;
    vd.negative_downsampling = 1.0;  // evaluate on every row; logits are calibrated instead
    data::ReadOptions vo = c_.read;
    vo.shuffle = false;
    vo.epoch = 0;
    vo.skip_rows = 0;
    if (c_.eval.batch_size > 0) vo.batch_size = c_.eval.batch_size;
    data::EpochOptions veo;
    veo.shuffle = data::ShuffleMode::kOff;  // fixed order
    veo.memory_cache = c_.epoch.memory_cache;
    RECTRAIN_ASSIGN_OR_RETURN(auto vsource, WithContext(data::EpochSource::Create(std::move(vd), vo, veo, memory_budget_,
                                                                                  "data.valid", log_line),
                                                        "data.valid"));
    if (c_.data.cache != "off") {
      data::DataConfig vc = c_.data;
      vc.files = c_.valid_files;
      vc.negative_downsampling = 1.0;
      log_->Log(CacheLine("data.valid", vc));
    }
    // Evaluation steps every rank together, also in an asynchronous job (after training).
    internal::Job eval_job = job_;
    eval_job.servers = 0;
    valid_ = std::make_unique<internal::EvalSplit>(std::move(vsource), eval_job);
  }
  const size_t window = 1 << 17;
  window_probs_.assign(window, 0.0f);
  window_labels_.assign(window, 0.0f);
  return OkStatus();
}

Status TrainLoop::SetupTogether() {
  if (!job_.distributed()) return OkStatus();
  Phase("the job's setup");
  // One config and one binary on every rank: the same config hash and build stamp.
  std::vector<uint64_t> mine = {lc_.hash, HashBytes(dist::BuildId(), 0)}, all;
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllGatherV(std::span<const uint64_t>(mine), &all, nullptr));
  Status same;
  for (int r = 1; r < job_.world() && same.ok(); ++r) {
    if (all[static_cast<size_t>(2 * r)] != all[0]) {
      same = FailedPreconditionError("rank " + std::to_string(r) + " was started with another configuration than rank 0 "
                                     "(config hash differs): every rank must get the same config file and --set flags");
    } else if (all[static_cast<size_t>(2 * r + 1)] != all[1]) {
      same = FailedPreconditionError("rank " + std::to_string(r) + " runs another rectrain build than rank 0: install one "
                                     "binary on every host (rectrain doctor compares them)");
    }
  }
  RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, same)));
  // The dense parameters start equal everywhere (rank 0's): a fresh run's initialisation, or
  // what every rank read from the checkpoint.
  return internal::BroadcastDenseParams(bundle_, job_);
}

Status TrainLoop::OpenTrainPass() {
  std::unique_ptr<data::BatchReader> reader;
  if (start_.replay) {
    // The rest of an epoch planned for another number of ranks (internal/epoch_resume.h).
    RECTRAIN_ASSIGN_OR_RETURN(reader, internal::OpenReplay(start_, meta_.epoch, open_stream_));
    if (job_.distributed()) reader = data::SliceBatches(std::move(reader), job_.rank(), job_.world());
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(reader, WithContext(train_source_->Open(meta_.epoch, local_skip_), "data.train"));
    if (job_.distributed() && job_.split == config::DataSplit::kBatches) {
      reader = data::SliceBatches(std::move(reader), job_.rank(), job_.world());
    }
  }
  pass_ = std::make_unique<internal::LockstepPass>(std::move(reader), job_);
  local_skip_ = 0;  // later passes start at their beginning
  return OkStatus();
}

Status TrainLoop::Step(const internal::LockstepPass::Step& step) {
  const int64_t s = meta_.step;
  internal::StepRunner::Rates rates{
      .seed = DeriveSeed(c_.seed, static_cast<uint64_t>(s)),
      .dense_lr = static_cast<float>(optim::ScheduledLr(c_.lr_schedule, s) * lr_factor_),
      .sparse_lr = static_cast<float>(optim::ScheduledLr(sparse_schedule_, s) * lr_factor_)};
  last_lr_ = rates.dense_lr;
  RECTRAIN_ASSIGN_OR_RETURN(const double loss, runner_->Run(step, s, rates, compute_, &summary_.breakdown));
  // The loss is the global batch's on every rank, so every rank stops here together.
  if (!std::isfinite(loss)) {
    // The observer sees the non-finite loss first (rectrain_train_loss: NaN/Inf for the alert
    // rules, deploy/prometheus/alerts.yml); the step itself does not count.
    report_loss_sum_ += loss;
    ++report_loss_count_;
    Report(/*log_line=*/false);
    return Agreed(Status(StatusCode::kAborted,
                         "training diverged: the loss is " + Fixed(loss, 4) + " at step " + std::to_string(s + 1) +
                             "; lower optimizer.lr (" + Fixed(last_lr_, 6) +
                             ") or embedding.optimizer.lr, or add optimizer.warmup_steps"));
  }
  loss_sum_ += loss;
  ++loss_count_;
  report_loss_sum_ += loss;
  ++report_loss_count_;
  last_loss_ = loss;
  // The recent predictions: probabilities (AUC so far), or for a classifier 1/0 for a correct
  // top class (accuracy so far).
  const std::span<const float> probs = runner_->probs();
  const size_t rows = static_cast<size_t>(step.batch->size);
  for (size_t i = 0; i < rows; ++i) {
    if (classes_ > 1) {
      const float* p = probs.data() + i * static_cast<size_t>(classes_);
      window_probs_[window_pos_] =
          static_cast<float>(std::max_element(p, p + classes_) - p) == step.batch->labels[i] ? 1.0f : 0.0f;
    } else {
      window_probs_[window_pos_] = probs[i];
    }
    window_labels_[window_pos_] = step.batch->labels[i];
    if (++window_pos_ == window_probs_.size()) {
      window_pos_ = 0;
      window_full_ = true;
    }
  }
  ++meta_.step;
  meta_.rows_in_epoch += step.global_rows;
  meta_.rows_read_total += step.global_rows;
  local_rows_in_epoch_ += step.batch->size;
  session_rows_ += step.global_rows;
  local_session_rows_ += step.batch->size;
  ++session_steps_;
  return OkStatus();
}

double TrainLoop::TrainAuc() {
  const size_t wn = window_full_ ? window_probs_.size() : window_pos_;
  if (classes_ > 1) {
    if (wn == 0) return kNaN;
    double correct = 0;
    for (size_t i = 0; i < wn; ++i) correct += window_probs_[i];
    return correct / static_cast<double>(wn);
  }
  return ExactAuc(std::span<const float>(window_probs_.data(), wn), std::span<const float>(window_labels_.data(), wn),
                  compute_);
}

Status TrainLoop::RefreshJobFigures() {
  const int64_t rejected = rejected_before_ + (pass_ ? pass_->reader().Stats().rows_rejected : 0);
  if (!job_.distributed()) {
    job_rejected_ = rejected;
    job_tables_ = internal::LocalTableSummaries(bundle_);
    return OkStatus();
  }
  RECTRAIN_ASSIGN_OR_RETURN(job_tables_, internal::SummarizeTables(bundle_, job_));
  std::vector<int64_t> r = {rejected};
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(r), dist::ReduceOp::kSum));
  job_rejected_ = r[0];
  // Every rank's figures, in rank order (fixed-size records of doubles).
  constexpr int kFields = 16;
  const ps::StoreStats& st = bundle_.store->stats();
  const PhaseSeconds& b = summary_.breakdown;
  int64_t owned = 0;
  for (const auto& t : internal::LocalTableSummaries(bundle_)) owned += t.rows;
  const std::vector<double> mine = {static_cast<double>(job_.rank()), static_cast<double>(local_session_rows_),
                                    static_cast<double>(owned), static_cast<double>(st.ids_served),
                                    static_cast<double>(job_.comm->stats().bytes_sent()),
                                    static_cast<double>(job_.comm->stats().bytes_received()), b.data_wait, b.lookup,
                                    b.exchange, b.forward, b.backward, b.allreduce, b.sparse_update, b.dense_update,
                                    // async: no minimum (the exchanges with the servers are not a collective's)
                                    job_.async() ? 0.0 : static_cast<double>(st.min_bytes_sent + runner_->allreduce_min_bytes()),
                                    static_cast<double>(job_.comm->stats().of(dist::CommOp::kAllReduce).bytes_sent)};
  std::vector<double> all;
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllGatherV(std::span<const double>(mine), &all, nullptr));
  summary_.ranks.clear();
  for (int k = 0; k < job_.world(); ++k) {
    const double* x = all.data() + kFields * k;
    RankFigures f;
    f.rank = static_cast<int>(x[0]);
    f.rows = static_cast<int64_t>(x[1]);
    f.ids_owned = static_cast<int64_t>(x[2]);
    f.ids_served = static_cast<int64_t>(x[3]);
    f.bytes_sent = static_cast<int64_t>(x[4]);
    f.bytes_received = static_cast<int64_t>(x[5]);
    f.breakdown = {x[6], x[7], x[9], x[10], x[12], x[13], x[8], x[11]};
    f.min_bytes_sent = static_cast<int64_t>(x[14]);
    f.allreduce_bytes_sent = static_cast<int64_t>(x[15]);
    summary_.ranks.push_back(f);
  }
  return OkStatus();
}

void TrainLoop::LogRanks() {
  if (!job_.distributed()) return;
  for (const RankFigures& f : summary_.ranks) {
    const PhaseSeconds& b = f.breakdown;
    log_->Log("rank " + std::to_string(f.rank) + ": " + FormatCount(static_cast<double>(f.rows)) + " rows, " +
              FormatCount(static_cast<double>(f.ids_owned)) + " ids owned, " +
              FormatCount(static_cast<double>(f.bytes_sent)) + "B sent" +
              (f.min_bytes_sent > 0 ? " (" + Fixed(static_cast<double>(f.bytes_sent) / static_cast<double>(f.min_bytes_sent), 3) +
                                          "x the minimum)"
                                    : std::string()) +
              " | wait " + Fixed(b.data_wait, 1) + "s lookup " +
              Fixed(b.lookup, 1) + "s exchange " + Fixed(b.exchange, 1) + "s forward " + Fixed(b.forward, 1) +
              "s backward " + Fixed(b.backward, 1) + "s allreduce " + Fixed(b.allreduce, 1) + "s update " +
              Fixed(b.sparse_update + b.dense_update, 1) + "s");
  }
}

// Hands a ProgressInfo to the observer (train/observer.h); rank 0 only.
void TrainLoop::Report(bool log_line) {
  if (opt_.observer == nullptr || !lead()) return;
  ProgressInfo p;
  p.step = meta_.step;
  p.epoch = meta_.epoch;
  p.rows_read = meta_.rows_read_total;
  p.rows_rejected = job_.distributed() ? job_rejected_ : rejected_before_ + (pass_ ? pass_->reader().Stats().rows_rejected : 0);
  p.loss = report_loss_count_ ? report_loss_sum_ / static_cast<double>(report_loss_count_) : last_loss_;
  p.train_auc = TrainAuc();
  const double window_s = session_seconds_ - seconds_at_report_;
  p.samples_per_sec = window_s > 0 ? static_cast<double>(session_rows_ - rows_at_report_) / window_s : 0;
  p.learning_rate = last_lr_;
  p.data_wait_seconds = summary_.breakdown.data_wait;
  p.queue_depth = pass_ ? pass_->reader().Stats().queue_depth : 0;
  p.train_seconds = session_seconds_;
  p.tables = job_.distributed() ? job_tables_ : internal::LocalTableSummaries(bundle_);
  p.ranks = summary_.ranks;
  p.log_line = log_line;
  opt_.observer->OnProgress(p);
  report_loss_sum_ = 0;
  report_loss_count_ = 0;
  rows_at_report_ = session_rows_;
  seconds_at_report_ = session_seconds_;
  step_at_report_ = meta_.step;
  since_report_.Reset();
}

void TrainLoop::LogProgress(bool force_line) {
  if (!lead()) return;
  const double train_auc = TrainAuc();
  const double elapsed = session_seconds_;
  const double rate = elapsed > 0 ? static_cast<double>(session_rows_) / elapsed : 0;
  // Progress fraction from rows (epochs) and steps (max_steps), whichever is further.
  double frac = 0;
  if (rows_per_epoch_ > 0) {
    const double in_epoch =
        std::min(0.999, static_cast<double>(meta_.rows_in_epoch) / static_cast<double>(rows_per_epoch_));
    frac = (static_cast<double>(meta_.epoch) + in_epoch) / static_cast<double>(c_.train.epochs);
  }
  if (c_.train.max_steps > 0) {
    frac = std::max(frac, static_cast<double>(meta_.step) / static_cast<double>(c_.train.max_steps));
  }
  frac = std::clamp(frac, 0.0, 1.0);
  const double eta = frac > 0 && session_steps_ > 0 ? elapsed * (1 - frac) / frac : NAN;
  const double mean_loss = loss_count_ ? loss_sum_ / static_cast<double>(loss_count_) : last_loss_;
  if (force_line || !log_->bar()) {
    const double window_s = session_seconds_ - seconds_at_log_;
    const double window_rate = window_s > 0 ? static_cast<double>(session_rows_ - rows_at_log_) / window_s : rate;
    log_->Log("step " + std::to_string(meta_.step) + " | epoch " + std::to_string(meta_.epoch) + " | " +
              FormatCount(static_cast<double>(meta_.rows_read_total)) + " rows | loss " + Fixed(mean_loss, 4) +
              (classes_ > 1 ? " | train acc " : " | train auc ") + Fixed(train_auc, 4) + " | lr " + Fixed(last_lr_, 6) + " | " +
              FormatCount(window_rate) + " samples/s | ETA " + FormatDuration(eta));
    loss_sum_ = 0;
    loss_count_ = 0;
    rows_at_log_ = session_rows_;
    seconds_at_log_ = session_seconds_;
  } else {
    const int width = 20;
    const int filled = static_cast<int>(frac * width);
    std::string bar = "[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] ";
    log_->Bar(bar + std::to_string(static_cast<int>(frac * 100)) + "% step " + std::to_string(meta_.step) + " | " +
              FormatCount(rate) + " samples/s | loss " + Fixed(last_loss_, 4) + (classes_ > 1 ? " | acc " : " | auc ") +
              Fixed(train_auc, 4) +
              " | ETA " + FormatDuration(eta));
  }
}

Status TrainLoop::RunEval(const char* why) {
  if (!valid_) return OkStatus();
  Phase("the evaluation at step " + std::to_string(meta_.step));
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(valid_->Evaluate(bundle_, compute_, c_.data.negative_downsampling, c_.eval.gauc,
                                            &summary_.valid))
      << "while evaluating data.valid";
  summary_.has_valid = true;
  meta_.last_eval_step = meta_.step;
  const EvalMetrics& m = summary_.valid;
  std::string line = std::string("eval (") + why + ") @ step " + std::to_string(meta_.step) + ": ";
  if (classes_ > 1) {
    line += "accuracy " + Fixed(m.accuracy, 5) + " top5 " + Fixed(m.top5_accuracy, 5) + " logloss " + Fixed(m.logloss, 5);
  } else {
    line += "auc " + Fixed(m.auc, 5) + " logloss " + Fixed(m.logloss, 5);
    if (c_.eval.gauc) line += " gauc " + Fixed(m.gauc, 5);
    line += " calibration " + Fixed(m.calibration, 3) + " ne " + Fixed(m.ne, 4);
    for (const EvalMetrics::Task& t : m.tasks) line += " | task " + t.name + " auc " + Fixed(t.auc, 5) + " logloss " + Fixed(t.logloss, 5);
  }
  line += " (" + std::to_string(m.rows) + " rows, " + Fixed(sw.Seconds(), 1) + "s)";
  log_->Log(line);
  if (lead()) AppendEvalRecord(m);
  if (opt_.observer != nullptr && lead()) opt_.observer->OnEval(meta_.step, m);
  return OkStatus();
}

// RUN_DIR/evals.jsonl: one JSON line per evaluation (docs/formats/summary.md), appended and
// flushed at once, so a process watching the run (a tune study) sees every result as it lands.
void TrainLoop::AppendEvalRecord(const EvalMetrics& m) {
  nlohmann::json j = {{"step", meta_.step},
                            {"epoch", meta_.epoch},
                            {"time", static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                             std::chrono::system_clock::now().time_since_epoch())
                                                             .count()) /
                                         1000.0},
                            {"rows", m.rows},
                            {"auc", Num(m.auc)},
                            {"logloss", Num(m.logloss)},
                            {"gauc", Num(m.gauc)},
                            {"accuracy", Num(m.accuracy)},
                            {"top5_accuracy", Num(m.top5_accuracy)}};
  if (!m.tasks.empty()) j["tasks"] = TasksJson(m);
  std::ofstream out(opt_.run_dir + "/evals.jsonl", std::ios::app);
  out << j.dump() << '\n';
  out.flush();
}

// Updates the early-stopping state from the latest evaluation; true when training should stop.
// Every rank computes the same metrics, so every rank decides the same.
bool TrainLoop::EarlyStopCheck() {
  const auto& es = c_.train.early_stopping;
  const bool higher_better = es.metric != "logloss";
  const double v = es.metric == "auc" ? summary_.valid.auc : es.metric == "accuracy" ? summary_.valid.accuracy
                                                                                    : summary_.valid.logloss;
  const bool improved = std::isnan(meta_.best_metric) ||
                        (higher_better ? v > meta_.best_metric + es.min_delta : v < meta_.best_metric - es.min_delta);
  if (improved && !std::isnan(v)) {
    meta_.best_metric = v;
    meta_.best_step = meta_.step;
    meta_.evals_without_improvement = 0;
  } else {
    ++meta_.evals_without_improvement;
  }
  if (es.patience > 0 && meta_.evals_without_improvement >= es.patience) {
    log_->Log("early stopping: " + es.metric + " has not improved by more than " + Fixed(es.min_delta, 6) + " for " +
              std::to_string(es.patience) + " evaluations (best " + Fixed(meta_.best_metric, 5) + " at step " +
              std::to_string(meta_.best_step) + ")");
    return true;
  }
  return false;
}

Status TrainLoop::Checkpoint() {
  if (last_checkpoint_step_ == meta_.step && !summary_.last_checkpoint.empty()) return OkStatus();
  const std::string step = std::to_string(meta_.step);
  Phase("the checkpoint at step " + step + " (the job's figures)");
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
  meta_.train_seconds = base_train_seconds_ + session_seconds_;
  meta_.rows_rejected_total = job_rejected_;
  meta_.world = job_.world();
  meta_.data_split = job_.distributed() ? config::DataSplitName(job_.split) : "";
  // During a replay of an old plan (internal/epoch_resume.h) the checkpoint records that plan.
  meta_.plan_world = start_.replay ? start_.plan_world : 0;
  meta_.plan_rows = start_.replay ? start_.plan_rows : std::vector<int64_t>();
  meta_.rank_rows_in_epoch.clear();
  if (job_.distributed() && job_.split == config::DataSplit::kShards) {
    std::vector<int64_t> mine = {local_rows_in_epoch_};
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllGatherV(std::span<const int64_t>(mine), &meta_.rank_rows_in_epoch, nullptr));
  }
  const std::string dir = checkpoints_dir_ + "/step-" + step;
  Phase("the checkpoint at step " + step + " (writing and agreeing)");
  RECTRAIN_RETURN_IF_ERROR(
      Agreed(WriteCheckpoint(dir, meta_, bundle_.params, optimizer_.get(), bundle_.tables, job_.comm)));
  Status pruned = lead() ? PruneCheckpoints(checkpoints_dir_, c_.train.keep_checkpoints) : OkStatus();
  if (pruned.ok() && lead() && !c_.train.checkpoint_dir.empty()) {
    pruned = internal::UploadCheckpoint(dir, c_.train.checkpoint_dir, c_.train.keep_checkpoints);
    if (pruned.ok()) log_->Log("checkpoint uploaded to " + io::JoinPath(c_.train.checkpoint_dir, "step-" + std::to_string(meta_.step)));
  }
  RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, pruned)));
  last_checkpoint_step_ = meta_.step;
  summary_.last_checkpoint = dir;
  log_->Log("checkpoint " + dir + " (" + Fixed(sw.Seconds(), 2) + "s)");
  if (opt_.observer != nullptr && lead()) opt_.observer->OnCheckpoint(meta_.step, dir);
  return OkStatus();
}

Status TrainLoop::Loop() {
  const auto& tc = c_.train;
  auto stop_requested = [&]() {
    return opt_.stop_signal != nullptr && opt_.stop_signal->load(std::memory_order_relaxed) != 0;
  };
  bool done = tc.max_steps > 0 && meta_.step >= tc.max_steps;
  while (!done && meta_.epoch < tc.epochs) {
    if (!pass_) {
      RECTRAIN_RETURN_IF_ERROR(OpenTrainPass());
    }
    epoch_start_wait_ = summary_.breakdown.data_wait;
    epoch_start_seconds_ = session_seconds_;
    epoch_start_rows_ = session_rows_;
    bool epoch_ended = false;
    Stopwatch loop_clock;
    while (true) {
      double waited = 0;
      Phase("the start of step " + std::to_string(meta_.step + 1) + " (the per-step agreement)");
      // A stop before this session's first step: nothing trained, so nothing to save. A sync job
      // agrees on it in Next (below); an async worker stops alone, so it keeps stepping into the
      // job's checkpoint.
      const bool stop_first = session_steps_ == 0 && !job_.async();
      if (stop_first && !job_.lockstep() && stop_requested()) {
        stop_status_ = RunOutcome::kInterrupted;
        summary_.interrupted_by = opt_.stop_signal->load();
        break;
      }
      auto next = pass_->Next(stop_requested(), &waited);
      summary_.breakdown.data_wait += waited;
      if (!next.ok()) return Agreed(next.status());
      if (!next->has_value()) {
        epoch_ended = true;
        break;
      }
      const internal::LockstepPass::Step step = **next;
      if (stop_first && step.stop) {
        stop_status_ = RunOutcome::kInterrupted;
        summary_.interrupted_by = stop_requested() ? opt_.stop_signal->load() : SIGTERM;
        break;
      }
      RECTRAIN_RETURN_IF_ERROR(Step(step));
      session_seconds_ += loop_clock.Seconds();
      loop_clock.Reset();
      if (meta_.step % tc.log_every_steps == 0) {
        if (job_.lockstep()) {
          RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
        }
        LogProgress(/*force_line=*/true);
        Report(/*log_line=*/true);
      } else {
        if (log_->bar() && since_bar_.Seconds() > 1.0) {
          LogProgress(/*force_line=*/false);
          since_bar_.Reset();
        }
        if (report_interval_s_ > 0 && since_report_.Seconds() >= report_interval_s_) Report(/*log_line=*/false);
      }
      if (tc.eval_every_steps > 0 && meta_.step % tc.eval_every_steps == 0 && valid_) {
        RECTRAIN_RETURN_IF_ERROR(RunEval("every eval_every_steps"));
        if (EarlyStopCheck()) {
          stop_status_ = RunOutcome::kEarlyStopped;
          done = true;
        }
      }
      if (!done && tc.checkpoint_every_steps > 0 && meta_.step % tc.checkpoint_every_steps == 0) {
        RECTRAIN_RETURN_IF_ERROR(Checkpoint());
      }
      if (tc.max_steps > 0 && meta_.step >= tc.max_steps) {
        log_->Log("reached train.max_steps = " + std::to_string(tc.max_steps));
        done = true;
      }
      // A job agrees on a stop request at the start of a step (LockstepPass), so it stops one
      // step after a signal that arrives mid-step; a single process stops right away.
      if (!done && (step.stop || (!job_.lockstep() && stop_requested()))) {
        stop_status_ = RunOutcome::kInterrupted;
        summary_.interrupted_by = stop_requested() ? opt_.stop_signal->load() : SIGTERM;
        if (job_.distributed()) log_->Log("a rank was asked to stop (SIGINT/SIGTERM): the job checkpoints and stops");
        done = true;
      }
      loop_clock.Reset();
      if (done) break;
    }
    session_seconds_ += loop_clock.Seconds();
    if (!epoch_ended) break;
    // The epoch is complete.
    rejected_before_ += pass_->reader().Stats().rows_rejected;
    pass_.reset();
    const int64_t finished_epoch = meta_.epoch;
    if (meta_.rows_in_epoch > 0) rows_per_epoch_ = meta_.rows_in_epoch;
    ++meta_.epoch;
    meta_.rows_in_epoch = 0;
    start_ = internal::EpochStart();  // a replay ends with its epoch
    local_rows_in_epoch_ = 0;
    const double epoch_seconds = session_seconds_ - epoch_start_seconds_;
    log_->Log("epoch " + std::to_string(finished_epoch) + " done at step " + std::to_string(meta_.step) +
              " (this session: data wait " + Fixed(summary_.breakdown.data_wait - epoch_start_wait_, 2) + "s, " +
              FormatCount(epoch_seconds > 0 ? static_cast<double>(session_rows_ - epoch_start_rows_) / epoch_seconds : 0) +
              " samples/s" + (train_source_->cached() ? ", data.train in memory" : "") + ")");
    if (job_.lockstep()) {
      RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
      LogRanks();
    }
    if (valid_ && meta_.last_eval_step != meta_.step && !job_.async()) {
      RECTRAIN_RETURN_IF_ERROR(RunEval("end of epoch"));
      if (EarlyStopCheck()) {
        stop_status_ = RunOutcome::kEarlyStopped;
        done = true;
      }
    }
    // A stop request between epochs: agreed like one inside a pass (an async worker stops alone).
    if (!done && !job_.lockstep()) {
      if (stop_requested()) {
        stop_status_ = RunOutcome::kInterrupted;
        summary_.interrupted_by = opt_.stop_signal->load();
        done = true;
      }
    } else if (!done) {
      Phase("the end of epoch " + std::to_string(finished_epoch) + " (the stop agreement)");
      std::vector<int64_t> stop = {stop_requested() ? 1 : 0};
      RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(stop), dist::ReduceOp::kMax));
      if (stop[0] != 0) {
        stop_status_ = RunOutcome::kInterrupted;
        summary_.interrupted_by = stop_requested() ? opt_.stop_signal->load() : SIGTERM;
        done = true;
      }
    }
  }
  // The last steps since the previous report, so the recorded curves reach the final step.
  if (session_steps_ > 0 && step_at_report_ != meta_.step) Report(/*log_line=*/true);
  return OkStatus();
}

Status TrainLoop::Finish() {
  log_->EndBar();
  if (stop_status_ == RunOutcome::kInterrupted && session_steps_ == 0 && !job_.async()) {
    log_->Log("stopped before the first step of this run: nothing trained, no checkpoint written");
    return OkStatus();
  }
  RECTRAIN_RETURN_IF_ERROR(Checkpoint());
  if (stop_status_ == RunOutcome::kInterrupted) return OkStatus();
  const std::string model_dir = opt_.run_dir + "/model";
  Phase("the publication of the model at step " + std::to_string(meta_.step));
  Status published = lead() ? PublishModelDir(summary_.last_checkpoint, model_dir) : OkStatus();
  RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, published)));
  summary_.model_dir = model_dir;
  if (valid_) {
    if (!summary_.has_valid || meta_.last_eval_step != meta_.step) {
      RECTRAIN_RETURN_IF_ERROR(RunEval("final"));
    }
    if (lead() && classes_ == 1) {
      std::string note;
      summary_.has_oracle =
          OracleFromProbFiles(c_.valid_files, valid_->accumulator().labels(), compute_, &summary_.oracle, &note);
      if (summary_.has_oracle) {
        log_->Log("oracle (true probabilities of " + c_.valid_files.front() + ".prob): auc " +
                  Fixed(summary_.oracle.auc, 5) + " logloss " + Fixed(summary_.oracle.logloss, 5));
      } else if (!note.empty()) {
        log_->Log("note: " + note);
      }
    }
  }
  return OkStatus();
}

void TrainLoop::WriteSummary() {
  summary_.status = stop_status_;
  summary_.steps = meta_.step;
  summary_.session_steps = session_steps_;
  summary_.rows_read = meta_.rows_read_total;
  summary_.rows_rejected =
      job_.distributed() ? job_rejected_ : rejected_before_ + (pass_ ? pass_->reader().Stats().rows_rejected : 0);
  summary_.epochs = meta_.epoch;
  summary_.seconds = session_seconds_;
  summary_.samples_per_sec = session_seconds_ > 0 ? static_cast<double>(session_rows_) / session_seconds_ : 0;
  if (bundle_.model) summary_.tables = job_.distributed() ? job_tables_ : internal::LocalTableSummaries(bundle_);
  summary_.wall_seconds = wall_.Seconds();
  summary_.peak_rss_bytes = internal::PeakRssBytes();
  summary_.world = job_.world();
  summary_.transport = job_.comm->transport_name();
  summary_.data_split = job_.distributed() ? config::DataSplitName(job_.split) : "";
  summary_.object_store = io::RemoteIoTotals();
  if (!lead()) return;
  if (summary_.object_store.requests > 0 && log_) log_->Log("object store: " + summary_.object_store.ToString());
  const std::string path = opt_.run_dir + "/summary.json";
  auto w = io::AtomicFileWriter::Create(path);
  if (w.ok()) {
    Status s = (*w)->Append(SummaryJson(summary_));
    if (s.ok()) s = (*w)->Commit();
    if (!s.ok() && log_) log_->Log("warning: cannot write " + path + ": " + s.ToString());
  }
}

Status TrainLoop::ServeAsServer() {
  const int s = job_.rank() - job_.workers();
  int64_t total = 0;
  for (const auto& p : bundle_.params) total += static_cast<int64_t>(p.value.size());
  ps::ServerOptions so;
  so.tables = bundle_.tables;
  so.dense = ps::SliceParams(bundle_.params, ps::DenseChunk(total, s, job_.servers));
  // The dense optimizer of this chunk (its moments start afresh: a resumed async run restarts them).
  RECTRAIN_ASSIGN_OR_RETURN(server_optimizer_, optim::MakeOptimizer(c_.optimizer));
  RECTRAIN_RETURN_IF_ERROR(server_optimizer_->Init(so.dense)) << "while initialising the server's optimizer";
  so.optimizer = server_optimizer_.get();
  so.workers = job_.workers();
  so.staleness = c_.dist.staleness;
  so.compute = compute_;
  ps::ServerStats st;
  Stopwatch sw;
  job_.comm->set_context("serving");
  RECTRAIN_RETURN_IF_ERROR(ps::RunServer(so, *job_.comm, &st));
  session_seconds_ = sw.Seconds();
  server_stats_ = st;
  return OkStatus();
}

Status TrainLoop::ConcludeAsync() {
  Phase("the end of the asynchronous phase");
  // Every rank gets the servers' final dense parameters (each server contributes its chunk).
  int64_t total = 0;
  for (const auto& p : bundle_.params) total += static_cast<int64_t>(p.value.size());
  std::vector<float> all(static_cast<size_t>(total), 0.0f);
  if (job_.is_server()) {
    const ps::DenseRange r = ps::DenseChunk(total, job_.rank() - job_.workers(), job_.servers);
    int64_t at = 0;
    for (const auto& p : bundle_.params) {
      for (size_t i = 0; i < p.value.size(); ++i, ++at) {
        if (at >= r.begin && at < r.end) all[static_cast<size_t>(at)] = p.value[i];
      }
    }
  }
  RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, OkStatus())));
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<float>(all), dist::ReduceOp::kSum));
  int64_t at = 0;
  for (const auto& p : bundle_.params) {
    std::copy_n(all.data() + at, p.value.size(), p.value.data());
    at += static_cast<int64_t>(p.value.size());
  }
  // From here on every rank steps together over the servers' rows: the final evaluation and the
  // checkpoint.
  bundle_.store = ps::MakeShardedStore(bundle_.model->spec(), bundle_.tables, job_.comm, bundle_.owners);
  bundle_.async_store = nullptr;
  // The job's totals: rows of every worker, the slowest worker's time, and where each epoch is.
  std::vector<double> sums = {static_cast<double>(local_session_rows_), static_cast<double>(meta_.rows_read_total),
                              static_cast<double>(local_rows_in_epoch_)};
  if (job_.is_server()) sums = {0, 0, 0};
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<double>(sums), dist::ReduceOp::kSum));
  std::vector<double> maxes = {job_.is_server() ? 0.0 : session_seconds_, static_cast<double>(job_.is_server() ? 0 : meta_.step),
                               static_cast<double>(job_.is_server() ? 0 : meta_.epoch)};
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<double>(maxes), dist::ReduceOp::kMax));
  session_rows_ = static_cast<int64_t>(sums[0]);
  meta_.rows_read_total = static_cast<int64_t>(sums[1]);
  meta_.rows_in_epoch = static_cast<int64_t>(sums[2]);
  session_seconds_ = maxes[0];
  meta_.step = static_cast<int64_t>(maxes[1]);  // the most steps any worker made
  meta_.epoch = static_cast<int64_t>(maxes[2]);
  log_->Log("async: every worker is done; " + FormatCount(static_cast<double>(session_rows_)) + " rows in " +
            Fixed(session_seconds_, 1) + "s by " + std::to_string(job_.workers()) + " workers");
  return OkStatus();
}

Result<TrainSummary> TrainLoop::Run() {
  Status s = SetupLocal();
  if (job_.distributed()) s = Agreed(dist::AgreeOk(*job_.comm, s));
  if (s.ok()) s = SetupTogether();
  if (s.ok() && opt_.observer != nullptr && lead()) {
    report_interval_s_ = opt_.observer->ProgressIntervalSeconds();
    opt_.observer->OnStart(meta_.step);
    since_report_.Reset();
  }
  if (job_.async()) {
    if (s.ok()) s = job_.is_server() ? ServeAsServer() : Loop();
    // A worker tells the servers it is done (also after an error, so they need not time out).
    if (!job_.is_server() && bundle_.async_store != nullptr) {
      Status done = bundle_.async_store->Finish();
      if (s.ok()) s = done;
    }
    if (s.ok()) s = ConcludeAsync();
  } else if (s.ok()) {
    s = Loop();
  }
  if (s.ok()) s = Finish();
  if (s.ok() && job_.distributed()) {
    s = RefreshJobFigures();
    if (s.ok()) LogRanks();
  }
  if (!s.ok()) {
    if (log_) {
      log_->EndBar();
      log_->Log("error: " + s.ToString());
      stop_status_ = RunOutcome::kFailed;
      summary_.error = s.ToString();
      WriteSummary();
    }
    // Peers that do not know about the error would wait in their next collective until the
    // timeout: the process must end the job (dist::EndRank, after reporting the error).
    if (job_.distributed() && !agreed_error_) job_.comm->Abandon(s);
    return s;
  }
  WriteSummary();
  const TrainSummary& r = summary_;
  std::string line = std::string("done: ") + RunOutcomeName(r.status) + ", " + std::to_string(r.steps) + " steps, " +
                     FormatCount(r.samples_per_sec) + " samples/s";
  if (r.has_valid && classes_ > 1) {
    line += ", valid accuracy " + Fixed(r.valid.accuracy, 5) + " logloss " + Fixed(r.valid.logloss, 5);
  } else if (r.has_valid) {
    line += ", valid auc " + Fixed(r.valid.auc, 5) + " logloss " + Fixed(r.valid.logloss, 5);
  }
  if (r.has_oracle) line += " (oracle auc " + Fixed(r.oracle.auc, 5) + ")";
  log_->Log(line);
  return summary_;
}

}  // namespace

bool OracleFromProbFiles(const std::vector<std::string>& patterns, const std::vector<float>& labels,
                         const ComputeContext& compute, OracleMetrics* out, std::string* note) {
  note->clear();
  auto files = io::ExpandPaths(patterns);
  if (!files.ok()) return false;
  std::vector<float> probs;
  std::vector<char> has_prob(files->size(), 0);
  io::ParallelIo(static_cast<int64_t>(files->size()), 16, [&](int64_t i) {
    const std::string prob = (*files)[static_cast<size_t>(i)] + ".prob";
    has_prob[static_cast<size_t>(i)] = io::FileSystemFor(prob).Stat(prob).ok();
    return OkStatus();
  }).IgnoreError();
  const int with_prob = static_cast<int>(std::count(has_prob.begin(), has_prob.end(), 1));
  if (with_prob == 0) return false;
  if (with_prob != static_cast<int>(files->size())) {
    *note = "oracle skipped: only " + std::to_string(with_prob) + " of " +
            std::to_string(files->size()) + " files have a .prob side file";
    return false;
  }
  for (const auto& f : *files) {
    auto p = data::ReadProbabilities(f + ".prob");
    if (!p.ok()) {
      *note = "oracle skipped: " + p.status().ToString();
      return false;
    }
    probs.insert(probs.end(), p->begin(), p->end());
  }
  if (probs.size() != labels.size()) {
    *note = "oracle skipped: the .prob files have " + std::to_string(probs.size()) +
            " rows but the data has " + std::to_string(labels.size());
    return false;
  }
  out->auc = ExactAuc(probs, labels, compute);
  out->logloss = LogLoss(probs, labels);
  return true;
}

std::string SummaryJson(const TrainSummary& s) {
  nlohmann::json j;
  j["status"] = RunOutcomeName(s.status);
  if (s.status == RunOutcome::kInterrupted) j["interrupted_by_signal"] = s.interrupted_by;
  if (!s.error.empty()) j["error"] = s.error;
  auto phases = [](const PhaseSeconds& b, bool job) {
    nlohmann::json p = {{"data_wait_s", b.data_wait},         {"lookup_s", b.lookup},
                        {"forward_s", b.forward},             {"backward_s", b.backward},
                        {"sparse_update_s", b.sparse_update}, {"dense_update_s", b.dense_update}};
    if (job) {
      p["exchange_s"] = b.exchange;
      p["allreduce_s"] = b.allreduce;
    }
    return p;
  };
  const bool job = s.world > 1;
  j["train"] = {
      {"samples_per_sec", s.samples_per_sec},
      {"steps", s.steps},
      {"session_steps", s.session_steps},
      {"rows_read", s.rows_read},
      {"rows_rejected", s.rows_rejected},
      {"epochs", s.epochs},
      {"seconds", s.seconds},
      {"breakdown", phases(s.breakdown, job)},
  };
  if (s.has_valid) {
    nlohmann::json v = {{"auc", Num(s.valid.auc)},
                        {"logloss", Num(s.valid.logloss)},
                        {"calibration", Num(s.valid.calibration)},
                        {"ne", Num(s.valid.ne)},
                        {"rows", s.valid.rows},
                        {"positives", s.valid.positives}};
    if (!std::isnan(s.valid.gauc)) {
      v["gauc"] = s.valid.gauc;
      v["gauc_groups"] = s.valid.gauc_groups;
    }
    if (!std::isnan(s.valid.accuracy)) {
      v["accuracy"] = s.valid.accuracy;
      v["top5_accuracy"] = Num(s.valid.top5_accuracy);
    }
    if (!s.valid.tasks.empty()) v["tasks"] = TasksJson(s.valid);
    j["valid"] = v;
  }
  if (s.has_oracle) j["oracle"] = {{"auc", Num(s.oracle.auc)}, {"logloss", Num(s.oracle.logloss)}};
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : s.tables) {
    tables.push_back({{"name", t.name},
                      {"dim", t.dim},
                      {"rows", t.rows},
                      {"bytes", t.bytes},
                      {"admissions", t.admissions},
                      {"evictions", t.evictions},
                      {"lookups", t.lookups},
                      {"oov_lookups", t.oov_lookups}});
  }
  j["tables"] = tables;
  if (job) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankFigures& f : s.ranks) {
      ranks.push_back({{"rank", f.rank},
                       {"rows", f.rows},
                       {"ids_owned", f.ids_owned},
                       {"ids_served", f.ids_served},
                       {"bytes_sent", f.bytes_sent},
                       {"bytes_received", f.bytes_received},
                       {"min_bytes_sent", f.min_bytes_sent},
                       {"allreduce_bytes_sent", f.allreduce_bytes_sent},
                       {"breakdown", phases(f.breakdown, true)}});
    }
    j["dist"] = {{"world", s.world}, {"transport", s.transport}, {"data_split", s.data_split}, {"ranks", ranks}};
  }
  j["wall_seconds"] = s.wall_seconds;
  j["peak_rss_bytes"] = s.peak_rss_bytes;
  if (s.object_store.requests > 0) {
    j["object_store"] = {{"requests", s.object_store.requests},
                         {"retries", s.object_store.retries},
                         {"retry_reasons", s.object_store.retry_reasons},
                         {"bytes_read", s.object_store.bytes_read},
                         {"bytes_written", s.object_store.bytes_written}};
  }
  if (!s.last_checkpoint.empty()) j["checkpoint"] = s.last_checkpoint;
  if (!s.model_dir.empty()) j["model"] = s.model_dir;
  return j.dump(2) + "\n";
}

Result<TrainSummary> Train(const config::LoadedConfig& config, const TrainerOptions& options) {
  if (options.run_dir.empty()) return InvalidArgumentError("a run directory is required (--run-dir DIR)");
  std::unique_ptr<dist::Communicator> single;
  dist::Communicator* comm = options.comm;
  if (comm == nullptr) {
    single = dist::Communicator::Single();
    comm = single.get();
  }
  // One buffer pool for every reader of the run: each epoch and evaluation pass starts with the
  // pages of the previous one (data/reader.h).
  config::LoadedConfig run_config = config;
  run_config.config.read.buffer_pool = data::MakeReaderBufferPool();
  TrainLoop loop(run_config, options, comm);
  return loop.Run();
}

Result<EvalReport> EvaluateRun(const EvalOptions& options) {
  Stopwatch sw;
  const std::string model_dir = options.run_dir + "/model";
  std::error_code ec;
  if (!fs::exists(model_dir + "/meta.json", ec)) {
    return NotFoundError("no trained model in " + model_dir + " (train first: rectrain train CONFIG --run-dir " +
                         options.run_dir + ")");
  }
  RECTRAIN_ASSIGN_OR_RETURN(config::LoadedConfig lc, config::LoadTrainConfig(options.run_dir + "/config.yaml", {}));
  config::TrainConfig& c = lc.config;
  if (options.threads > 0) c.threads = options.threads;
  ComputeContext compute{.num_threads = c.threads};
  if (options.size_compute_pool) options.size_compute_pool(c.threads);
  data::DataConfig dc = c.data;
  dc.files = options.files;
  dc.negative_downsampling = 1.0;  // evaluate on every row; logits are calibrated instead
  if (!options.group_key.empty()) dc.schema.group_key = options.group_key;
  data::ReadOptions ro = c.read;
  ro.shuffle = false;
  ro.epoch = 0;
  ro.skip_rows = 0;
  ro.buffer_pool = data::MakeReaderBufferPool();
  if (c.eval.batch_size > 0) ro.batch_size = c.eval.batch_size;
  // Field names come from the reader of the evaluated data (same schema as training).
  RECTRAIN_ASSIGN_OR_RETURN(auto probe, WithContext(data::OpenBatchReader(dc, ro), "--data"));
  std::vector<std::string> sparse = probe->sparse_names();
  const std::vector<std::string> dense = probe->dense_names();
  const std::string data_source = probe->cache_note();
  probe.reset();
  std::unique_ptr<dist::Communicator> single = dist::Communicator::Single();
  const internal::Job job{.comm = single.get()};
  RECTRAIN_ASSIGN_OR_RETURN(internal::ModelBundle bundle, internal::BuildModel(c, sparse, dense, job));
  RECTRAIN_RETURN_IF_ERROR(ReadCheckpoint(model_dir, bundle.params, nullptr, bundle.tables).status())
      << "while loading " << model_dir;
  data::EpochOptions eo;
  eo.shuffle = data::ShuffleMode::kOff;
  eo.memory_cache = data::MemoryCacheMode::kOff;  // one pass
  RECTRAIN_ASSIGN_OR_RETURN(auto source, data::EpochSource::Create(dc, ro, eo, std::make_shared<data::MemoryBudget>(0),
                                                                  "--data", {}));
  internal::EvalSplit split(std::move(source), job);
  EvalReport report;
  report.data_source = data_source;
  report.gauc_requested = !dc.schema.group_key.empty();
  RECTRAIN_RETURN_IF_ERROR(split.Evaluate(bundle, compute, c.data.negative_downsampling, report.gauc_requested,
                                          &report.metrics))
      << "while evaluating";
  if (bundle.model->num_outputs() == bundle.model->num_tasks()) {
    report.has_oracle =
        OracleFromProbFiles(options.files, split.accumulator().labels(), compute, &report.oracle, &report.oracle_note);
  }
  report.probs = split.accumulator().probs();
  report.seconds = sw.Seconds();
  return report;
}

}  // namespace rectrain::train
