#include "rectrain/train/internal/model_bundle.h"

#include <algorithm>

#include "rectrain/nn/model_config.h"

namespace rectrain::train::internal {

Result<ModelBundle> BuildModel(const config::TrainConfig& c, const std::vector<std::string>& sparse, int num_dense,
                               const Job& job) {
  ModelBundle b;
  RECTRAIN_ASSIGN_OR_RETURN(b.model, nn::MakeModel(c.model, sparse, num_dense, c.embedding));
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
    out.push_back({t->config().name, t->dim(), s.rows, s.bytes, s.admissions, s.evictions, s.lookups, s.oov_lookups});
  }
  return out;
}

Result<std::vector<TableSummary>> SummarizeTables(const ModelBundle& b, const Job& job) {
  std::vector<TableSummary> out = LocalTableSummaries(b);
  if (!job.distributed()) return out;
  std::vector<int64_t> v;
  for (const auto& t : out) v.insert(v.end(), {t.rows, t.bytes, t.admissions, t.evictions, t.lookups, t.oov_lookups});
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<int64_t>(v), dist::ReduceOp::kSum));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t* x = v.data() + 6 * i;
    out[i].rows = x[0];
    out[i].bytes = x[1];
    out[i].admissions = x[2];
    out[i].evictions = x[3];
    out[i].lookups = x[4];
    out[i].oov_lookups = x[5];
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
