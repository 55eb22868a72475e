// rectrain/train/lookup.h: the first phase of a step: per embedding table, deduplicate the ids
// of every field that reads it, pull the unique rows, and describe each field's occurrences as
// int32 indices into those rows (nn::FieldIndices). Buffers are kept and reused from step to
// step (fresh memory is slow to touch on our machines), so a steady-state step allocates nothing.
//
// IdDeduper is a open-addressing hash map from id to its first-occurrence index, cleared in O(1)
// by a generation stamp. Unique ids come out in first-occurrence order (field order, then row
// order), so the result depends only on the batch: deterministic for any thread count.
//
// Thread safety: one LookupWorkspace per trainer/evaluator, used by one thread; Lookup() runs
// the tables in parallel on the compute pool.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rectrain/base/parallel.h"
#include "rectrain/base/status.h"
#include "rectrain/data/batch.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/nn/model.h"

namespace rectrain::train {

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

// Per-step lookup state for a model's tables.
class LookupWorkspace {
 public:
  // `spec` gives the field -> table mapping; `tables` are the model's tables (same order).
  LookupWorkspace(const nn::ModelSpec& spec, std::vector<embedding::EmbeddingTable*> tables);

  // Dedupes and pulls for `batch` (which must outlive the next Forward/Backward, since
  // multi-valued fields reference its offsets). Errors: InvalidArgument when the batch's
  // sparse columns do not match the spec, and the tables' Pull errors.
  [[nodiscard]] Status Lookup(const data::Batch& batch, embedding::PullMode mode,
                              const ComputeContext& compute);

  // Valid after Lookup(): inputs for Model::Forward.
  std::span<const nn::PulledTable> pulled() const { return pulled_; }
  std::span<const nn::FieldIndices> fields() const { return fields_; }
  // Gradient buffers for Model::Backward (num_unique × dim per table), sized by Lookup().
  std::span<const std::span<float>> grads() const { return grad_spans_; }

  // Pushes the gradients (after Backward) to every table.
  [[nodiscard]] Status Push(const optim::StepContext& step, const ComputeContext& compute);

  // Total unique ids of the last Lookup (all tables).
  int64_t num_unique() const;

 private:
  struct TableState {
    embedding::EmbeddingTable* table = nullptr;
    std::vector<int> fields;  // field indices reading this table, in order
    IdDeduper dedupe;
    std::vector<float> rows;
    std::vector<float> grads;
  };
  std::vector<TableState> tables_;
  std::vector<std::vector<int32_t>> field_rows_;  // per field: occurrence -> unique index
  std::vector<nn::PulledTable> pulled_;
  std::vector<nn::FieldIndices> fields_;
  std::vector<std::span<float>> grad_spans_;
  int num_fields_ = 0;
};

}  // namespace rectrain::train
