#include "rectrain/train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <memory>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/optim/lr_schedule.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/data/cache.h"
#include "rectrain/train/internal/async_phase.h"
#include "rectrain/train/internal/early_stopping.h"
#include "rectrain/train/internal/job_figures.h"
#include "rectrain/train/internal/online.h"
#include "rectrain/train/internal/publishing.h"
#include "rectrain/train/internal/progress.h"
#include "rectrain/train/internal/remote_checkpoints.h"
#include "rectrain/train/internal/run_files.h"
#include "rectrain/train/internal/run_log.h"
#include "rectrain/train/internal/run_setup.h"

namespace rectrain::train {
namespace {

using checkpoint::CheckpointMeta;
using checkpoint::PruneCheckpoints;
using checkpoint::WriteCheckpoint;
using internal::Fixed;
using internal::LockstepPass;

// One rank's run: the parts from internal/run_setup.h, the loop over passes and steps, and what
// happens between steps (AfterStep), at epoch ends and at the end. Errors end the run with
// summary.json saying "failed"; in a job, an error the other ranks do not share takes this rank
// out of step (dist::Communicator::Abandon), for the process to end the job.
class TrainLoop {
 public:
  TrainLoop(const config::LoadedConfig& config, const TrainerOptions& options, dist::Communicator* comm)
      : lc_(config), c_(config.config), opt_(options) {
    job_.comm = comm;
    // A stream is read in shards: every rank its own partitions.
    job_.split = c_.ResolvedDataSplit() == config::DataSplit::kBatches && !c_.stream ? config::DataSplit::kBatches
                                                                                    : config::DataSplit::kShards;
    if (c_.dist.mode == config::DistMode::kAsync && comm->distributed()) job_.servers = c_.dist.servers;
  }

  Result<TrainSummary> Run();

 private:
  // Setup in two halves: what each rank does on its own (may fail on one rank only), then, once
  // every rank is known to be ready, what they do together.
  Status SetupLocal();
  Status OpenRunDirectory();
  Status SetupTogether();
  // The passes of the run, each to its end unless the run stops inside it.
  Status Loop();
  Result<bool> RunPass(bool* done);  // true when the pass ended
  bool StopBeforeFirstStep(int fallback_signal, bool* done);
  Status Step(const LockstepPass::Step& step);
  Status AfterStep(const LockstepPass::Step& step, bool* done);
  Status EndEpoch(bool* done);
  Status StopBetweenEpochs(int64_t finished_epoch, bool* done);
  // Online (data.stream): --until and train.checkpoint_every_s, decided by the job together
  // after a step; and the run's status from the reason the stream ended.
  Status ClockDecisions(bool* done);
  void OnlineEnded();
  // train.publish: the publisher (every rank's; null without train.publish) and one publish of
  // the model as it is now (every rank of a job together).
  Status OpenPublisher();
  Status PublishNow(bool wait);
  Status RunEval(const char* why);
  bool EarlyStop();
  // Writes a checkpoint at this step (a delta when train.checkpoint_full_every says so), unless
  // one is there already.
  Status Checkpoint();
  Status Finish();
  Status PublishModel(const std::string& model_dir);
  void LogOracle();
  Status RunAsync();
  void WriteSummary();
  // Job-wide figures (every rank calls it at the same step), kept for the reports and summary.
  Status RefreshJobFigures();
  void LogRanks();
  void LogProgress(bool line);
  void Report(bool log_line);  // to the observer (rank 0)

  bool lead() const { return job_.lead(); }
  bool stop_requested() const {
    return opt_.stop_signal != nullptr && opt_.stop_signal->load(std::memory_order_relaxed) != 0;
  }
  void Interrupted(int fallback_signal) {
    stop_status_ = RunOutcome::kInterrupted;
    summary_.interrupted_by = stop_requested() ? opt_.stop_signal->load() : fallback_signal;
  }
  int64_t LocalRejected() const { return rejected_before_ + (pass_ ? pass_->reader().Stats().rows_rejected : 0); }
  internal::Position At() const { return {meta_.step, meta_.epoch, meta_.rows_in_epoch, meta_.rows_read_total}; }
  void Log(const std::string& line) { log_->Log(line); }
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
  bool Every(int64_t steps) const { return steps > 0 && meta_.step % steps == 0; }

