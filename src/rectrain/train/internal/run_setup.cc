#include "rectrain/train/internal/run_setup.h"

#include <algorithm>
#include <cmath>

#include "rectrain/data/cache.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/io/file.h"
#include "rectrain/train/internal/epoch_resume.h"
#include "rectrain/train/internal/run_log.h"

namespace rectrain::train::internal {
using checkpoint::CheckpointMeta;
using checkpoint::ListCheckpoints;
using checkpoint::ReadCheckpoint;
using checkpoint::ReadCheckpointMeta;
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
  return split + ": no sample cache matches (data.cache: " + data::kCacheModes.Name(d.cache) + "); parsing the files" +
         (d.cache == data::CacheMode::kBuild ? " (the cache is written on the first pass)"
                             : " (`rectrain data cache CONFIG` builds one)");
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

// data.train's files, the reading options of this rank (its units and its share of the global
// batch in shards mode or as an asynchronous worker) and its epoch options.
struct TrainReading {
  data::DataConfig data;
  data::ReadOptions read;
  data::EpochOptions epoch;
};

TrainReading TrainReadingOf(const config::TrainConfig& c, const Job& job, const RunScale& scale, const LogFn& log) {
  TrainReading t{c.data, c.read, c.epoch};
  t.data.files = c.train_files;
  t.read.batch_size = scale.global_batch;
  if (job.async() && !job.is_server()) {
    // Each worker reads its units of every pass; the workers' batches add up to the global one.
    t.read.rank = job.rank();
    t.read.world = job.workers();
    t.read.batch_size = std::max<int64_t>(1, data::SliceOfBatch(scale.global_batch, job.rank(), job.workers()).size());
  } else if (job.distributed() && job.split == config::DataSplit::kShards && !job.async()) {
    // Each rank reads its units of every pass, in batches of its share of the global batch.
    t.read.rank = job.rank();
    t.read.world = job.world();
    t.read.batch_size = std::max<int64_t>(1, data::SliceOfBatch(scale.global_batch, job.rank(), job.world()).size());
  }
  t.epoch.epochs = c.train.epochs;  // auto: the last pass is not copied into memory
  if (c.deterministic) {
    // `auto` decides from the machine's state (free memory for the epoch cache, whether a sample
    // cache happens to exist), and each choice gives a different shuffle order after epoch 0.
    // deterministic: true pins them so the run depends only on its config: data.train is
    // re-read from its files every epoch unless the config asks for memory (on, or global
    // shuffle) or a sample cache (build) explicitly. Validation is read in file order, where
    // every source gives the same batches, so it keeps `auto`.
    if (t.epoch.memory_cache == data::MemoryCacheMode::kAuto && t.epoch.shuffle != data::ShuffleMode::kGlobal) {
      t.epoch.memory_cache = data::MemoryCacheMode::kOff;
      log("deterministic: data.memory_cache auto -> off for data.train");
    }
    if (t.data.cache == data::CacheMode::kAuto) {
      t.data.cache = data::CacheMode::kOff;
      log("deterministic: data.cache auto -> off for data.train");
    }
  }
  return t;
}

// data.train read from its files (see TrainSource).
class FileTrainSource final : public TrainSource {
 public:
  FileTrainSource(std::unique_ptr<data::EpochSource> source, const Job& job, EpochStart start, StreamOpener open)
      : source_(std::move(source)), job_(job), start_(std::move(start)), open_(std::move(open)) {}

