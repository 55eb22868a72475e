// rectrain/train/trained_model.cc: see trained_model.h.
#include "rectrain/train/trained_model.h"

#include <filesystem>

#include "rectrain/io/file.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/internal/online.h"

namespace rectrain::train {

Result<RunLayout> ReadRunLayout(const config::TrainConfig& c) {
  RunLayout out;
  if (c.stream && c.train_files.empty()) {
    // An online run without files: its rows' layout is the config's (train/internal/online.h).
    RECTRAIN_ASSIGN_OR_RETURN(auto parser, internal::StreamRowParser(c, &out.layout));
    out.dense_names = parser->dense_names();
    out.sparse_names = parser->sparse_names();
    return out;
  }
  data::DataConfig dc = c.data;
  dc.files = c.train_files;
  dc.cache = data::CacheMode::kOff;  // the files' own layout, not a sample cache's
  data::ReadOptions ro = c.read;
  ro.shuffle = false;
  ro.num_threads = 1;
  Result<std::unique_ptr<data::BatchReader>> opened = data::OpenBatchReader(dc, ro);
  if (!opened.ok()) return opened.status().WithContext("data.train");
  std::unique_ptr<data::BatchReader> reader = std::move(opened).value();
  RECTRAIN_ASSIGN_OR_RETURN(out.layout, reader->row_layout());
  out.dense_names = reader->dense_names();
  out.sparse_names = reader->sparse_names();
  return out;
}

Result<TrainedModel> LoadTrainedModel(const std::string& run_dir, int threads) {
  const std::string model_dir = run_dir + "/model";
  std::error_code ec;
  if (!std::filesystem::exists(model_dir + "/meta.json", ec)) {
    return NotFoundError("no trained model in " + model_dir + " (train first: rectrain train CONFIG --run-dir " +
                         run_dir + ")");
  }
  TrainedModel t;
  RECTRAIN_ASSIGN_OR_RETURN(t.config_yaml, io::ReadFileToString(run_dir + "/config.yaml"));
  RECTRAIN_ASSIGN_OR_RETURN(t.config, config::LoadTrainConfigFromString(t.config_yaml, run_dir + "/config.yaml", {}));
  config::TrainConfig& c = t.config.config;
  if (threads > 0) c.threads = threads;
  RECTRAIN_ASSIGN_OR_RETURN(RunLayout layout, ReadRunLayout(c));
  t.layout = std::move(layout.layout);
  t.dense_names = std::move(layout.dense_names);
  t.sparse_names = std::move(layout.sparse_names);
  std::unique_ptr<dist::Communicator> single = dist::Communicator::Single();
  const internal::Job job{.comm = single.get()};
  RECTRAIN_ASSIGN_OR_RETURN(internal::ModelBundle bundle, internal::BuildModel(c, t.sparse_names, t.dense_names, job));
  RECTRAIN_ASSIGN_OR_RETURN(t.meta, checkpoint::ReadCheckpoint(model_dir, bundle.params, nullptr, bundle.tables));
  t.task_names = bundle.tasks.names;
  t.feature_columns = bundle.tasks.feature_columns;
  bundle.store.reset();  // it refers to the tables, which move out
  t.model = std::move(bundle.model);
  t.tables = std::move(bundle.owned_tables);
  return t;
}

}  // namespace rectrain::train
