// rectrain/serve/mapped_table.h: a serving model's embedding table, read-only and memory-mapped
// from its table file (model_package.h). Only the pages of rows that requests touch are read in,
// so a model larger than free memory still serves, and the processes serving one file share its
// pages. An id without a row (never trained, or left out by the export's min_count) reads the
// OOV row, as evaluation does.
//
// It is an embedding::TableReader, so that ps::MakeReadOnlyStore and the model run on it exactly
// as `rectrain eval` runs on the trained tables (their Read is Pull(kEval)).
// Thread safety: Read may run from several threads at once (the counters are atomic).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/serve/model_package.h"

namespace rectrain::serve {

class MappedTable final : public embedding::TableReader {
 public:
  // Maps `path` and checks its header against `expected` (dim, row type, rows; DataLoss naming
  // the file otherwise). `config` names the table (its dim must match).
  static Result<std::unique_ptr<MappedTable>> Open(const std::string& path, const PackageTable& expected,
                                                   embedding::EmbeddingTableConfig config);
  ~MappedTable() override;

  const embedding::EmbeddingTableConfig& config() const override { return config_; }
  Status Read(std::span<const uint64_t> ids, std::span<float> out, const ComputeContext& compute) override;
  embedding::TableStats Stats() const override;

  // The stored row of `id`, or 0 (the OOV row) when it has none.
  uint64_t RowOf(uint64_t id) const;
  int64_t rows() const { return static_cast<int64_t>(rows_); }
  RowType type() const { return type_; }
  // The stored (encoded) row of `id`, or nullptr when it has none; row 0, the OOV row.
  const uint8_t* StoredRow(uint64_t id) const {
    const uint64_t r = RowOf(id);
    return r == 0 ? nullptr : row_data_ + r * row_bytes_;
  }
  const uint8_t* oov_row() const { return row_data_; }
  // fn(id, encoded row) for every stored row but the OOV row, in slot order.
  template <typename F>
  void ForEachStored(F&& fn) const {
    for (uint64_t s = 0; s <= mask_; ++s) {
      const uint32_t r = slot_rows_[s];
      if (r != 0 && r < rows_) fn(slot_ids_[s], row_data_ + r * row_bytes_);
    }
  }
  int64_t mapped_bytes() const { return static_cast<int64_t>(size_); }

 private:
  MappedTable() = default;
  embedding::EmbeddingTableConfig config_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  RowType type_ = RowType::kFp32;
  int dim_ = 0;
  uint64_t rows_ = 0, mask_ = 0, row_bytes_ = 0;
  const uint64_t* slot_ids_ = nullptr;
  const uint32_t* slot_rows_ = nullptr;
  const uint8_t* row_data_ = nullptr;
  std::atomic<int64_t> lookups_{0}, oov_lookups_{0};
};

}  // namespace rectrain::serve