  const config::LoadedConfig& lc_;
  const config::TrainConfig& c_;
  const TrainerOptions& opt_;
  internal::Job job_;
  Stopwatch wall_;
  ComputeContext compute_;
  std::unique_ptr<internal::RunLogger> log_;
  std::string checkpoints_dir_;
  internal::RunScale scale_;
  internal::TrainData data_;
  std::unique_ptr<internal::RunModel> model_;
  std::unique_ptr<internal::EvalSplit> valid_;
  std::unique_ptr<internal::Progress> progress_;
  std::unique_ptr<LockstepPass> pass_;
  internal::OnlineStream* online_ = nullptr;  // data.stream: data_.source
  Stopwatch since_checkpoint_;                // train.checkpoint_every_s
  std::unique_ptr<internal::RunPublisher> publisher_;  // train.publish
  Stopwatch since_publish_;                   // train.publish.every_s
  optim::LrScheduleConfig sparse_schedule_;
  CheckpointMeta meta_;
  TrainSummary summary_;
  internal::JobFigures figures_;  // as of the last RefreshJobFigures
  int64_t last_checkpoint_step_ = -1;
  // Incremental checkpoints: the full checkpoint ("step-N") the deltas rest on, the deltas
  // written on it so far (-1: no checkpoint yet to rest on), whether the last one is full (a
  // delta checkpoint cannot be the final model by itself).
  std::string chain_base_;
  int64_t chain_length_ = -1;
  bool last_checkpoint_full_ = true;
  bool agreed_error_ = false;
  int64_t local_rows_in_epoch_ = 0;  // this rank's rows of the epoch (shards resumes from them)
  double base_train_seconds_ = 0;    // from earlier sessions (resume)
  int64_t rejected_before_ = 0;      // this rank's rejected rows of earlier sessions and epochs
  RunOutcome stop_status_ = RunOutcome::kCompleted;
};

Status TrainLoop::OpenRunDirectory() {
  std::error_code ec;
  std::filesystem::create_directories(opt_.run_dir, ec);
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
  return OkStatus();
}

Status TrainLoop::SetupLocal() {
  RECTRAIN_RETURN_IF_ERROR(OpenRunDirectory());
  compute_.num_threads = c_.threads;
  if (opt_.size_compute_pool) opt_.size_compute_pool(c_.threads);  // oneDNN's GEMMs follow the pool
  if (opt_.resume && !c_.train.checkpoint_dir.empty()) {
    // The store may hold a newer checkpoint than this machine (another node ran the job, or
    // the local copy is gone): the lead fetches it into the run directory the ranks share.
    Status fetched = lead() ? internal::FetchNewerCheckpoint(c_.train.checkpoint_dir, checkpoints_dir_) : OkStatus();
    RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, fetched)));
  }
  RECTRAIN_ASSIGN_OR_RETURN(internal::ResumePoint resume, internal::FindResumePoint(checkpoints_dir_, opt_.resume));
  meta_ = resume.meta;
  if (lead()) {
    RECTRAIN_RETURN_IF_ERROR(io::WriteFileAtomically(opt_.run_dir + "/config.yaml", lc_.resolved_yaml));
  }
  scale_ = internal::ScaleOf(c_, job_.world());
  for (const std::string& line : internal::StartLines(c_, job_, scale_, opt_.resume, opt_.run_dir)) Log(line);
  const internal::LogFn log = [this](const std::string& line) { Log(line); };
  auto budget = std::make_shared<data::MemoryBudget>(
      c_.epoch.memory_cache_bytes > 0 ? c_.epoch.memory_cache_bytes : data::MemoryBudget::DefaultBytes());
  if (c_.stream) {
    RECTRAIN_ASSIGN_OR_RETURN(data_, internal::OpenOnlineData(c_, job_, scale_, meta_, {opt_.stop_signal, opt_.until}, log));
    online_ = data_.online;
  } else {
    RECTRAIN_ASSIGN_OR_RETURN(data_, internal::OpenTrainData(c_, job_, scale_, meta_, budget, log));
  }
  if (data_.first_pass) pass_ = std::make_unique<LockstepPass>(std::move(data_.first_pass), job_);
  local_rows_in_epoch_ = data_.local_rows_done;
  RECTRAIN_ASSIGN_OR_RETURN(model_, internal::BuildRunModel(c_, data_, job_, log));
  sparse_schedule_ = c_.SparseLrSchedule();
  if (resume.dir) {
    RECTRAIN_ASSIGN_OR_RETURN(meta_, internal::RestoreRun(resume, lc_, job_, model_.get(), log));
    last_checkpoint_step_ = meta_.step;
    summary_.last_checkpoint = *resume.dir;
    chain_base_ = meta_.delta() ? meta_.base : std::filesystem::path(*resume.dir).filename().string();
    chain_length_ = meta_.chain_length;
    last_checkpoint_full_ = !meta_.delta();
    base_train_seconds_ = meta_.train_seconds;
    rejected_before_ = lead() ? meta_.rows_rejected_total : 0;  // counted once for the job
  }
  if (c_.train.checkpoint_full_every > 1) {
    for (embedding::EmbeddingTable* t : model_->bundle.tables) t->TrackChanges(embedding::ChangeLog::kCheckpoint, true);  // after the restore
  }
  meta_.config_hash = lc_.hash;
  meta_.model_type = c_.model.type;
  meta_.tables.clear();
  for (const auto* t : model_->bundle.tables) meta_.tables.push_back(t->config().name);
  RECTRAIN_ASSIGN_OR_RETURN(valid_, internal::OpenValidation(c_, job_, budget, log));
  progress_ = std::make_unique<internal::Progress>(internal::SteadyClock(), model_->classes, c_.train.epochs,
                                                   c_.train.max_steps);
  progress_->set_rows_per_epoch(data_.rows_per_epoch);
  return OpenPublisher();
}