  Result<std::unique_ptr<data::BatchReader>> OpenPass(int64_t epoch) override {
    std::unique_ptr<data::BatchReader> reader;
    if (start_.replay) {
      // The rest of an epoch planned for another number of ranks (internal/epoch_resume.h).
      RECTRAIN_ASSIGN_OR_RETURN(reader, OpenReplay(start_, epoch, open_));
      if (job_.distributed()) reader = data::SliceBatches(std::move(reader), job_.rank(), job_.world());
    } else {
      RECTRAIN_ASSIGN_OR_RETURN(reader, WithContext(source_->Open(epoch, start_.skip), "data.train"));
      if (job_.distributed() && job_.split == config::DataSplit::kBatches) {
        reader = data::SliceBatches(std::move(reader), job_.rank(), job_.world());
      }
    }
    start_.skip = 0;  // later passes start at their beginning
    return reader;
  }
  void EndPass() override { start_ = EpochStart(); }  // a replay ends with its epoch
  Status SavePosition(CheckpointMeta* meta) override {
    meta->plan_world = start_.replay ? start_.plan_world : 0;
    meta->plan_rows = start_.replay ? start_.plan_rows : std::vector<int64_t>();
    return OkStatus();
  }
  bool in_memory() const override { return source_->cached(); }

 private:
  std::unique_ptr<data::EpochSource> source_;
  Job job_;
  EpochStart start_;
  StreamOpener open_;
};

// Where this rank's first pass starts. An asynchronous worker reads its own units; on another
// number of workers it re-plans the rest of the epoch.
Result<EpochStart> FirstPassStart(const Job& job, const CheckpointMeta& at, const LogFn& log) {
  EpochStart start;
  if (job.async()) {
    start.skip = at.rows_in_epoch;
    if (at.world == job.world() && static_cast<int>(at.rank_rows_in_epoch.size()) == job.world()) {
      start.skip = at.rank_rows_in_epoch[static_cast<size_t>(job.rank())];
    } else if (at.rows_in_epoch > 0) {
      start.skip = at.rows_in_epoch / job.workers();
      log("note: the checkpoint was written by " + std::to_string(at.world) + " rank(s) mid-epoch; the rest of "
          "epoch " + std::to_string(at.epoch) + " is re-planned for " + std::to_string(job.workers()) +
          " asynchronous workers and each skips " + std::to_string(start.skip) + " rows of its new share "
          "(some rows may be seen twice or not at all in this epoch)");
    }
    return start;
  }
  const bool shards = job.distributed() && job.split == config::DataSplit::kShards;
  RECTRAIN_ASSIGN_OR_RETURN(start, PlanEpochStart(at, shards ? job.world() : 1, shards ? job.rank() : 0));
  if (!start.note.empty()) log(start.note);
  return start;
}

}  // namespace

RunScale ScaleOf(const config::TrainConfig& c, int world) {
  RunScale s;
  s.global_batch = c.read.batch_size * (c.dist.batch_per_rank ? world : 1);
  if (c.dist.lr_scaling == config::LrScaling::kLinear) s.lr_factor = world;
  if (c.dist.lr_scaling == config::LrScaling::kSqrt) s.lr_factor = std::sqrt(static_cast<double>(world));
  return s;
}

std::vector<std::string> StartLines(const config::TrainConfig& c, const Job& job, const RunScale& scale, bool resume,
                                    const std::string& run_dir) {
  std::vector<std::string> lines;
  lines.push_back(std::string(resume ? "resuming" : "starting") + " run in " + run_dir + ": model " + c.model.type + ", " +
                  std::to_string(c.threads) + " threads, batch " + std::to_string(c.read.batch_size) +
                  (c.deterministic ? ", deterministic" : ""));
  const std::string ranks = "job: " + std::to_string(job.world()) + " ranks over " + job.comm->transport_name();
  if (job.async()) {
    lines.push_back(ranks + ", dist.mode async: " + std::to_string(job.workers()) + " workers, " +
                    std::to_string(job.servers) + " parameter servers (ranks " + std::to_string(job.workers()) + ".." +
                    std::to_string(job.world() - 1) + "), dist.staleness " + std::to_string(c.dist.staleness) +
                    "; logs show worker 0's progress");
  } else if (job.distributed()) {
    lines.push_back(ranks + ", dist.data_split " + config::DataSplitName(job.split) + " (data.batch_size " +
                    std::to_string(c.read.batch_size) + " is the global batch), dist.timeout_s " + Fixed(c.dist.timeout_s, 0));
  }
  if (c.model_precision_auto) {
    lines.push_back(c.model.precision == nn::GemmPrecision::kBf16 ? "model.precision: auto -> bf16 (this CPU has AVX512_BF16)"
                                                                  : "model.precision: auto -> fp32 (this CPU has no AVX512_BF16)");
  }
  if (c.dist.batch_per_rank || scale.lr_factor != 1.0) {
    lines.push_back("dist: global batch " + std::to_string(scale.global_batch) + " (" + std::to_string(job.world()) +
                    " ranks), learning rates x " + Fixed(scale.lr_factor, 3) + " (dist.lr_scaling)");
  }
  return lines;
}

