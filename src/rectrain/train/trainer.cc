#include "rectrain/train/trainer.h"

#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <system_error>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/generator.h"
#include "rectrain/data/reader.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"
#include "rectrain/nn/loss.h"
#include "rectrain/nn/model_config.h"
#include "rectrain/optim/lr_schedule.h"
#include "rectrain/train/checkpoint.h"
#include "rectrain/ps/embedding_store.h"

namespace rectrain::train {
namespace fs = std::filesystem;
namespace {

template <typename T>
Result<T> WithContext(Result<T> r, const std::string& context) {
  if (r.ok()) return r;
  return r.status().WithContext(context);
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

std::string FormatCount(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  } else if (v >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[32];
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s / 60) % 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

std::string Fixed(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// train.log always; stderr as plain lines, or a progress bar that log lines print above.
class RunLogger {
 public:
  RunLogger(const std::string& path, bool echo, bool bar) : echo_(echo), bar_(bar && echo) {
    file_.open(path, std::ios::app);
  }
  ~RunLogger() { EndBar(); }
  bool bar() const { return bar_; }

  void Log(const std::string& line) {
    if (file_) file_ << line << "\n" << std::flush;
    if (!echo_) return;
    if (bar_ && !bar_text_.empty()) {
      std::fprintf(stderr, "\r\033[K%s\n%s", line.c_str(), bar_text_.c_str());
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void Bar(const std::string& text) {
    if (!bar_) return;
    bar_text_ = text;
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
  }
  void EndBar() {
    if (bar_ && !bar_text_.empty()) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      bar_text_.clear();
    }
  }

 private:
  std::ofstream file_;
  bool echo_;
  bool bar_;
  std::string bar_text_;
};

// The model and its tables, built from the config and the reader's field names.
struct ModelBundle {
  std::unique_ptr<nn::Model> model;
  std::vector<std::unique_ptr<embedding::EmbeddingTable>> owned_tables;
  std::vector<embedding::EmbeddingTable*> tables;
  std::vector<optim::ParamRef> params;
};

Result<ModelBundle> BuildModel(const config::TrainConfig& c, const std::vector<std::string>& sparse,
                               int num_dense) {
  ModelBundle b;
  RECTRAIN_ASSIGN_OR_RETURN(b.model, nn::MakeModel(c.model, sparse, num_dense, c.embedding));
  for (const auto& tc : b.model->spec().tables) {
    RECTRAIN_ASSIGN_OR_RETURN(auto table, embedding::MakeEmbeddingTable(tc));
    b.tables.push_back(table.get());
    b.owned_tables.push_back(std::move(table));
  }
  b.params = b.model->Params();
  return b;
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

// The validation split, read in file order on every evaluation: from memory once the first
// evaluation has filled the memory cache (data::EpochSource, data.memory_cache), else from the
// files.
class ValidSet {
 public:
  explicit ValidSet(std::unique_ptr<data::EpochSource> source) : source_(std::move(source)) {}

  // Calls fn(batch) for every batch in file order.
  template <typename Fn>
  Status ForEach(Fn&& fn) {
    RECTRAIN_ASSIGN_OR_RETURN(auto reader, source_->Open(/*epoch=*/0, /*skip_rows=*/0));
    while (true) {
      RECTRAIN_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, reader->Next());
      if (!batch) break;
      RECTRAIN_RETURN_IF_ERROR(fn(*batch));
      reader->Recycle(std::move(*batch));
    }
    return OkStatus();
  }

 private:
  std::unique_ptr<data::EpochSource> source_;
};

// Forward-only pass over `valid`, accumulating predictions into `acc`.
// `downsampling` = data.negative_downsampling of the training data: logits are calibrated by
// data::CalibrateLogit when it is < 1 (validation rows themselves are read with rate 1).
Status EvaluateInto(ModelBundle& bundle, ps::EmbeddingStore& ws, ValidSet& valid,
                    const ComputeContext& compute, MetricAccumulator* acc, double downsampling) {
  acc->Clear();
  std::vector<float> logits, probs;
  return valid.ForEach([&](const data::Batch& batch) -> Status {
    RECTRAIN_RETURN_IF_ERROR(ws.Lookup(batch, embedding::PullMode::kEval, compute));
    logits.resize(batch.size);
    probs.resize(batch.size);
    nn::ForwardInput in{.batch_size = batch.size,
                        .dense = batch.dense,
                        .tables = ws.pulled(),
                        .fields = ws.fields(),
                        .seed = 0};
    RECTRAIN_RETURN_IF_ERROR(bundle.model->Forward(in, /*training=*/false, logits, compute));
    if (downsampling < 1.0) {
      for (float& l : logits) l = static_cast<float>(data::CalibrateLogit(l, downsampling));
    }
    nn::SigmoidCrossEntropy(logits, batch.labels, {}, probs, compute);
    acc->Add(probs, batch.labels, batch.group_keys);
    return OkStatus();
  });
}

std::vector<TableSummary> SummarizeTables(const ModelBundle& b) {
  std::vector<TableSummary> out;
  for (const auto* t : b.tables) {
    const embedding::TableStats s = t->Stats();
    out.push_back({t->config().name, t->dim(), s.rows, s.bytes, s.admissions, s.evictions,
                   s.lookups, s.oov_lookups});
  }
  return out;
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
  auto files = io::ExpandPaths(patterns);
  if (!files.ok() || files->empty()) return 0;
  int64_t total = 0;
  std::error_code ec;
  for (const auto& f : *files) {
    auto size = fs::file_size(f, ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  std::ifstream in(files->front(), std::ios::binary);
  std::string sample(1 << 20, '\0');
  in.read(sample.data(), static_cast<std::streamsize>(sample.size()));
  sample.resize(static_cast<size_t>(in.gcount()));
  const int64_t lines = std::count(sample.begin(), sample.end(), '\n');
  if (lines == 0) return 0;
  return static_cast<int64_t>(static_cast<double>(total) * static_cast<double>(lines) /
                              static_cast<double>(sample.size()));
}

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

class TrainLoop {
 public:
  TrainLoop(const config::LoadedConfig& config, const TrainerOptions& options)
      : lc_(config), c_(config.config), opt_(options) {}

  Result<TrainSummary> Run();

 private:
  Status Setup();
  Status Loop();
  Status Step(const data::Batch& batch);
  Status RunEval(const char* why);
  bool EarlyStopCheck();
  Status Checkpoint();
  void LogProgress(bool force_line);
  Status Finish();
  void WriteSummary();

  const config::LoadedConfig& lc_;
  const config::TrainConfig& c_;
  const TrainerOptions& opt_;
  Stopwatch wall_;
  ComputeContext compute_;
  std::unique_ptr<RunLogger> log_;
  std::shared_ptr<data::MemoryBudget> memory_budget_;  // data.memory_cache_bytes, train + valid
  std::unique_ptr<data::EpochSource> train_source_;
  std::unique_ptr<data::BatchReader> reader_;
  std::vector<std::string> sparse_names_;
  int num_dense_ = 0;
  ModelBundle bundle_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<ps::EmbeddingStore> ws_;
  std::unique_ptr<ValidSet> valid_;
  MetricAccumulator valid_acc_;
  optim::LrScheduleConfig sparse_schedule_;
  CheckpointMeta meta_;
  TrainSummary summary_;
  std::string checkpoints_dir_;
  int64_t last_checkpoint_step_ = -1;
  int64_t rows_per_epoch_ = 0;  // estimated until an epoch completes
  // At the start of the current epoch (this session): for the per-epoch log line.
  double epoch_start_wait_ = 0;
  double epoch_start_seconds_ = 0;
  int64_t epoch_start_rows_ = 0;

  // Step buffers.
  std::vector<float> logits_, dlogits_, probs_;
  // Recent training predictions for the "AUC so far" shown in logs.
  std::vector<float> window_probs_, window_labels_;
  size_t window_pos_ = 0;
  bool window_full_ = false;
  double loss_sum_ = 0;  // since the last log line
  int64_t loss_count_ = 0;
  double last_loss_ = kNaN;
  float last_lr_ = 0;
  double session_seconds_ = 0;  // training loop time, excluding eval/checkpoints
  int64_t session_rows_ = 0;
  int64_t session_steps_ = 0;
  int64_t rows_at_log_ = 0;
  double seconds_at_log_ = 0;
  Stopwatch since_bar_;
  double base_train_seconds_ = 0;  // from earlier sessions (resume)
  int64_t rejected_before_ = 0;     // rejected rows of earlier sessions and finished epochs
  std::string stop_status_ = "completed";

  // Observer reports (options.observer): accumulators since the previous report.
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

Status TrainLoop::Setup() {
  std::error_code ec;
  fs::create_directories(opt_.run_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot create run directory " + opt_.run_dir);
  checkpoints_dir_ = opt_.run_dir + "/checkpoints";
  const bool bar = opt_.progress == 1 || (opt_.progress == -1 && isatty(STDERR_FILENO));
  log_ = std::make_unique<RunLogger>(opt_.run_dir + "/train.log", opt_.echo, bar);

  compute_.num_threads = c_.threads;
  omp_set_num_threads(c_.threads);  // the trainer owns the pool; oneDNN GEMMs follow it

  std::optional<std::string> resume_from;
  if (opt_.resume) {
    auto all = ListCheckpoints(checkpoints_dir_);
    if (all.empty()) {
      return NotFoundError("no checkpoint to resume in " + checkpoints_dir_ +
                           " (start a new run without --resume)");
    }
    resume_from = all.back().second;
    RECTRAIN_ASSIGN_OR_RETURN(meta_, ReadCheckpointMeta(*resume_from));
  }
  {
    RECTRAIN_ASSIGN_OR_RETURN(auto w, io::AtomicFileWriter::Create(opt_.run_dir + "/config.yaml"));
    RECTRAIN_RETURN_IF_ERROR(w->Append(lc_.resolved_yaml));
    RECTRAIN_RETURN_IF_ERROR(w->Commit());
  }
  log_->Log(std::string(opt_.resume ? "resuming" : "starting") + " run in " + opt_.run_dir +
            ": model " + c_.model.type + ", " + std::to_string(c_.threads) + " threads, batch " +
            std::to_string(c_.read.batch_size) + (c_.deterministic ? ", deterministic" : ""));
  if (c_.model_precision_auto) {
    log_->Log(c_.model.precision == nn::GemmPrecision::kBf16
                  ? "model.precision: auto -> bf16 (this CPU has AVX512_BF16)"
                  : "model.precision: auto -> fp32 (this CPU has no AVX512_BF16)");
  }

  // The first epoch's reader gives the field names the model needs.
  data::DataConfig train_data = c_.data;
  train_data.files = c_.train_files;
  data::ReadOptions ro = c_.read;
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
    if (train_epoch.memory_cache == data::MemoryCacheMode::kAuto &&
        train_epoch.shuffle != data::ShuffleMode::kGlobal) {
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
  ro.epoch = meta_.epoch;
  ro.skip_rows = meta_.rows_in_epoch;
  if (meta_.epoch < c_.train.epochs) {
    RECTRAIN_ASSIGN_OR_RETURN(reader_, WithContext(train_source_->Open(meta_.epoch, meta_.rows_in_epoch), "data.train"));
    sparse_names_ = reader_->sparse_names();
    num_dense_ = static_cast<int>(reader_->dense_names().size());
  } else {
    data::ReadOptions probe = ro;
    probe.skip_rows = 0;
    probe.epoch = 0;
    RECTRAIN_ASSIGN_OR_RETURN(auto r, WithContext(data::OpenBatchReader(train_data, probe), "data.train"));
    sparse_names_ = r->sparse_names();
    num_dense_ = static_cast<int>(r->dense_names().size());
  }
  rows_per_epoch_ = EstimateRows(c_.train_files);
  if (train_data.cache != "off") log_->Log(CacheLine("data.train", train_data));

  RECTRAIN_ASSIGN_OR_RETURN(bundle_, BuildModel(c_, sparse_names_, num_dense_));
  RECTRAIN_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(c_.optimizer));
  RECTRAIN_RETURN_IF_ERROR(optimizer_->Init(bundle_.params)) << "while initialising the optimizer";
  ws_ = ps::MakeLocalStore(bundle_.model->spec(), bundle_.tables);
  sparse_schedule_ = c_.SparseLrSchedule();

  if (resume_from) {
    RECTRAIN_ASSIGN_OR_RETURN(
        meta_, WithContext(ReadCheckpoint(*resume_from, bundle_.params, optimizer_.get(), bundle_.tables),
                           "while resuming from " + *resume_from));
    if (meta_.model_type != c_.model.type) {
      return InvalidArgumentError("checkpoint " + *resume_from + " holds a " + meta_.model_type +
                                  " model but model.type is " + c_.model.type);
    }
    if (meta_.config_hash != lc_.hash) {
      log_->Log("note: the configuration differs from the checkpoint's (resuming with changed settings)");
    }
    last_checkpoint_step_ = meta_.step;
    summary_.last_checkpoint = *resume_from;
    base_train_seconds_ = meta_.train_seconds;
    rejected_before_ = meta_.rows_rejected_total;
    log_->Log("resumed from " + *resume_from + " at step " + std::to_string(meta_.step) +
              ", epoch " + std::to_string(meta_.epoch) + ", row " + std::to_string(meta_.rows_in_epoch));
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
    valid_ = std::make_unique<ValidSet>(std::move(vsource));
  }
  const size_t window = 1 << 17;
  window_probs_.assign(window, 0.0f);
  window_labels_.assign(window, 0.0f);
  return OkStatus();
}

Status TrainLoop::Step(const data::Batch& batch) {
  const int64_t step = meta_.step;
  PhaseSeconds& t = summary_.breakdown;
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(ws_->Lookup(batch, embedding::PullMode::kTrain, compute_))
      << "at step " << step;
  t.lookup += sw.Seconds();

  sw.Reset();
  const size_t n = static_cast<size_t>(batch.size);
  logits_.resize(n);
  dlogits_.resize(n);
  probs_.resize(n);
  nn::ForwardInput in{.batch_size = batch.size,
                      .dense = batch.dense,
                      .tables = ws_->pulled(),
                      .fields = ws_->fields(),
                      .seed = DeriveSeed(c_.seed, static_cast<uint64_t>(step))};
  RECTRAIN_RETURN_IF_ERROR(bundle_.model->Forward(in, /*training=*/true, logits_, compute_))
      << "at step " << step;
  const double loss = nn::SigmoidCrossEntropy(logits_, batch.labels, dlogits_, probs_, compute_);
  t.forward += sw.Seconds();

  sw.Reset();
  RECTRAIN_RETURN_IF_ERROR(bundle_.model->Backward(dlogits_, ws_->grads(), compute_))
      << "at step " << step;
  t.backward += sw.Seconds();

  sw.Reset();
  const optim::StepContext sparse_ctx{.step = step,
                                      .learning_rate = optim::ScheduledLr(sparse_schedule_, step)};
  RECTRAIN_RETURN_IF_ERROR(ws_->Push(sparse_ctx, compute_)) << "at step " << step;
  t.sparse_update += sw.Seconds();

  sw.Reset();
  last_lr_ = optim::ScheduledLr(c_.lr_schedule, step);
  const optim::StepContext dense_ctx{.step = step, .learning_rate = last_lr_};
  RECTRAIN_RETURN_IF_ERROR(optimizer_->Update(dense_ctx, bundle_.params, compute_))
      << "at step " << step;
  t.dense_update += sw.Seconds();

  if (!std::isfinite(loss)) {
    return Status(StatusCode::kAborted,
                  "training diverged: the loss is " + Fixed(loss, 4) + " at step " +
                      std::to_string(step) + "; lower optimizer.lr (" + Fixed(last_lr_, 6) +
                      ") or embedding.optimizer.lr, or add optimizer.warmup_steps");
  }
  loss_sum_ += loss;
  ++loss_count_;
  report_loss_sum_ += loss;
  ++report_loss_count_;
  last_loss_ = loss;
  for (size_t i = 0; i < n; ++i) {
    window_probs_[window_pos_] = probs_[i];
    window_labels_[window_pos_] = batch.labels[i];
    if (++window_pos_ == window_probs_.size()) {
      window_pos_ = 0;
      window_full_ = true;
    }
  }
  ++meta_.step;
  meta_.rows_in_epoch += batch.size;
  meta_.rows_read_total += batch.size;
  session_rows_ += batch.size;
  ++session_steps_;
  return OkStatus();
}

double TrainLoop::TrainAuc() {
  const size_t wn = window_full_ ? window_probs_.size() : window_pos_;
  return ExactAuc(std::span<const float>(window_probs_.data(), wn),
                  std::span<const float>(window_labels_.data(), wn), compute_);
}

// Hands a ProgressInfo to the observer (train/observer.h).
void TrainLoop::Report(bool log_line) {
  if (opt_.observer == nullptr) return;
  ProgressInfo p;
  p.step = meta_.step;
  p.epoch = meta_.epoch;
  p.rows_read = meta_.rows_read_total;
  p.rows_rejected = rejected_before_ + (reader_ ? reader_->Stats().rows_rejected : 0);
  p.loss = report_loss_count_ ? report_loss_sum_ / static_cast<double>(report_loss_count_) : last_loss_;
  p.train_auc = TrainAuc();
  const double window_s = session_seconds_ - seconds_at_report_;
  p.samples_per_sec = window_s > 0 ? static_cast<double>(session_rows_ - rows_at_report_) / window_s : 0;
  p.learning_rate = last_lr_;
  p.data_wait_seconds = summary_.breakdown.data_wait;
  p.queue_depth = reader_ ? reader_->Stats().queue_depth : 0;
  p.train_seconds = session_seconds_;
  p.tables = SummarizeTables(bundle_);
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
  const double train_auc = TrainAuc();
  const double elapsed = session_seconds_;
  const double rate = elapsed > 0 ? static_cast<double>(session_rows_) / elapsed : 0;
  // Progress fraction from rows (epochs) and steps (max_steps), whichever is further.
  double frac = 0;
  if (rows_per_epoch_ > 0) {
    const double in_epoch = std::min(0.999, static_cast<double>(meta_.rows_in_epoch) /
                                                static_cast<double>(rows_per_epoch_));
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
    const double window_rate =
        window_s > 0 ? static_cast<double>(session_rows_ - rows_at_log_) / window_s : rate;
    log_->Log("step " + std::to_string(meta_.step) + " | epoch " + std::to_string(meta_.epoch) +
              " | " + FormatCount(static_cast<double>(meta_.rows_read_total)) + " rows | loss " +
              Fixed(mean_loss, 4) + " | train auc " + Fixed(train_auc, 4) + " | lr " +
              Fixed(last_lr_, 6) + " | " + FormatCount(window_rate) + " samples/s | ETA " +
              FormatDuration(eta));
    loss_sum_ = 0;
    loss_count_ = 0;
    rows_at_log_ = session_rows_;
    seconds_at_log_ = session_seconds_;
  } else {
    const int width = 20;
    const int filled = static_cast<int>(frac * width);
    std::string bar = "[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] ";
    log_->Bar(bar + std::to_string(static_cast<int>(frac * 100)) + "% step " +
              std::to_string(meta_.step) + " | " + FormatCount(rate) + " samples/s | loss " +
              Fixed(last_loss_, 4) + " | auc " + Fixed(train_auc, 4) + " | ETA " +
              FormatDuration(eta));
  }
}

Status TrainLoop::RunEval(const char* why) {
  if (!valid_) return OkStatus();
  Stopwatch sw;
  RECTRAIN_RETURN_IF_ERROR(EvaluateInto(bundle_, *ws_, *valid_, compute_, &valid_acc_,
                                        c_.data.negative_downsampling))
      << "while evaluating data.valid";
  summary_.valid = valid_acc_.Compute(compute_, c_.eval.gauc);
  summary_.has_valid = true;
  meta_.last_eval_step = meta_.step;
  const EvalMetrics& m = summary_.valid;
  std::string line = std::string("eval (") + why + ") @ step " + std::to_string(meta_.step) +
                     ": auc " + Fixed(m.auc, 5) + " logloss " + Fixed(m.logloss, 5);
  if (c_.eval.gauc) line += " gauc " + Fixed(m.gauc, 5);
  line += " calibration " + Fixed(m.calibration, 3) + " ne " + Fixed(m.ne, 4) + " (" +
          std::to_string(m.rows) + " rows, " + Fixed(sw.Seconds(), 1) + "s)";
  log_->Log(line);
  if (opt_.observer != nullptr) opt_.observer->OnEval(meta_.step, m);
  return OkStatus();
}

// Updates the early-stopping state from the latest evaluation; true when training should stop.
bool TrainLoop::EarlyStopCheck() {
  const auto& es = c_.train.early_stopping;
  const bool higher_better = es.metric == "auc";
  const double v = higher_better ? summary_.valid.auc : summary_.valid.logloss;
  const bool improved = std::isnan(meta_.best_metric) ||
                        (higher_better ? v > meta_.best_metric + es.min_delta
                                       : v < meta_.best_metric - es.min_delta);
  if (improved && !std::isnan(v)) {
    meta_.best_metric = v;
    meta_.best_step = meta_.step;
    meta_.evals_without_improvement = 0;
  } else {
    ++meta_.evals_without_improvement;
  }
  if (es.patience > 0 && meta_.evals_without_improvement >= es.patience) {
    log_->Log("early stopping: " + es.metric + " has not improved by more than " +
              Fixed(es.min_delta, 6) + " for " + std::to_string(es.patience) +
              " evaluations (best " + Fixed(meta_.best_metric, 5) + " at step " +
              std::to_string(meta_.best_step) + ")");
    return true;
  }
  return false;
}

Status TrainLoop::Checkpoint() {
  if (last_checkpoint_step_ == meta_.step && !summary_.last_checkpoint.empty()) return OkStatus();
  Stopwatch sw;
  meta_.train_seconds = base_train_seconds_ + session_seconds_;
  meta_.rows_rejected_total = rejected_before_ + (reader_ ? reader_->Stats().rows_rejected : 0);
  const std::string dir = checkpoints_dir_ + "/step-" + std::to_string(meta_.step);
  RECTRAIN_RETURN_IF_ERROR(WriteCheckpoint(dir, meta_, bundle_.params, optimizer_.get(), bundle_.tables));
  RECTRAIN_RETURN_IF_ERROR(PruneCheckpoints(checkpoints_dir_, c_.train.keep_checkpoints));
  last_checkpoint_step_ = meta_.step;
  summary_.last_checkpoint = dir;
  log_->Log("checkpoint " + dir + " (" + Fixed(sw.Seconds(), 2) + "s)");
  if (opt_.observer != nullptr) opt_.observer->OnCheckpoint(meta_.step, dir);
  return OkStatus();
}

Status TrainLoop::Loop() {
  const auto& tc = c_.train;
  auto stop_requested = [&]() {
    return opt_.stop_signal != nullptr && opt_.stop_signal->load(std::memory_order_relaxed) != 0;
  };
  bool done = tc.max_steps > 0 && meta_.step >= tc.max_steps;
  while (!done && meta_.epoch < tc.epochs) {
    if (!reader_) {
      RECTRAIN_ASSIGN_OR_RETURN(reader_, WithContext(train_source_->Open(meta_.epoch, meta_.rows_in_epoch), "data.train"));
    }
    epoch_start_wait_ = summary_.breakdown.data_wait;
    epoch_start_seconds_ = session_seconds_;
    epoch_start_rows_ = session_rows_;
    bool epoch_ended = false;
    Stopwatch loop_clock;
    while (true) {
      Stopwatch wait;
      auto next = reader_->Next();
      summary_.breakdown.data_wait += wait.Seconds();
      if (!next.ok()) return next.status();
      if (!next->has_value()) {
        epoch_ended = true;
        break;
      }
      RECTRAIN_RETURN_IF_ERROR(Step(**next));
      reader_->Recycle(std::move(**next));  // reuse its buffers for a later batch
      session_seconds_ += loop_clock.Seconds();
      loop_clock.Reset();
      if (meta_.step % tc.log_every_steps == 0) {
        LogProgress(/*force_line=*/true);
        Report(/*log_line=*/true);
      } else {
        if (log_->bar() && since_bar_.Seconds() > 1.0) {
          LogProgress(/*force_line=*/false);
          since_bar_.Reset();
        }
        if (report_interval_s_ > 0 && since_report_.Seconds() >= report_interval_s_) {
          Report(/*log_line=*/false);
        }
      }
      if (tc.eval_every_steps > 0 && meta_.step % tc.eval_every_steps == 0 && valid_) {
        RECTRAIN_RETURN_IF_ERROR(RunEval("every eval_every_steps"));
        if (EarlyStopCheck()) {
          stop_status_ = "early_stopped";
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
      if (!done && stop_requested()) {
        stop_status_ = "interrupted";
        summary_.interrupted_by = opt_.stop_signal->load();
        done = true;
      }
      loop_clock.Reset();
      if (done) break;
    }
    session_seconds_ += loop_clock.Seconds();
    if (!epoch_ended) break;
    // The epoch is complete.
    rejected_before_ += reader_->Stats().rows_rejected;
    reader_.reset();
    const int64_t finished_epoch = meta_.epoch;
    if (meta_.rows_in_epoch > 0) rows_per_epoch_ = meta_.rows_in_epoch;
    ++meta_.epoch;
    meta_.rows_in_epoch = 0;
    const double epoch_seconds = session_seconds_ - epoch_start_seconds_;
    log_->Log("epoch " + std::to_string(finished_epoch) + " done at step " + std::to_string(meta_.step) +
              " (this session: data wait " + Fixed(summary_.breakdown.data_wait - epoch_start_wait_, 2) + "s, " +
              FormatCount(epoch_seconds > 0 ? static_cast<double>(session_rows_ - epoch_start_rows_) / epoch_seconds : 0) +
              " samples/s" + (train_source_->cached() ? ", data.train in memory" : "") + ")");
    if (valid_ && meta_.last_eval_step != meta_.step) {
      RECTRAIN_RETURN_IF_ERROR(RunEval("end of epoch"));
      if (EarlyStopCheck()) {
        stop_status_ = "early_stopped";
        done = true;
      }
    }
    if (!done && stop_requested()) {
      stop_status_ = "interrupted";
      summary_.interrupted_by = opt_.stop_signal->load();
      done = true;
    }
  }
  // The last steps since the previous report, so the recorded curves reach the final step.
  if (session_steps_ > 0 && step_at_report_ != meta_.step) Report(/*log_line=*/true);
  return OkStatus();
}

Status TrainLoop::Finish() {
  log_->EndBar();
  RECTRAIN_RETURN_IF_ERROR(Checkpoint());
  if (stop_status_ == "interrupted") return OkStatus();
  const std::string model_dir = opt_.run_dir + "/model";
  RECTRAIN_RETURN_IF_ERROR(PublishModelDir(summary_.last_checkpoint, model_dir));
  summary_.model_dir = model_dir;
  if (valid_) {
    if (!summary_.has_valid || meta_.last_eval_step != meta_.step) {
      RECTRAIN_RETURN_IF_ERROR(RunEval("final"));
    }
    std::string note;
    summary_.has_oracle =
        OracleFromProbFiles(c_.valid_files, valid_acc_.labels(), compute_, &summary_.oracle, &note);
    if (summary_.has_oracle) {
      log_->Log("oracle (true probabilities of " + c_.valid_files.front() + ".prob): auc " +
                Fixed(summary_.oracle.auc, 5) + " logloss " + Fixed(summary_.oracle.logloss, 5));
    } else if (!note.empty()) {
      log_->Log("note: " + note);
    }
  }
  return OkStatus();
}

void TrainLoop::WriteSummary() {
  summary_.status = stop_status_;
  summary_.steps = meta_.step;
  summary_.session_steps = session_steps_;
  summary_.rows_read = meta_.rows_read_total;
  summary_.rows_rejected = rejected_before_ + (reader_ ? reader_->Stats().rows_rejected : 0);
  summary_.epochs = meta_.epoch;
  summary_.seconds = session_seconds_;
  summary_.samples_per_sec =
      session_seconds_ > 0 ? static_cast<double>(session_rows_) / session_seconds_ : 0;
  if (bundle_.model) summary_.tables = SummarizeTables(bundle_);
  summary_.wall_seconds = wall_.Seconds();
  summary_.peak_rss_bytes = PeakRssBytes();
  const std::string path = opt_.run_dir + "/summary.json";
  auto w = io::AtomicFileWriter::Create(path);
  if (w.ok()) {
    Status s = (*w)->Append(SummaryJson(summary_));
    if (s.ok()) s = (*w)->Commit();
    if (!s.ok() && log_) log_->Log("warning: cannot write " + path + ": " + s.ToString());
  }
}

Result<TrainSummary> TrainLoop::Run() {
  Status s = Setup();
  if (s.ok() && opt_.observer != nullptr) {
    report_interval_s_ = opt_.observer->ProgressIntervalSeconds();
    opt_.observer->OnStart(meta_.step);
    since_report_.Reset();
  }
  if (s.ok()) s = Loop();
  if (s.ok()) s = Finish();
  if (!s.ok()) {
    if (log_) {
      log_->EndBar();
      log_->Log("error: " + s.ToString());
      stop_status_ = "failed";
      summary_.error = s.ToString();
      WriteSummary();
    }
    return s;
  }
  WriteSummary();
  const TrainSummary& r = summary_;
  std::string line = "done: " + r.status + ", " + std::to_string(r.steps) + " steps, " +
                     FormatCount(r.samples_per_sec) + " samples/s";
  if (r.has_valid) line += ", valid auc " + Fixed(r.valid.auc, 5) + " logloss " + Fixed(r.valid.logloss, 5);
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
  std::error_code ec;
  int with_prob = 0;
  for (const auto& f : *files) with_prob += fs::exists(f + ".prob", ec) ? 1 : 0;
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
  j["status"] = s.status;
  if (s.status == "interrupted") j["interrupted_by_signal"] = s.interrupted_by;
  if (!s.error.empty()) j["error"] = s.error;
  j["train"] = {
      {"samples_per_sec", s.samples_per_sec},
      {"steps", s.steps},
      {"session_steps", s.session_steps},
      {"rows_read", s.rows_read},
      {"rows_rejected", s.rows_rejected},
      {"epochs", s.epochs},
      {"seconds", s.seconds},
      {"breakdown",
       {{"data_wait_s", s.breakdown.data_wait},
        {"lookup_s", s.breakdown.lookup},
        {"forward_s", s.breakdown.forward},
        {"backward_s", s.breakdown.backward},
        {"sparse_update_s", s.breakdown.sparse_update},
        {"dense_update_s", s.breakdown.dense_update}}},
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
  j["wall_seconds"] = s.wall_seconds;
  j["peak_rss_bytes"] = s.peak_rss_bytes;
  if (!s.last_checkpoint.empty()) j["checkpoint"] = s.last_checkpoint;
  if (!s.model_dir.empty()) j["model"] = s.model_dir;
  return j.dump(2) + "\n";
}

Result<TrainSummary> Train(const config::LoadedConfig& config, const TrainerOptions& options) {
  if (options.run_dir.empty()) return InvalidArgumentError("a run directory is required (--run-dir DIR)");
  TrainLoop loop(config, options);
  return loop.Run();
}

Result<EvalReport> EvaluateRun(const EvalOptions& options) {
  Stopwatch sw;
  const std::string model_dir = options.run_dir + "/model";
  std::error_code ec;
  if (!fs::exists(model_dir + "/meta.json", ec)) {
    return NotFoundError("no trained model in " + model_dir +
                         " (train first: rectrain train CONFIG --run-dir " + options.run_dir + ")");
  }
  RECTRAIN_ASSIGN_OR_RETURN(config::LoadedConfig lc,
                            config::LoadTrainConfig(options.run_dir + "/config.yaml", {}));
  config::TrainConfig& c = lc.config;
  if (options.threads > 0) c.threads = options.threads;
  ComputeContext compute{.num_threads = c.threads};
  omp_set_num_threads(c.threads);
  data::DataConfig dc = c.data;
  dc.files = options.files;
  dc.negative_downsampling = 1.0;  // evaluate on every row; logits are calibrated instead
  if (!options.group_key.empty()) dc.schema.group_key = options.group_key;
  data::ReadOptions ro = c.read;
  ro.shuffle = false;
  ro.epoch = 0;
  ro.skip_rows = 0;
  if (c.eval.batch_size > 0) ro.batch_size = c.eval.batch_size;
  // Field names come from the reader of the evaluated data (same schema as training).
  RECTRAIN_ASSIGN_OR_RETURN(auto probe, WithContext(data::OpenBatchReader(dc, ro), "--data"));
  std::vector<std::string> sparse = probe->sparse_names();
  const int num_dense = static_cast<int>(probe->dense_names().size());
  const std::string data_source = probe->cache_note();
  probe.reset();
  RECTRAIN_ASSIGN_OR_RETURN(ModelBundle bundle, BuildModel(c, sparse, num_dense));
  RECTRAIN_RETURN_IF_ERROR(ReadCheckpoint(model_dir, bundle.params, nullptr, bundle.tables).status())
      << "while loading " << model_dir;
  std::unique_ptr<ps::EmbeddingStore> store = ps::MakeLocalStore(bundle.model->spec(), bundle.tables);
  data::EpochOptions eo;
  eo.shuffle = data::ShuffleMode::kOff;
  eo.memory_cache = data::MemoryCacheMode::kOff;  // one pass
  RECTRAIN_ASSIGN_OR_RETURN(auto source, data::EpochSource::Create(dc, ro, eo, std::make_shared<data::MemoryBudget>(0),
                                                                  "--data", {}));
  ValidSet data(std::move(source));
  MetricAccumulator acc;
  RECTRAIN_RETURN_IF_ERROR(EvaluateInto(bundle, *store, data, compute, &acc, c.data.negative_downsampling)) << "while evaluating";
  EvalReport report;
  report.data_source = data_source;
  report.gauc_requested = !dc.schema.group_key.empty();
  report.metrics = acc.Compute(compute, report.gauc_requested);
  report.has_oracle = OracleFromProbFiles(options.files, acc.labels(), compute, &report.oracle,
                                          &report.oracle_note);
  report.seconds = sw.Seconds();
  return report;
}

}  // namespace rectrain::train
