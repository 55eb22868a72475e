#include "rectrain/ps/internal/batch_ids.h"

#include <algorithm>
#include <string>

namespace rectrain::ps::internal {

void IdDeduper::Reset(int64_t max_ids) {
  uint64_t capacity = 1024;
  while (capacity < static_cast<uint64_t>(max_ids) * 2) capacity *= 2;
  if (capacity != keys_.size()) {
    keys_.assign(capacity, 0);
    values_.assign(capacity, 0);
    stamps_.assign(capacity, 0);
    generation_ = 0;
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
  }
  if (++generation_ == 0) {  // wrapped: stale stamps could alias, so clear them once
    std::fill(stamps_.begin(), stamps_.end(), 0u);
    generation_ = 1;
  }
  unique_.clear();
  if (unique_.capacity() < static_cast<size_t>(max_ids)) unique_.reserve(static_cast<size_t>(max_ids));
}

BatchIds::BatchIds(const nn::ModelSpec& spec, const std::vector<int>& dims) {
  num_fields_ = static_cast<int>(spec.fields.size());
  tables_.resize(dims.size());
  for (size_t t = 0; t < dims.size(); ++t) tables_[t].dim = dims[t];
  for (int f = 0; f < num_fields_; ++f) {
    const int t = spec.fields[static_cast<size_t>(f)].table;
    if (t >= 0 && t < static_cast<int>(tables_.size())) tables_[static_cast<size_t>(t)].fields.push_back(f);
  }
  field_rows_.resize(static_cast<size_t>(num_fields_));
  fields_.resize(static_cast<size_t>(num_fields_));
  pulled_.resize(tables_.size());
  grad_spans_.resize(tables_.size());
}

Status BatchIds::DedupeTable(const data::Batch& batch, int t) {
  TableState& ts = tables_[static_cast<size_t>(t)];
  const bool no_columns = batch.sparse.empty();
  int64_t total = 0;
  if (!no_columns) {
    for (int f : ts.fields) total += static_cast<int64_t>(batch.sparse[static_cast<size_t>(f)].ids.size());
  }
  ts.dedupe.Reset(total);
  for (int f : ts.fields) {
    std::vector<int32_t>& rows = field_rows_[static_cast<size_t>(f)];
    if (no_columns) {
      rows.clear();
      fields_[static_cast<size_t>(f)] = nn::FieldIndices{{}, std::span<const int32_t>(rows)};
      continue;
    }
    const data::SparseColumn& col = batch.sparse[static_cast<size_t>(f)];
    const int64_t n = static_cast<int64_t>(col.ids.size());
    if (!col.single_valued() && static_cast<int64_t>(col.offsets.size()) != batch.size + 1) {
      return InvalidArgumentError("field " + std::to_string(f) + " has " + std::to_string(col.offsets.size()) +
                                  " offsets for " + std::to_string(batch.size) + " rows");
    }
    if (col.single_valued() && n != batch.size) {
      return InvalidArgumentError("field " + std::to_string(f) + " has " + std::to_string(n) + " ids for " +
                                  std::to_string(batch.size) + " rows");
    }
    rows.resize(static_cast<size_t>(n));
    const uint64_t* ids = col.ids.data();
    for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = ts.dedupe.Insert(ids[i]);
    fields_[static_cast<size_t>(f)] = nn::FieldIndices{std::span<const int32_t>(col.offsets), std::span<const int32_t>(rows)};
  }
  const size_t floats = ts.dedupe.unique().size() * static_cast<size_t>(ts.dim);
  ts.rows.resize(floats);
  ts.grads.resize(floats);
  pulled_[static_cast<size_t>(t)] =
      nn::PulledTable{std::span<const float>(ts.rows), static_cast<int64_t>(ts.dedupe.unique().size()), ts.dim};
  grad_spans_[static_cast<size_t>(t)] = std::span<float>(ts.grads);
  return OkStatus();
}

int64_t BatchIds::num_unique() const {
  int64_t n = 0;
  for (const auto& ts : tables_) n += static_cast<int64_t>(ts.dedupe.unique().size());
  return n;
}

}  // namespace rectrain::ps::internal