Status TrainLoop::OpenPublisher() {
  if (!c_.train.publish) return OkStatus();
  // In a job every rank holds only the rows it owns: rank 0 gathers them at each publish.
  RECTRAIN_ASSIGN_OR_RETURN(publisher_, internal::RunPublisher::Open(
                                            lc_, model_->bundle, opt_.run_dir,
                                            [this](const std::string& line) { Log(line); }, *job_.comm));
  Log("publish: the model goes to " + c_.train.publish->to + " every " + internal::Shortest(c_.train.publish->every_s) +
      " s (a full export every " + std::to_string(c_.train.publish->full_every) + " deltas) and at the end" +
      (job_.distributed() ? ", rank 0 gathering the rows of all " + std::to_string(job_.world()) + " ranks" : ""));
  since_publish_.Reset();
  return OkStatus();
}

// Publishing reads the model (no state of the run changes), so a run publishes the same model
// as one that does not. A snapshot is taken here, between two steps; the writing runs on the
// publisher's thread. With `wait` (the end of the run) the publish is complete on return.
Status TrainLoop::PublishNow(bool wait) {
  Phase("the publish at step " + std::to_string(meta_.step));
  serve::TrainedEvents events;
  if (online_) {
    RECTRAIN_ASSIGN_OR_RETURN(events, online_->JobEvents());
  }
  if (wait) return publisher_->PublishAndWait(model_->bundle, meta_.step, events);
  // The interval runs from a snapshot to the next. While the previous publish is still being
  // written the snapshot is skipped and the next step tries again, so versions follow as fast as
  // the target takes them, never faster than every_s.
  RECTRAIN_ASSIGN_OR_RETURN(const bool started, publisher_->Start(model_->bundle, meta_.step, events));
  if (started) since_publish_.Reset();
  return OkStatus();
}

Status TrainLoop::SetupTogether() {
  if (!job_.distributed()) return OkStatus();
  Phase("the job's setup");
  RECTRAIN_RETURN_IF_ERROR(Agreed(internal::AgreeOnConfigAndBuild(job_, lc_.hash)));
  // The dense parameters start equal everywhere (rank 0's): a fresh run's initialisation, or
  // what every rank read from the checkpoint.
  return internal::BroadcastDenseParams(model_->bundle, job_);
}