Result<ResumePoint> FindResumePoint(const std::string& checkpoints_dir, bool resume) {
  ResumePoint p;
  if (!resume) return p;
  auto all = ListCheckpoints(checkpoints_dir);
  if (all.empty()) {
    return NotFoundError("no checkpoint to resume in " + checkpoints_dir + " (start a new run without --resume)");
  }
  p.dir = all.back().second;
  RECTRAIN_ASSIGN_OR_RETURN(p.meta, ReadCheckpointMeta(*p.dir));
  return p;
}

Result<TrainData> OpenTrainData(const config::TrainConfig& c, const Job& job, const RunScale& scale,
                                const CheckpointMeta& at, std::shared_ptr<data::MemoryBudget> budget, const LogFn& log) {
  const TrainReading t = TrainReadingOf(c, job, scale, log);
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::EpochSource> source,
                            WithContext(data::EpochSource::Create(t.data, t.read, t.epoch, budget, "data.train", log),
                                        "data.train"));
  RECTRAIN_ASSIGN_OR_RETURN(EpochStart start, FirstPassStart(job, at, log));
  // A replay reads the old plan's streams in global batches, with the epoch options of data.train.
  StreamOpener open = [t, scale, budget, log](int rank, int world, int64_t epoch, int64_t skip) -> Result<OpenedStream> {
    data::ReadOptions o = t.read;
    o.batch_size = scale.global_batch;
    o.rank = rank;
    o.world = world;
    OpenedStream out;
    RECTRAIN_ASSIGN_OR_RETURN(out.source, WithContext(data::EpochSource::Create(t.data, o, t.epoch, budget, "data.train", log),
                                                      "data.train"));
    RECTRAIN_ASSIGN_OR_RETURN(out.reader, WithContext(out.source->Open(epoch, skip), "data.train"));
    return out;
  };
  TrainData d;
  d.local_rows_done = start.replay ? 0 : start.skip;
  d.source = std::make_unique<FileTrainSource>(std::move(source), job, std::move(start), std::move(open));
  if (at.epoch < c.train.epochs && !job.is_server()) {
    RECTRAIN_ASSIGN_OR_RETURN(d.first_pass, d.source->OpenPass(at.epoch));
    d.sparse_names = d.first_pass->sparse_names();
    d.dense_names = d.first_pass->dense_names();
  } else {  // a finished run, or a server: the fields only
    RECTRAIN_ASSIGN_OR_RETURN(auto r, WithContext(data::OpenBatchReader(t.data, c.read), "data.train"));
    d.sparse_names = r->sparse_names();
    d.dense_names = r->dense_names();
  }
  d.rows_per_epoch = EstimateRows(c.train_files);
  if (t.data.cache != data::CacheMode::kOff) log(CacheLine("data.train", t.data));
  return d;
}

