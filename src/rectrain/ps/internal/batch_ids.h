// rectrain/ps/internal/batch_ids.h (internal to ps/): the first half of every store's Lookup:
// per table, dedupe the ids of the fields that read it (IdDeduper, first-occurrence order: field
// order, then row order, so the result depends only on the batch) and describe each field's
// occurrences as int32 indices into the unique ids. Buffers are kept and reused from step to
// step (fresh memory is slow to touch on our machines), so a steady-state step allocates nothing.
// Thread safety: one owner thread; Dedupe() runs tables in parallel on the compute pool.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/data/batch.h"
#include "rectrain/nn/model.h"

namespace rectrain::ps::internal {

// Open-addressing map from id to its first-occurrence index, cleared in O(1) by a generation
// stamp.
class IdDeduper {
 public:
  // Starts a new set sized for up to `max_ids` insertions.
  void Reset(int64_t max_ids);
  // Index of `id` in the unique list, appending it when new.
  int32_t Insert(uint64_t id) {
    uint64_t slot = (id * 0x9E3779B97F4A7C15ULL) >> shift_;
    while (true) {
      if (stamps_[slot] != generation_) {
        stamps_[slot] = generation_;
        keys_[slot] = id;
        const int32_t idx = static_cast<int32_t>(unique_.size());
        values_[slot] = idx;
        unique_.push_back(id);
        return idx;
      }
      if (keys_[slot] == id) return values_[slot];
      slot = (slot + 1) & mask_;
    }
  }
  const std::vector<uint64_t>& unique() const { return unique_; }

 private:
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  std::vector<uint32_t> stamps_;
  std::vector<uint64_t> unique_;
  uint32_t generation_ = 0;
  uint64_t mask_ = 0;
  int shift_ = 64;
};

class BatchIds {
 public:
  // `spec` gives the field -> table mapping, `dims` each table's row width.
  BatchIds(const nn::ModelSpec& spec, const std::vector<int>& dims);

  int num_tables() const { return static_cast<int>(tables_.size()); }
  // Dedupes `batch` (see the top comment) and sizes rows/grads per table. `per_table(t)` runs
  // right after table t is deduped, on the same thread (the local store pulls there, so a
  // table's dedupe and pull stay together in cache). Errors: InvalidArgument on a batch whose
  // sparse columns do not match the spec; per_table's errors.
  template <typename Fn>
  Status Dedupe(const data::Batch& batch, const ComputeContext& compute, Fn&& per_table);

  const std::vector<uint64_t>& unique(int t) const { return tables_[static_cast<size_t>(t)].dedupe.unique(); }
  int dim(int t) const { return tables_[static_cast<size_t>(t)].dim; }
  std::span<float> rows(int t) { return tables_[static_cast<size_t>(t)].rows; }
  std::span<const float> grads_of(int t) const { return tables_[static_cast<size_t>(t)].grads; }

  std::span<const nn::PulledTable> pulled() const { return pulled_; }
  std::span<const nn::FieldIndices> fields() const { return fields_; }
  std::span<const std::span<float>> grads() const { return grad_spans_; }
  int64_t num_unique() const;

  // Many small tables: one table per thread (each table's own work single-threaded). Few tables:
  // tables in turn, each using the whole pool.
  bool AcrossTables(const ComputeContext& compute) const {
    return num_tables() >= compute.num_threads && compute.num_threads > 1;
  }

 private:
  struct TableState {
    int dim = 0;
    std::vector<int> fields;  // field indices reading this table, in order
    IdDeduper dedupe;
    std::vector<float> rows;
    std::vector<float> grads;
  };
  Status DedupeTable(const data::Batch& batch, int t);

  std::vector<TableState> tables_;
  std::vector<std::vector<int32_t>> field_rows_;  // per field: occurrence -> unique index
  std::vector<nn::PulledTable> pulled_;
  std::vector<nn::FieldIndices> fields_;
  std::vector<std::span<float>> grad_spans_;
  int num_fields_ = 0;
};

template <typename Fn>
Status BatchIds::Dedupe(const data::Batch& batch, const ComputeContext& compute, Fn&& per_table) {
  // An empty batch may come without columns (a rank whose share of the pass has ended).
  if (!(batch.size == 0 && batch.sparse.empty()) && batch.num_sparse() != num_fields_) {
    return InvalidArgumentError("batch has " + std::to_string(batch.num_sparse()) +
                                " categorical fields but the model expects " + std::to_string(num_fields_));
  }
  const int n = num_tables();
  auto one = [&](int64_t t) -> Status {
    RECTRAIN_RETURN_IF_ERROR(DedupeTable(batch, static_cast<int>(t)));
    return per_table(static_cast<int>(t));
  };
  if (AcrossTables(compute)) {
    return ParallelFor(compute, n, 1, [&](int64_t begin, int64_t end) -> Status {
      for (int64_t t = begin; t < end; ++t) RECTRAIN_RETURN_IF_ERROR(one(t));
      return OkStatus();
    });
  }
  for (int t = 0; t < n; ++t) RECTRAIN_RETURN_IF_ERROR(one(t));
  return OkStatus();
}

}  // namespace rectrain::ps::internal