Status TrainLoop::Step(const LockstepPass::Step& step) {
  const int64_t s = meta_.step;
  const internal::StepRunner::Rates rates{
      .seed = DeriveSeed(c_.seed, static_cast<uint64_t>(s)),
      .dense_lr = static_cast<float>(optim::ScheduledLr(c_.lr_schedule, s) * scale_.lr_factor),
      .sparse_lr = static_cast<float>(optim::ScheduledLr(sparse_schedule_, s) * scale_.lr_factor)};
  RECTRAIN_ASSIGN_OR_RETURN(const double loss, model_->runner->Run(step, s, rates, compute_, &summary_.breakdown));
  // The loss is the global batch's on every rank, so every rank stops here together.
  if (!std::isfinite(loss)) {
    // The observer sees the non-finite loss first (rectrain_train_loss: NaN/Inf for the alert
    // rules, deploy/prometheus/alerts.yml); the step itself does not count.
    progress_->OnDivergedStep(loss, rates.dense_lr);
    Report(/*log_line=*/false);
    return Agreed(Status(StatusCode::kAborted, "training diverged: the loss is " + Fixed(loss, 4) + " at step " +
                                                   std::to_string(s + 1) + "; lower optimizer.lr (" +
                                                   Fixed(rates.dense_lr, 6) +
                                                   ") or embedding.optimizer.lr, or add optimizer.warmup_steps"));
  }
  progress_->OnStep(loss, rates.dense_lr, model_->runner->probs(), *step.batch, step.global_rows);
  if (online_ && model_->classes == 1) {
    online_->Score(model_->runner->probs().first(static_cast<size_t>(step.batch->size)), step.batch->labels);
  }
  ++meta_.step;
  meta_.rows_in_epoch += step.global_rows;
  meta_.rows_read_total += step.global_rows;
  local_rows_in_epoch_ += step.batch->size;
  return OkStatus();
}

// What runs after each step, in this order, when due: the log line or bar and the observer's
// report, an evaluation (and early stopping), a checkpoint, the step limit, a stop request.
// This is where periodic work hooks in (an online loop adds its publishing here).
Status TrainLoop::AfterStep(const LockstepPass::Step& step, bool* done) {
  const config::TrainerSettings& tc = c_.train;
  if (Every(tc.log_every_steps)) {
    if (job_.lockstep()) {
      RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
    }
    LogProgress(/*line=*/true);
    Report(/*log_line=*/true);
  } else {
    if (log_->bar() && progress_->BarDue()) LogProgress(/*line=*/false);
    if (progress_->ReportDue()) Report(/*log_line=*/false);
  }
  if (Every(tc.eval_every_steps) && valid_) {
    RECTRAIN_RETURN_IF_ERROR(RunEval("every eval_every_steps"));
    if (EarlyStop()) *done = true;
  }
  if (!*done && Every(tc.checkpoint_every_steps)) {
    RECTRAIN_RETURN_IF_ERROR(Checkpoint());
  }
  if (tc.max_steps > 0 && meta_.step >= tc.max_steps) {
    Log("reached train.max_steps = " + std::to_string(tc.max_steps));
    *done = true;
  }
  if (!*done && tc.max_rows > 0 && meta_.rows_read_total >= tc.max_rows) {
    Log("reached train.max_rows = " + std::to_string(tc.max_rows));
    *done = true;
  }
  if (!*done) {
    RECTRAIN_RETURN_IF_ERROR(ClockDecisions(done));
  }
  // A job agrees on a stop request at the start of a step (LockstepPass), so it stops one step
  // after a signal that arrives mid-step; a single process stops right away.
  if (!*done && (step.stop || (!job_.lockstep() && stop_requested()))) {
    Interrupted(SIGTERM);
    if (job_.distributed()) Log("a rank was asked to stop (SIGINT/SIGTERM): the job checkpoints and stops");
    *done = true;
  }
  return OkStatus();
}

Result<bool> TrainLoop::RunPass(bool* done) {
  progress_->StartClock();
  for (;;) {
    double waited = 0;
    Phase("the start of step " + std::to_string(meta_.step + 1) + " (the per-step agreement)");
    // A stop before this session's first step: nothing trained, so nothing to save. A sync job
    // agrees on it in Next (below); an async worker stops alone, so it keeps stepping into the
    // job's checkpoint.
    const bool stop_first = progress_->steps() == 0 && !job_.async();
    if (stop_first && !job_.lockstep() && stop_requested()) return StopBeforeFirstStep(0, done);
    auto next = pass_->Next(stop_requested(), &waited);
    summary_.breakdown.data_wait += waited;
    if (!next.ok()) return Agreed(next.status());
    if (!next->has_value()) {
      progress_->AddLoopTime();
      return true;
    }
    const LockstepPass::Step step = **next;
    if (stop_first && step.stop) return StopBeforeFirstStep(SIGTERM, done);
    if (online_ && step.global_rows == 0 && !step.stop) continue;  // a step in which no rank had rows
    RECTRAIN_RETURN_IF_ERROR(Step(step));
    progress_->AddLoopTime();
    RECTRAIN_RETURN_IF_ERROR(AfterStep(step, done));
    progress_->StartClock();  // evaluations, checkpoints and logging are not training time
    if (*done) {
      progress_->AddLoopTime();
      return false;
    }
  }
}

