#include "rectrain/train/lookup.h"

#include <algorithm>
#include <bit>
#include <string>

namespace rectrain::train {

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
  if (unique_.capacity() < static_cast<size_t>(max_ids)) unique_.reserve(max_ids);
}

LookupWorkspace::LookupWorkspace(const nn::ModelSpec& spec,
                                 std::vector<embedding::EmbeddingTable*> tables) {
  num_fields_ = static_cast<int>(spec.fields.size());
  tables_.resize(tables.size());
  for (size_t t = 0; t < tables.size(); ++t) tables_[t].table = tables[t];
  for (int f = 0; f < num_fields_; ++f) {
    const int t = spec.fields[f].table;
    if (t >= 0 && t < static_cast<int>(tables_.size())) tables_[t].fields.push_back(f);
  }
  field_rows_.resize(num_fields_);
  fields_.resize(num_fields_);
  pulled_.resize(tables_.size());
  grad_spans_.resize(tables_.size());
}

Status LookupWorkspace::Lookup(const data::Batch& batch, embedding::PullMode mode,
                               const ComputeContext& compute) {
  if (batch.num_sparse() != num_fields_) {
    return InvalidArgumentError("batch has " + std::to_string(batch.num_sparse()) +
                                " categorical fields but the model expects " +
                                std::to_string(num_fields_));
  }
  const int num_tables = static_cast<int>(tables_.size());
  // Many small tables: one table per thread, each Pull single-threaded. Few tables: tables in
  // turn, each Pull using the whole pool (it parallelises over shards).
  const bool across_tables = num_tables >= compute.num_threads && compute.num_threads > 1;
  const ComputeContext inner = across_tables ? ComputeContext{.num_threads = 1} : compute;
  auto do_table = [&](int64_t t) -> Status {
    TableState& ts = tables_[t];
    int64_t total = 0;
    for (int f : ts.fields) total += static_cast<int64_t>(batch.sparse[f].ids.size());
    ts.dedupe.Reset(total);
    for (int f : ts.fields) {
      const data::SparseColumn& col = batch.sparse[f];
      const int64_t n = static_cast<int64_t>(col.ids.size());
      if (!col.single_valued() && static_cast<int64_t>(col.offsets.size()) != batch.size + 1) {
        return InvalidArgumentError("field " + std::to_string(f) + " has " +
                                    std::to_string(col.offsets.size()) + " offsets for " +
                                    std::to_string(batch.size) + " rows");
      }
      if (col.single_valued() && n != batch.size) {
        return InvalidArgumentError("field " + std::to_string(f) + " has " + std::to_string(n) +
                                    " ids for " + std::to_string(batch.size) + " rows");
      }
      std::vector<int32_t>& rows = field_rows_[f];
      rows.resize(n);
      const uint64_t* ids = col.ids.data();
      for (int64_t i = 0; i < n; ++i) rows[i] = ts.dedupe.Insert(ids[i]);
      fields_[f] = nn::FieldIndices{std::span<const int32_t>(col.offsets),
                                    std::span<const int32_t>(rows)};
    }
    const auto& unique = ts.dedupe.unique();
    const int dim = ts.table->dim();
    const size_t floats = unique.size() * static_cast<size_t>(dim);
    ts.rows.resize(floats);
    ts.grads.resize(floats);
    pulled_[t] = nn::PulledTable{std::span<const float>(ts.rows),
                                 static_cast<int64_t>(unique.size()), dim};
    grad_spans_[t] = std::span<float>(ts.grads);
    return ts.table->Pull(unique, mode, std::span<float>(ts.rows), inner);
  };
  if (across_tables) {
    return ParallelFor(compute, num_tables, 1, [&](int64_t begin, int64_t end) -> Status {
      for (int64_t t = begin; t < end; ++t) RECTRAIN_RETURN_IF_ERROR(do_table(t));
      return OkStatus();
    });
  }
  for (int t = 0; t < num_tables; ++t) RECTRAIN_RETURN_IF_ERROR(do_table(t));
  return OkStatus();
}

Status LookupWorkspace::Push(const optim::StepContext& step, const ComputeContext& compute) {
  const int num_tables = static_cast<int>(tables_.size());
  const bool across_tables = num_tables >= compute.num_threads && compute.num_threads > 1;
  const ComputeContext inner = across_tables ? ComputeContext{.num_threads = 1} : compute;
  auto do_table = [&](int64_t t) -> Status {
    TableState& ts = tables_[t];
    return ts.table->Push(ts.dedupe.unique(), std::span<const float>(ts.grads), step, inner);
  };
  if (across_tables) {
    return ParallelFor(compute, num_tables, 1, [&](int64_t begin, int64_t end) -> Status {
      for (int64_t t = begin; t < end; ++t) RECTRAIN_RETURN_IF_ERROR(do_table(t));
      return OkStatus();
    });
  }
  for (int t = 0; t < num_tables; ++t) RECTRAIN_RETURN_IF_ERROR(do_table(t));
  return OkStatus();
}

int64_t LookupWorkspace::num_unique() const {
  int64_t n = 0;
  for (const auto& ts : tables_) n += static_cast<int64_t>(ts.dedupe.unique().size());
  return n;
}

}  // namespace rectrain::train
