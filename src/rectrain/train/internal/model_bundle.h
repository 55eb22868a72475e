// rectrain/train/internal/model_bundle.h (internal to train/): the model, its embedding tables
// and the store that serves them for one run, built from the config and the reader's fields;
// and the job-wide views of them (table counters summed over ranks, dense parameters made
// identical on every rank).
// Thread safety: used by the training thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/batch.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model.h"
#include "rectrain/ps/async_ps.h"
#include "rectrain/ps/embedding_store.h"
#include "rectrain/train/internal/job.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

// The tasks of a multi-task model (mmoe): task 0 is the batch's label; the others are dense
// columns named by model.task_labels, which the model does not see as features. Split() hands
// the model its feature columns and gathers every task's labels.
struct TaskLayout {
  std::vector<std::string> names;  // task 0: data.label's name
  std::vector<float> weights;      // model.task_weights (default 1 each)
  std::vector<int> label_columns;  // dense columns of tasks 1..T-1
  std::vector<int> feature_columns;  // the other dense columns, in order
  int num_dense = 0;               // the batch's dense columns

  bool multi() const { return names.size() > 1; }
  int tasks() const { return static_cast<int>(names.size()); }
  // Rows [r0, r1) of `batch`: the model's dense features [m × feature_columns] and the labels
  // [m × tasks] (row-major). Errors name a label column whose value is not 0 or 1.
  Status Split(const data::Batch& batch, int64_t r0, int64_t r1, std::vector<float>* dense, std::vector<float>* labels) const;
};

// Resolves model.task_labels against the reader's dense columns. InvalidArgument naming the key
// for an unknown or repeated column. (task_weights' length is a config check.)
Result<TaskLayout> MakeTaskLayout(const config::TrainConfig& c, const std::vector<std::string>& dense);

struct ModelBundle {
  TaskLayout tasks;
  std::unique_ptr<nn::Model> model;
  std::vector<std::unique_ptr<embedding::EmbeddingTable>> owned_tables;
  std::vector<embedding::EmbeddingTable*> tables;  // this rank's rows of each table
  std::vector<optim::ParamRef> params;
  std::unique_ptr<ps::EmbeddingStore> store;       // local, sharded over the job, or a worker's async store
  ps::AsyncWorkerStore* async_store = nullptr;     // `store` when it is an asynchronous worker's
  ps::Owners owners;                               // the ranks that hold rows
};

// Builds the model for the reader's fields and one table per ModelSpec table, served by a local
// store (one process), a store sharded over `job`, or for an asynchronous worker a store that
// pulls from and pushes to the job's servers (comm must outlive the bundle).
Result<ModelBundle> BuildModel(const config::TrainConfig& c, const std::vector<std::string>& sparse,
                               const std::vector<std::string>& dense, const Job& job);

// Every table's counters, summed over the ranks of the job (a collective: every rank calls it).
Result<std::vector<TableSummary>> SummarizeTables(const ModelBundle& b, const Job& job);
// The counters of this rank's tables only (no communication).
std::vector<TableSummary> LocalTableSummaries(const ModelBundle& b);

// Copies rank 0's dense parameters to every rank (a no-op for one process).
Status BroadcastDenseParams(ModelBundle& b, const Job& job);

}  // namespace rectrain::train::internal
