// rectrain/data/memory_split.h: every row of one pass over a split, held compactly in memory in
// Batch's columnar layout, so later epochs (and each evaluation of the fixed validation set)
// gather batches from memory instead of re-parsing files. data/epoch_source.h decides when a
// split is cached and in which order its rows are served; this file only stores rows.
//
// Storage: rows are appended in blocks of kBlockRows rows. A block holds one fixed-size record
// per row — label (float), dense values (floats), then one 8-byte slot per sparse field and the
// group key when the batches carry them — plus a pool for the ids of multi-valued fields (a
// multi-valued field's slot holds {uint32 start in the pool, uint32 count}; a single-valued
// field's slot is its id). Rows are stored row-major on purpose: an epoch is served in a random
// order, and gathering a row then touches one record (a few adjacent cache lines, one page)
// instead of one random location per column: a random-order gather of 4096 criteo-shape rows
// takes 0.69 ms of CPU versus 1.85 ms from a columnar layout (memory_split_benchmark,
// docs/data.md). Gather() writes Batch's columnar layout.
// Row r lives in block r / kBlockRows. Bytes are the vectors' capacities.
//
// Memory accounting: a MemoryBudget is shared by every split of a run (training and
// validation). The builder reserves bytes from it as blocks grow and fails with
// ResourceExhausted as soon as the budget cannot cover the next allocation; the finished split
// returns its bytes to the budget when it is destroyed.
//
// Example:
//   auto budget = std::make_shared<MemoryBudget>(MemoryBudget::DefaultBytes());
//   MemorySplitBuilder builder(budget, reader->dense_names(), reader->sparse_names());
//   while (auto b = reader->Next() ...) RECTRAIN_RETURN_IF_ERROR(builder.Append(**b));
//   RECTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<const MemorySplit> split, builder.Finish());
//   std::vector<uint32_t> rows = {5, 0, 7};
//   Batch batch;
//   split->Gather(rows, &batch);   // a 3-row batch: rows 5, 0 and 7 of the pass
//
// Thread safety: MemoryBudget is thread-safe. A MemorySplitBuilder is used by one thread. A
// finished MemorySplit is immutable: Gather() may run concurrently from many threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/data/batch.h"

namespace rectrain::data {

// A byte budget shared by the in-memory splits of one run.
class MemoryBudget {
 public:
  // `limit_bytes` >= 0; 0 admits nothing.
  explicit MemoryBudget(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves `bytes` (>= 0) when used + bytes <= limit; false (and nothing reserved) otherwise.
  bool TryReserve(int64_t bytes);
  // Returns bytes reserved earlier.
  void Release(int64_t bytes);
  int64_t used_bytes() const { return used_bytes_.load(std::memory_order_relaxed); }
  int64_t limit_bytes() const { return limit_bytes_; }

  // The default limit of data.memory_cache_bytes: a quarter of physical memory (sysconf), or
  // 1 GiB when that cannot be read.
  static int64_t DefaultBytes();

 private:
  const int64_t limit_bytes_;
  std::atomic<int64_t> used_bytes_{0};
};

class MemorySplit {
 public:
  static constexpr int64_t kBlockRows = int64_t{1} << 16;
  // Row indices are uint32: a cached split holds at most this many rows.
  static constexpr int64_t kMaxRows = int64_t{0xffffffff};

  ~MemorySplit();
  MemorySplit(const MemorySplit&) = delete;
  MemorySplit& operator=(const MemorySplit&) = delete;

  int64_t rows() const { return rows_; }
  int64_t bytes() const { return bytes_; }
  int num_dense() const { return static_cast<int>(dense_names_.size()); }
  int num_sparse() const { return static_cast<int>(sparse_names_.size()); }
  bool has_group_keys() const { return has_group_; }
  const std::vector<std::string>& dense_names() const { return dense_names_; }
  const std::vector<std::string>& sparse_names() const { return sparse_names_; }

  // Fills *out with rows[0], rows[1], ... (each < rows()) in that order, reusing out's buffers.
  // out->source is "" and out->first_line 0 (a gathered batch has no single origin).
  void Gather(std::span<const uint32_t> rows, Batch* out) const;
  // Group key of every row, in row order; empty when !has_group_keys().
  std::vector<uint64_t> GroupKeys() const;

 private:
  friend class MemorySplitBuilder;
  struct Block {
    int64_t rows = 0;
    std::vector<uint64_t> records;  // rows * record_words_
    std::vector<uint64_t> pool;     // ids of multi-valued fields
  };
  MemorySplit() = default;
  // Layout of a record, in 8-byte words: [label, dense...] packed as floats in the first
  // dense_words_ words, then num_sparse() slots, then the group key.
  int64_t dense_words() const { return (1 + num_dense() + 1) / 2; }
  int64_t record_words() const { return dense_words() + num_sparse() + (has_group_ ? 1 : 0); }

  std::vector<Block> blocks_;
  std::vector<bool> multi_;  // per sparse column
  std::vector<std::string> dense_names_;
  std::vector<std::string> sparse_names_;
  bool has_group_ = false;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
  std::shared_ptr<MemoryBudget> budget_;  // bytes_ are reserved from it until destruction
};

// Accumulates the batches of one pass into a MemorySplit.
class MemorySplitBuilder {
 public:
  // `budget` must be non-null. The names are the reader's (BatchReader::dense_names() ...).
  MemorySplitBuilder(std::shared_ptr<MemoryBudget> budget, std::vector<std::string> dense_names,
                     std::vector<std::string> sparse_names);
  ~MemorySplitBuilder();  // releases whatever was reserved unless Finish() handed it on
  MemorySplitBuilder(const MemorySplitBuilder&) = delete;
  MemorySplitBuilder& operator=(const MemorySplitBuilder&) = delete;

  // Copies every row of `batch`. Errors: InvalidArgument when the batch's shape differs from
  // the names given (num_dense, num_sparse, column sizes) or group keys appear in some batches
  // only; ResourceExhausted when the budget cannot hold the rows (the builder is then unusable:
  // destroy it to return its bytes) or the split would exceed MemorySplit::kMaxRows rows.
  [[nodiscard]] Status Append(const Batch& batch);
  // The finished split (trims the last block's spare capacity). Call once.
  Result<std::shared_ptr<const MemorySplit>> Finish();

  int64_t rows() const { return split_ ? split_->rows_ : 0; }
  int64_t bytes() const { return split_ ? split_->bytes_ : 0; }

 private:
  Status Reserve(int64_t delta);

  std::shared_ptr<MemoryBudget> budget_;
  std::unique_ptr<MemorySplit> split_;
  bool failed_ = false;
  bool group_decided_ = false;
};

}  // namespace rectrain::data