// Ends the pass (not at its end) on a stop request before this session's first step.
bool TrainLoop::StopBeforeFirstStep(int fallback_signal, bool* done) {
  Interrupted(fallback_signal);
  progress_->AddLoopTime();
  *done = true;
  return false;
}

Status TrainLoop::Loop() {
  bool done = c_.train.max_steps > 0 && meta_.step >= c_.train.max_steps;
  while (!done && meta_.epoch < c_.train.epochs) {
    if (!pass_) {
      RECTRAIN_ASSIGN_OR_RETURN(auto reader, data_.source->OpenPass(meta_.epoch));
      pass_ = std::make_unique<LockstepPass>(std::move(reader), job_);
    }
    progress_->StartEpoch(summary_.breakdown.data_wait);
    RECTRAIN_ASSIGN_OR_RETURN(const bool ended, RunPass(&done));
    if (!ended) break;
    if (online_) {  // the stream ended (a signal, --until, train.max_rows): no epoch to complete
      OnlineEnded();
      break;
    }
    RECTRAIN_RETURN_IF_ERROR(EndEpoch(&done));
  }
  // The last steps since the previous report, so the recorded curves reach the final step.
  if (progress_->steps() > 0 && progress_->reported_step() != meta_.step) Report(/*log_line=*/true);
  return OkStatus();
}

Status TrainLoop::EndEpoch(bool* done) {
  rejected_before_ += pass_->reader().Stats().rows_rejected;
  pass_.reset();
  data_.source->EndPass();
  const int64_t finished_epoch = meta_.epoch;
  if (meta_.rows_in_epoch > 0) progress_->set_rows_per_epoch(meta_.rows_in_epoch);
  ++meta_.epoch;
  meta_.rows_in_epoch = 0;
  local_rows_in_epoch_ = 0;
  Log(progress_->EpochLine(finished_epoch, meta_.step, summary_.breakdown.data_wait, data_.source->in_memory()));
  if (job_.lockstep()) {
    RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
    LogRanks();
  }
  if (valid_ && meta_.last_eval_step != meta_.step && !job_.async()) {
    RECTRAIN_RETURN_IF_ERROR(RunEval("end of epoch"));
    if (EarlyStop()) *done = true;
  }
  return *done ? OkStatus() : StopBetweenEpochs(finished_epoch, done);
}

Status TrainLoop::ClockDecisions(bool* done) {
  const bool has_until = opt_.until != std::chrono::system_clock::time_point{};
  if (c_.train.checkpoint_every_s <= 0 && !has_until && !publisher_) return OkStatus();
  // Wall-clock decisions differ between ranks by a little: the job takes them together.
  std::vector<int64_t> now = {has_until && std::chrono::system_clock::now() >= opt_.until,
                              c_.train.checkpoint_every_s > 0 && since_checkpoint_.Seconds() >= c_.train.checkpoint_every_s,
                              publisher_ && since_publish_.Seconds() >= c_.train.publish->every_s};
  if (job_.lockstep()) {
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(now), dist::ReduceOp::kMax));
  }
  if (now[0] != 0) {
    Log("reached --until");
    *done = true;  // Finish checkpoints and publishes
    return OkStatus();
  }
  if (now[1] != 0) {
    RECTRAIN_RETURN_IF_ERROR(Checkpoint());
  }
  if (now[2] != 0) {
    RECTRAIN_RETURN_IF_ERROR(PublishNow(/*wait=*/false));
  }
  return OkStatus();
}

void TrainLoop::OnlineEnded() {
  switch (online_->end_reason()) {
    case stream::StreamEnd::kStopped:
      Interrupted(SIGTERM);
      break;
    case stream::StreamEnd::kUntil:
      Log("reached --until");
      break;
    case stream::StreamEnd::kMaxRows:
    case stream::StreamEnd::kNone:  // another rank's stream ended first
      break;
  }
}

// A stop request between epochs: agreed like one inside a pass (an async worker stops alone).
Status TrainLoop::StopBetweenEpochs(int64_t finished_epoch, bool* done) {
  if (!job_.lockstep()) {
    if (stop_requested()) {
      Interrupted(0);
      *done = true;
    }
    return OkStatus();
  }
  Phase("the end of epoch " + std::to_string(finished_epoch) + " (the stop agreement)");
  std::vector<int64_t> stop = {stop_requested() ? 1 : 0};
  RECTRAIN_RETURN_IF_ERROR(job_.comm->AllReduce(std::span<int64_t>(stop), dist::ReduceOp::kMax));
  if (stop[0] != 0) {
    Interrupted(SIGTERM);
    *done = true;
  }
  return OkStatus();
}

