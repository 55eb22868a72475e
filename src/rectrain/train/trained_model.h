// rectrain/train/trained_model.h: a finished run's model loaded back for use outside training
// (`rectrain export` turns it into a serving model, serve/export.h): the config it was trained
// with, the model with its dense parameters, its embedding tables with every row, and what
// parsing a row as the training reader did needs (data::RowLayout).
// Thread safety: a value owned by one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/checkpoint/checkpoint.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/reader.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model.h"

namespace rectrain::train {

struct TrainedModel {
  config::LoadedConfig config;    // RUN_DIR/config.yaml
  std::string config_yaml;        // that file's text
  checkpoint::CheckpointMeta meta;  // RUN_DIR/model/meta.json
  data::RowLayout layout;         // of data.train (header, feature statistics)
  std::vector<std::string> dense_names;   // the reader's dense columns
  std::vector<std::string> sparse_names;
  std::vector<std::string> task_names;    // one per model output task (task 0: the label)
  std::vector<int> feature_columns;       // dense columns the model reads (task labels excluded)
  std::unique_ptr<nn::Model> model;
  std::vector<std::unique_ptr<embedding::EmbeddingTable>> tables;  // model order
};

// What parsing a row as the run's training reader did needs, for serving: the layout of
// data.train's files (header, frozen feature statistics; from the stats cache when training left
// them there) or, for an online run without files, the config's (train/internal/online.h).
struct RunLayout {
  data::RowLayout layout;
  std::vector<std::string> dense_names, sparse_names;
};
Result<RunLayout> ReadRunLayout(const config::TrainConfig& c);

// Loads RUN_DIR/model (the final model) with RUN_DIR/config.yaml. data.train must be readable:
// its first file gives the columns and its rows the feature statistics (from the stats cache
// when training left them there); an online run without data.train takes them from the config. Errors: NotFound (no trained model, naming the command to run),
// the config's and the checkpoint's errors.
Result<TrainedModel> LoadTrainedModel(const std::string& run_dir, int threads);

}  // namespace rectrain::train