Result<std::unique_ptr<RunModel>> BuildRunModel(const config::TrainConfig& c, const TrainData& data, const Job& job,
                                                const LogFn& log) {
  auto m = std::make_unique<RunModel>();
  RECTRAIN_ASSIGN_OR_RETURN(m->bundle, BuildModel(c, data.sparse_names, data.dense_names, job));
  RECTRAIN_ASSIGN_OR_RETURN(m->optimizer, optim::MakeOptimizer(c.optimizer));
  RECTRAIN_RETURN_IF_ERROR(m->optimizer->Init(m->bundle.params)) << "while initialising the optimizer";
  m->runner = std::make_unique<StepRunner>(&m->bundle, m->optimizer.get(), job, c.train.accumulate_steps);
  // A multi-task model reports its first task (the label) where a CTR model reports its one.
  m->classes = m->bundle.model->num_tasks() > 1 ? 1 : m->bundle.model->num_outputs();
  if (c.train.accumulate_steps > 1) {
    log("train.accumulate_steps " + std::to_string(c.train.accumulate_steps) + ": every step's batch runs in " +
        std::to_string(c.train.accumulate_steps) + " slices whose gradients are summed");
  }
  return m;
}

Result<CheckpointMeta> RestoreRun(const ResumePoint& point, const config::LoadedConfig& lc, const Job& job,
                                  RunModel* model, const LogFn& log) {
  const std::string& dir = *point.dir;
  ModelBundle& b = model->bundle;
  RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta meta,
                            WithContext(ReadCheckpoint(dir, b.params, model->optimizer.get(), b.tables, job.comm,
                                                       [&b, rank = job.rank()](uint64_t id) { return b.owners.Of(id) == rank; }),
                                        "while resuming from " + dir));
  const config::TrainConfig& c = lc.config;
  if (meta.model_type != c.model.type) {
    return InvalidArgumentError("checkpoint " + dir + " holds a " + meta.model_type + " model but model.type is " +
                                c.model.type);
  }
  if (meta.config_hash != lc.hash) log("note: the configuration differs from the checkpoint's (resuming with changed settings)");
  log("resumed from " + dir + " at step " + std::to_string(meta.step) + ", epoch " + std::to_string(meta.epoch) + ", row " +
      std::to_string(meta.rows_in_epoch) +
      (meta.delta() ? " (delta " + std::to_string(meta.chain_length) + " on " + meta.base + ")" : std::string()) +
      (meta.world != job.world()
           ? " (written by " + std::to_string(meta.world) + " rank(s), now " + std::to_string(job.world()) + ")"
           : std::string()));
  return meta;
}

Result<std::unique_ptr<EvalSplit>> OpenValidation(const config::TrainConfig& c, const Job& job,
                                                  std::shared_ptr<data::MemoryBudget> budget, const LogFn& log) {
  if (c.valid_files.empty()) return std::unique_ptr<EvalSplit>();
  data::DataConfig vd = c.data;
  vd.files = c.valid_files;
  vd.max_bad_rows = c.data.max_bad_rows;
  vd.negative_downsampling = 1.0;  // evaluate on every row; logits are calibrated instead
  data::ReadOptions vo = c.read;
  vo.shuffle = false;
  vo.epoch = 0;
  vo.skip_rows = 0;
  if (c.eval.batch_size > 0) vo.batch_size = c.eval.batch_size;
  data::EpochOptions veo;
  veo.shuffle = data::ShuffleMode::kOff;  // fixed order
  veo.memory_cache = c.epoch.memory_cache;
  RECTRAIN_ASSIGN_OR_RETURN(auto source,
                            WithContext(data::EpochSource::Create(vd, vo, veo, std::move(budget), "data.valid", log),
                                        "data.valid"));
  if (c.data.cache != data::CacheMode::kOff) {
    data::DataConfig vc = c.data;
    vc.files = c.valid_files;
    vc.negative_downsampling = 1.0;
    log(CacheLine("data.valid", vc));
  }
  // Evaluation steps every rank together, also in an asynchronous job (after training).
  Job eval_job = job;
  eval_job.servers = 0;
  return std::make_unique<EvalSplit>(std::move(source), eval_job);
}

}  // namespace rectrain::train::internal