Status TrainLoop::RefreshJobFigures() {
  const internal::RankInputs mine{.rows = progress_->local_rows(),
                                  .rejected = LocalRejected(),
                                  .breakdown = summary_.breakdown,
                                  .allreduce_min_bytes = model_->runner->allreduce_min_bytes()};
  RECTRAIN_ASSIGN_OR_RETURN(figures_, internal::GatherJobFigures(model_->bundle, job_, mine));
  return OkStatus();
}

void TrainLoop::LogRanks() {
  for (const std::string& line : internal::RankLines(figures_.ranks)) Log(line);
}

void TrainLoop::LogProgress(bool line) {
  if (!lead()) return;
  if (line || !log_->bar()) {
    if (online_) {
      const OnlineFigures f = online_->Figures(compute_);
      Log(progress_->StepLine(At(), compute_, &f));
    } else {
      Log(progress_->StepLine(At(), compute_));
    }
  } else {
    log_->Bar(progress_->BarText(At(), compute_));
  }
}

void TrainLoop::Report(bool log_line) {
  if (opt_.observer == nullptr || !lead()) return;
  internal::ReportInputs in;
  in.at = At();
  in.rows_rejected = job_.distributed() ? figures_.rejected : LocalRejected();
  in.data_wait_seconds = summary_.breakdown.data_wait;
  in.queue_depth = pass_ ? pass_->reader().Stats().queue_depth : 0;
  in.tables = job_.distributed() ? figures_.tables : internal::LocalTableSummaries(model_->bundle);
  in.ranks = figures_.ranks;
  ProgressInfo p = progress_->Report(std::move(in), log_line, compute_);
  if (online_) p.online = online_->Figures(compute_);
  if (publisher_) {
    publisher_->Poll();
    p.publish = publisher_->figures();
  }
  opt_.observer->OnProgress(p);
}

Status TrainLoop::RunEval(const char* why) {
  if (!valid_) return OkStatus();
  Phase("the evaluation at step " + std::to_string(meta_.step));
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(valid_->Evaluate(model_->bundle, compute_, c_.data.negative_downsampling, c_.eval.gauc,
                                            &summary_.valid))
      << "while evaluating data.valid";
  summary_.has_valid = true;
  meta_.last_eval_step = meta_.step;
  const EvalMetrics& m = summary_.valid;
  Log(internal::EvalLogLine(why, meta_.step, m, model_->classes > 1, c_.eval.gauc, sw.Seconds()));
  if (!lead()) return OkStatus();
  // RUN_DIR/evals.jsonl, flushed at once: a tune study watches it.
  const double now = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()) /
                     1000.0;
  internal::AppendLine(opt_.run_dir + "/evals.jsonl", internal::EvalRecordLine(meta_.step, meta_.epoch, now, m));
  if (opt_.observer != nullptr) opt_.observer->OnEval(meta_.step, m);
  return OkStatus();
}

// After an evaluation: true when early stopping ends the run (logged, status set).
bool TrainLoop::EarlyStop() {
  std::string why;
  if (!internal::EarlyStopping(c_.train.early_stopping).Update(summary_.valid, meta_.step, &meta_, &why)) return false;
  Log(why);
  stop_status_ = RunOutcome::kEarlyStopped;
  return true;
}

