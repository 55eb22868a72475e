// rectrain/serve/served_table.h: the embedding table a server serves: a full export's memory-
// mapped table (mapped_table.h) with the serving deltas applied since (delta.h) held in memory
// as an overlay. Applying a delta makes a new ServedTable that shares the mapped base and copies
// the overlay (O(rows changed since the full export)); the old one keeps answering the requests
// that already hold it, so a delta is applied with no request waiting or failing. A full export
// every few deltas bounds the overlay (docs/serving.md).
//
// Thread safety: Read may run from several threads at once; a ServedTable never changes after
// it is made (WithDelta returns a new one).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/serve/delta.h"
#include "rectrain/serve/mapped_table.h"

namespace rectrain::serve {

class ServedTable final : public embedding::TableReader {
 public:
  explicit ServedTable(std::shared_ptr<MappedTable> base);

  // This table with `delta` applied. InvalidArgument when its dim or row type differ.
  Result<std::unique_ptr<ServedTable>> WithDelta(const TableDelta& delta) const;

  const embedding::EmbeddingTableConfig& config() const override { return base_->config(); }
  Status Read(std::span<const uint64_t> ids, std::span<float> out, const ComputeContext& compute) override;
  embedding::TableStats Stats() const override;

  RowType type() const { return base_->type(); }
  // The encoded row of `id`, or nullptr when it has none (it reads the OOV row).
  const uint8_t* Find(uint64_t id) const;
  const uint8_t* oov_row() const;
  // fn(id, encoded row) for every id with a row (no order).
  void ForEachRow(const std::function<void(uint64_t id, const uint8_t* row)>& fn) const;
  int64_t rows() const;  // stored rows, the OOV row included (as a full export's manifest counts)
  int64_t overlay_rows() const;
  int64_t mapped_bytes() const { return base_->mapped_bytes(); }

 private:
  struct Overlay {
    std::unordered_map<uint64_t, int64_t> slot;  // id -> row in `rows`, or -1: removed
    std::vector<uint8_t> rows;
    std::vector<uint8_t> oov;  // empty: the base's
    int64_t live_rows = 0;     // ids with a row, base and overlay together
  };
  ServedTable(std::shared_ptr<MappedTable> base, std::shared_ptr<const Overlay> overlay);

  std::shared_ptr<MappedTable> base_;
  std::shared_ptr<const Overlay> overlay_;
  int64_t row_bytes_ = 0;
  std::atomic<int64_t> lookups_{0}, oov_lookups_{0};
};

}  // namespace rectrain::serve
