// rectrain/serve/snapshot.cc: see snapshot.h.
#include "rectrain/serve/snapshot.h"

#include <utility>

namespace rectrain::serve {

Status AppendTableSnapshot(const embedding::EmbeddingTable& table, bool complete, SnapshotTable* out) {
  out->name = table.config().name;
  out->dim = table.dim();
  const embedding::TableStats stats = table.Stats();
  if (complete) {
    out->ids.reserve(out->ids.size() + static_cast<size_t>(stats.rows));
    out->updates.reserve(out->updates.size() + static_cast<size_t>(stats.rows));
    out->rows.reserve(out->rows.size() + static_cast<size_t>(stats.rows) * static_cast<size_t>(out->dim));
  }
  const embedding::EmbeddingTable::RowVisitor copy = [out](uint64_t id, uint32_t updates, std::span<const float> w) {
    out->ids.push_back(id);
    out->updates.push_back(updates);
    out->rows.insert(out->rows.end(), w.begin(), w.end());
  };
  if (complete) {
    RECTRAIN_RETURN_IF_ERROR(table.ForEachRow(copy));
  } else {
    RECTRAIN_RETURN_IF_ERROR(table.ForEachChangedRow(embedding::ChangeLog::kPublish, copy, &out->removed));
  }
  const std::span<const float> oov = table.OovWeights();
  out->oov.assign(oov.begin(), oov.end());
  return OkStatus();
}

Result<ModelSnapshot> TakeSnapshot(const ModelSource& source, bool complete) {
  ModelSnapshot s;
  s.complete = complete;
  s.description = source.description;
  s.config_yaml = source.config_yaml;
  for (const optim::ParamRef& p : source.params) s.dense.push_back({p.name, {p.value.begin(), p.value.end()}});
  s.tables.resize(source.tables.size());
  for (size_t t = 0; t < source.tables.size(); ++t) {
    RECTRAIN_RETURN_IF_ERROR(AppendTableSnapshot(*source.tables[t], complete, &s.tables[t]));
  }
  return s;
}

std::vector<optim::ParamRef> DenseParamRefs(const ModelSnapshot& snapshot) {
  std::vector<optim::ParamRef> params;
  for (const DenseSnapshot& d : snapshot.dense) {
    // ParamRef holds mutable spans (the optimizers write through them); a writer only reads.
    params.push_back({.name = d.name, .value = {const_cast<float*>(d.values.data()), d.values.size()}});
  }
  return params;
}

Status CheckSnapshot(const ModelSnapshot& snapshot) {
  for (const SnapshotTable& t : snapshot.tables) {
    const size_t n = t.ids.size();
    if (t.dim <= 0 || t.updates.size() != n || t.rows.size() != n * static_cast<size_t>(t.dim) ||
        t.oov.size() != static_cast<size_t>(t.dim)) {
      return InvalidArgumentError("snapshot table '" + t.name + "' (dim " + std::to_string(t.dim) + ") has " +
                                  std::to_string(n) + " ids, " + std::to_string(t.updates.size()) + " update counts, " +
                                  std::to_string(t.rows.size()) + " row floats and an OOV row of " +
                                  std::to_string(t.oov.size()) + " floats; expected ids × dim row floats");
    }
  }
  return OkStatus();
}

}  // namespace rectrain::serve