Status TrainLoop::Checkpoint() {
  if (last_checkpoint_step_ == meta_.step && !summary_.last_checkpoint.empty()) return OkStatus();
  const std::string step = std::to_string(meta_.step);
  const bool delta = chain_length_ >= 0 && chain_length_ + 1 < c_.train.checkpoint_full_every;
  meta_.base = delta ? chain_base_ : "";
  meta_.previous = delta ? std::filesystem::path(summary_.last_checkpoint).filename().string() : "";
  meta_.chain_length = delta ? chain_length_ + 1 : 0;
  Phase("the checkpoint at step " + step + " (the job's figures)");
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(RefreshJobFigures());
  meta_.train_seconds = base_train_seconds_ + progress_->train_seconds();
  meta_.rows_rejected_total = figures_.rejected;
  meta_.world = job_.world();
  meta_.data_split = job_.distributed() ? config::DataSplitName(job_.split) : "";
  RECTRAIN_RETURN_IF_ERROR(data_.source->SavePosition(&meta_));
  meta_.rank_rows_in_epoch.clear();
  if (job_.distributed() && job_.split == config::DataSplit::kShards) {
    std::vector<int64_t> mine = {local_rows_in_epoch_};
    RECTRAIN_RETURN_IF_ERROR(job_.comm->AllGatherV(std::span<const int64_t>(mine), &meta_.rank_rows_in_epoch, nullptr));
  }
  const std::string dir = checkpoints_dir_ + "/step-" + step;
  Phase("the checkpoint at step " + step + " (writing and agreeing)");
  const internal::ModelBundle& b = model_->bundle;
  RECTRAIN_RETURN_IF_ERROR(Agreed(WriteCheckpoint(dir, meta_, b.params, model_->optimizer.get(), b.tables, job_.comm)));
  Status pruned = lead() ? PruneCheckpoints(checkpoints_dir_, c_.train.keep_checkpoints) : OkStatus();
  if (pruned.ok() && lead() && !c_.train.checkpoint_dir.empty()) {
    pruned = internal::UploadCheckpoint(dir, c_.train.checkpoint_dir, c_.train.keep_checkpoints);
    if (pruned.ok()) Log("checkpoint uploaded to " + io::JoinPath(c_.train.checkpoint_dir, "step-" + step));
  }
  RECTRAIN_RETURN_IF_ERROR(Agreed(dist::AgreeOk(*job_.comm, pruned)));
  // Complete on every rank (and in train.checkpoint_dir): a stream may commit its position now.
  data_.source->CheckpointLanded();
  since_checkpoint_.Reset();
  last_checkpoint_step_ = meta_.step;
  summary_.last_checkpoint = dir;
  if (!delta) chain_base_ = "step-" + step;
  chain_length_ = meta_.chain_length;
  last_checkpoint_full_ = !delta;
  Log((delta ? "checkpoint (delta " + std::to_string(meta_.chain_length) + " on " + chain_base_ + ") " : "checkpoint ") +
      dir + " (" + Fixed(sw.Seconds(), 2) + "s)");
  if (opt_.observer != nullptr && lead()) opt_.observer->OnCheckpoint(meta_.step, dir);
  return OkStatus();
}

Status TrainLoop::Finish() {
  log_->EndBar();
  if (stop_status_ == RunOutcome::kInterrupted && progress_->steps() == 0 && !job_.async()) {
    Log("stopped before the first step of this run: nothing trained, no checkpoint written");
    return OkStatus();
  }
  RECTRAIN_RETURN_IF_ERROR(Checkpoint());
  if (publisher_) {
    RECTRAIN_RETURN_IF_ERROR(PublishNow(/*wait=*/true));  // the final state, also of a run stopped by a signal
    if (opt_.observer != nullptr && lead()) opt_.observer->OnFinalPublish(publisher_->figures());
  }
  if (stop_status_ == RunOutcome::kInterrupted) return OkStatus();
  const std::string model_dir = opt_.run_dir + "/model";
  Phase("the publication of the model at step " + std::to_string(meta_.step));
  RECTRAIN_RETURN_IF_ERROR(PublishModel(model_dir));
  summary_.model_dir = model_dir;
  if (!valid_) return OkStatus();
  if (!summary_.has_valid || meta_.last_eval_step != meta_.step) {
    RECTRAIN_RETURN_IF_ERROR(RunEval("final"));
  }
  if (lead() && model_->classes == 1) LogOracle();
  return OkStatus();
}

// RUN_DIR/model/: hard links to the last checkpoint, or, when that is a delta (which needs its
// chain), the model written whole.
Status TrainLoop::PublishModel(const std::string& model_dir) {
  if (!last_checkpoint_full_) {
    CheckpointMeta whole = meta_;
    whole.base.clear();
    whole.previous.clear();
    whole.chain_length = 0;
    const internal::ModelBundle& b = model_->bundle;
    return Agreed(WriteCheckpoint(model_dir, whole, b.params, model_->optimizer.get(), b.tables, job_.comm));
  }
  Status published = lead() ? internal::PublishModelDir(summary_.last_checkpoint, model_dir) : OkStatus();
  return Agreed(dist::AgreeOk(*job_.comm, published));
}

