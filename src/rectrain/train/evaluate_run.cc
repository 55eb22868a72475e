// `rectrain eval`'s library side (trainer.h EvaluateRun) and the oracle metrics of .prob files.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "rectrain/base/stopwatch.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/epoch_source.h"
#include "rectrain/data/generator.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/train/internal/evaluator.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/trainer.h"

namespace rectrain::train {
namespace fs = std::filesystem;
using checkpoint::ReadCheckpoint;

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
  auto opened = data::OpenBatchReader(dc, ro);
  if (!opened.ok()) return opened.status().WithContext("--data");
  std::unique_ptr<data::BatchReader> probe = std::move(opened).value();
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
