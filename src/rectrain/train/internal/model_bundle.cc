#include "rectrain/train/internal/model_bundle.h"

#include <algorithm>

#include "rectrain/nn/model_config.h"

namespace rectrain::train::internal {

Result<TaskLayout> MakeTaskLayout(const config::TrainConfig& c, const std::vector<std::string>& dense) {
  TaskLayout t;
  t.num_dense = static_cast<int>(dense.size());
  t.names.push_back(c.data.schema.label.empty() ? "label" : c.data.schema.label);
  std::vector<bool> is_label(dense.size(), false);
  for (const std::string& name : c.task_labels) {
    auto it = std::find(dense.begin(), dense.end(), name);
    if (it == dense.end()) {
      std::string names;
      for (const auto& d : dense) names += (names.empty() ? "" : ", ") + d;
      return InvalidArgumentError("model.task_labels: \"" + name + "\" is not a dense column (data.dense: " + (names.empty() ? "none" : names) + ")");
    }
    const size_t col = static_cast<size_t>(it - dense.begin());
    if (is_label[col]) return InvalidArgumentError("model.task_labels: \"" + name + "\" appears twice");
    is_label[col] = true;
    t.label_columns.push_back(static_cast<int>(col));
    t.names.push_back(name);
  }
  for (size_t col = 0; col < dense.size(); ++col) {
    if (!is_label[col]) t.feature_columns.push_back(static_cast<int>(col));
  }
  // model.task_weights has one weight per task: checked when the config loads (train_config.cc).
  t.weights = c.task_weights.empty() ? std::vector<float>(t.names.size(), 1.0f) : c.task_weights;
  return t;
}

Status TaskLayout::Split(const data::Batch& batch, int64_t r0, int64_t r1, std::vector<float>* dense,
                         std::vector<float>* labels) const {
  const int64_t m = r1 - r0, nd = num_dense, nf = static_cast<int64_t>(feature_columns.size()), T = tasks();
  dense->resize(static_cast<size_t>(m * nf));
  labels->resize(static_cast<size_t>(m * T));
  for (int64_t i = 0; i < m; ++i) {
    const float* row = batch.dense.data() + (r0 + i) * nd;
    float* d = dense->data() + i * nf;
    for (int64_t k = 0; k < nf; ++k) d[k] = row[feature_columns[static_cast<size_t>(k)]];
    float* l = labels->data() + i * T;
    l[0] = batch.labels[static_cast<size_t>(r0 + i)];
    for (int64_t t = 1; t < T; ++t) {
      const float y = row[label_columns[static_cast<size_t>(t - 1)]];
      if (y != 0.0f && y != 1.0f) {
        return InvalidArgumentError("task label " + names[static_cast<size_t>(t)] + " is " + std::to_string(y) + " in row " +
                                    std::to_string(r0 + i) + " of the batch from " + batch.source +
                                    "; a task label must be 0 or 1 (e.g. features.transforms." + names[static_cast<size_t>(t)] +
                                    ": \"binarize(t)\", and no log1p on it: set features.log1p: false or give it its own transform)");
      }
      l[t] = y;
    }
  }
  return OkStatus();
}

Result<ModelBundle> BuildModel(const config::TrainConfig& c, const std::vector<std::string>& sparse,
                               const std::vector<std::string>& dense, const Job& job) {
  ModelBundle b;
  RECTRAIN_ASSIGN_OR_RETURN(b.tasks, MakeTaskLayout(c, dense));
  nn::ModelConfig mc = c.model;
  mc.num_tasks = b.tasks.tasks();
  RECTRAIN_ASSIGN_OR_RETURN(b.model, nn::MakeModel(mc, sparse, static_cast<int>(b.tasks.feature_columns.size()), c.embedding));
  for (const auto& tc : b.model->spec().tables) {
    RECTRAIN_ASSIGN_OR_RETURN(auto table, embedding::MakeEmbeddingTable(tc));
    b.tables.push_back(table.get());
    b.owned_tables.push_back(std::move(table));
  }
  b.params = b.model->Params();
  if (job.async()) {
    b.owners = ps::Owners{job.world() - job.servers, job.servers};
    if (!job.is_server()) {
      auto store = ps::MakeAsyncWorkerStore(b.model->spec(), ps::TableDims(b.tables), b.params, b.owners, job.comm);
      b.async_store = store.get();
      b.store = std::move(store);
    }
  } else if (job.distributed()) {
    b.owners = ps::Owners{0, job.world()};
    b.store = ps::MakeShardedStore(b.model->spec(), b.tables, job.comm, b.owners);
  } else {
    b.owners = ps::Owners{0, 1};
    b.store = ps::MakeLocalStore(b.model->spec(), b.tables);
  }
  return b;
}

std::vector<TableSummary> LocalTableSummaries(const ModelBundle& b) {
  std::vector<TableSummary> out;
  for (const auto* t : b.tables) {
    const embedding::TableStats s = t->Stats();
    out.push_back({t->config().name, t->dim(), s.rows, s.bytes, s.admissions, s.evictions, s.lookups, s.oov_lookups,
                   s.expirations, t->config().memory_budget_bytes * b.owners.count, embedding::kOnBudgets.Name(t->config().on_budget)});
  }
  return out;
}

Result<std::vector<TableSummary>> SummarizeTables(const ModelBundle& b, const Job& job) {
  std::vector<TableSummary> out = LocalTableSummaries(b);
  if (!job.distributed()) return out;
  std::vector<int64_t> v;
  for (const auto& t : out) {
    v.insert(v.end(), {t.rows, t.bytes, t.admissions, t.evictions, t.lookups, t.oov_lookups, t.expirations});
  }
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<int64_t>(v), dist::ReduceOp::kSum));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t* x = v.data() + 7 * i;
    out[i].rows = x[0];
    out[i].bytes = x[1];
    out[i].admissions = x[2];
    out[i].evictions = x[3];
    out[i].lookups = x[4];
    out[i].oov_lookups = x[5];
    out[i].expirations = x[6];
  }
  return out;
}

Status BroadcastDenseParams(ModelBundle& b, const Job& job) {
  if (!job.distributed()) return OkStatus();
  std::vector<float> all;
  for (const auto& p : b.params) all.insert(all.end(), p.value.begin(), p.value.end());
  RECTRAIN_RETURN_IF_ERROR(job.comm->Broadcast(std::span<float>(all), 0));
  size_t at = 0;
  for (const auto& p : b.params) {
    std::copy_n(all.data() + at, p.value.size(), p.value.data());
    at += p.value.size();
  }
  return OkStatus();
}

}  // namespace rectrain::train::internal