void TrainLoop::LogOracle() {
  std::string note;
  summary_.has_oracle = OracleFromProbFiles(c_.valid_files, valid_->accumulator().labels(), compute_, &summary_.oracle, &note);
  if (summary_.has_oracle) {
    Log("oracle (true probabilities of " + c_.valid_files.front() + ".prob): auc " + Fixed(summary_.oracle.auc, 5) +
        " logloss " + Fixed(summary_.oracle.logloss, 5));
  } else if (!note.empty()) {
    Log("note: " + note);
  }
}

// dist.mode async: a server serves until every worker is done, a worker trains on its own and
// tells the servers when it is done (also after an error, so they need not time out); then
// every rank concludes together.
Status TrainLoop::RunAsync() {
  Status s;
  if (job_.is_server()) {
    double served = 0;
    s = internal::ServeAsServer(c_, job_, model_->bundle, compute_, &served);
    progress_->set_totals(progress_->rows(), served);
  } else {
    s = Loop();
  }
  if (!job_.is_server() && model_->bundle.async_store != nullptr) {
    Status done = model_->bundle.async_store->Finish();
    if (s.ok()) s = done;
  }
  if (!s.ok()) return s;
  internal::AsyncTotals t{progress_->local_rows(), meta_.rows_read_total, local_rows_in_epoch_,
                          progress_->train_seconds(), meta_.step, meta_.epoch};
  RECTRAIN_RETURN_IF_ERROR(Agreed(internal::ConcludeAsync(job_, model_->bundle, &t)));
  progress_->set_totals(t.session_rows, t.session_seconds);
  meta_.rows_read_total = t.rows_read_total;
  meta_.rows_in_epoch = t.rows_in_epoch;
  meta_.step = t.step;
  meta_.epoch = t.epoch;
  Log("async: every worker is done; " + internal::FormatCount(static_cast<double>(t.session_rows)) + " rows in " +
      Fixed(t.session_seconds, 1) + "s by " + std::to_string(job_.workers()) + " workers");
  return OkStatus();
}

void TrainLoop::WriteSummary() {
  summary_.status = stop_status_;
  summary_.steps = meta_.step;
  summary_.rows_read = meta_.rows_read_total;
  summary_.rows_rejected = job_.distributed() ? figures_.rejected : LocalRejected();
  summary_.epochs = meta_.epoch;
  if (progress_) {
    summary_.session_steps = progress_->steps();
    summary_.seconds = progress_->train_seconds();
    summary_.samples_per_sec = summary_.seconds > 0 ? static_cast<double>(progress_->rows()) / summary_.seconds : 0;
  }
  if (model_) summary_.tables = job_.distributed() ? figures_.tables : internal::LocalTableSummaries(model_->bundle);
  summary_.ranks = figures_.ranks;
  summary_.wall_seconds = wall_.Seconds();
  summary_.peak_rss_bytes = internal::PeakRssBytes();
  summary_.world = job_.world();
  summary_.transport = job_.comm->transport_name();
  summary_.data_split = job_.distributed() ? config::DataSplitName(job_.split) : "";
  summary_.object_store = io::RemoteIoTotals();
  if (!lead()) return;
  if (summary_.object_store.requests > 0 && log_) Log("object store: " + summary_.object_store.ToString());
  if (online_) summary_.online = online_->Figures(compute_);
  if (publisher_) summary_.publish = publisher_->figures();
  const std::string path = opt_.run_dir + "/summary.json";
  Status s = internal::WriteSummaryFile(path, summary_);
  if (!s.ok() && log_) Log("warning: cannot write " + path + ": " + s.ToString());
}

Result<TrainSummary> TrainLoop::Run() {
  Status s = SetupLocal();
  if (job_.distributed()) s = Agreed(dist::AgreeOk(*job_.comm, s));
  if (s.ok()) s = SetupTogether();
  if (s.ok() && opt_.observer != nullptr && lead()) {
    progress_->StartReports(opt_.observer->ProgressIntervalSeconds());
    opt_.observer->OnStart(meta_.step);
  }
  if (s.ok()) s = job_.async() ? RunAsync() : Loop();
  if (s.ok()) s = Finish();
  if (s.ok() && job_.distributed()) {
    s = RefreshJobFigures();
    if (s.ok()) LogRanks();
  }
  if (!s.ok()) {
    if (log_) {
      log_->EndBar();
      Log("error: " + s.ToString());
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
  Log(internal::DoneLine(summary_, model_->classes > 1));
  return summary_;
}

}  // namespace

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

}  // namespace rectrain::train
