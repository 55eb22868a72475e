// rectrain/data/internal/pass_assembler.h: private to data/. The machinery every file reader's
// pass shares, written once for the text/Parquet reader (reader.cc) and the sample-cache reader
// (cache.cc):
//
//   OrderedWindow   workers claim units of the pass (pass_plan.h) by sequence number and decode
//                   them out of order, at most `window` ahead of the consumer; one assembler takes
//                   the decoded blocks strictly in sequence order, so the rows never depend on
//                   thread timing. Blocks are recycled between units.
//   BatchAssembler  (the assembler thread's) rows -> Batches of batch_size: the bounded shuffle
//                   buffer (row-major slots, a uniform draw per row, seeded by (seed, epoch)),
//                   ReadOptions::skip_rows, batch buffers reused from a BatchRecycler, and the
//                   prefetch queue towards Next().
//   BatchRecycler   consumed batches handed back by BatchReader::Recycle for reuse (fresh memory
//                   is slow to touch on our machines).
//
// Thread safety: OrderedWindow and BatchRecycler are thread-safe. A BatchAssembler belongs to
// the one assembler thread (rows_skipped() may be read from any thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/data/batch.h"
#include "rectrain/data/internal/prefetch_queue.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

// std::allocator without value-initialisation: resize() leaves new PODs uninitialised (every slot
// of the shuffle buffer is written before it is read, so zero-filling it would only cost page
// faults).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <typename T>
using PodBuffer = std::vector<T, DefaultInitAllocator<T>>;

// The kinds of a pass's fields.
struct RowLayout {
  int num_dense = 0;
  std::vector<bool> multi;  // per sparse field: multi-valued
  bool has_group = false;
  std::vector<int> single_fields;  // derived by Make()
  std::vector<int> multi_fields;

  static RowLayout Make(int num_dense, std::vector<bool> multi, bool has_group);
  int num_sparse() const { return static_cast<int>(multi.size()); }
  int num_multi() const { return static_cast<int>(multi_fields.size()); }
};

// One multi-valued field of one row.
struct MultiList {
  const uint64_t* ids = nullptr;
  int32_t n = 0;
};

// One row as the text parser holds it: ids[f] is single-valued field f's id (the entries of
// multi-valued fields are ignored), multi[m] the list of the m-th multi-valued field.
struct RowView {
  float label = 0;
  const float* dense = nullptr;
  const uint64_t* ids = nullptr;
  const MultiList* multi = nullptr;
  uint64_t group = 0;
};

// The row-major shuffle buffer: slot j holds label j, dense [j*nd, j*nd+nd), single-valued ids
// [j*n1, j*n1+n1), multi-valued ids multi[j*nm + m], group key j.
struct ShuffleSlots {
  PodBuffer<float> labels;
  PodBuffer<float> dense;
  PodBuffer<uint64_t> ids;
  std::vector<std::vector<uint64_t>> multi;
  PodBuffer<uint64_t> group;
  int64_t rows = 0;  // slots sized so far
};

class BatchRecycler {
 public:
  // Keeps up to `capacity` batches of exactly `batch_size` rows and `layout`'s shape.
  BatchRecycler(int64_t batch_size, const RowLayout* layout, size_t capacity)
      : batch_size_(batch_size), layout_(layout), capacity_(capacity) {}
  void Give(Batch&& b);
  // Adds a batch of any shape (buffers kept from an earlier pass), within the capacity.
  void Stock(Batch&& b);
  std::optional<Batch> Take();
  std::vector<Batch> TakeAll();

 private:
  const int64_t batch_size_;
  const RowLayout* layout_;
  const size_t capacity_;
  std::mutex mu_;
  std::vector<Batch> batches_;  // guarded by mu_
};

template <typename Block>
class OrderedWindow {
 public:
  // `n` units; `group_sizes` (empty: all 1) gives, at the first unit of a group, how many
  // consecutive units one worker claims together (the slices of one Parquet row group).
  OrderedWindow(int64_t n, int64_t window, std::vector<int64_t> group_sizes = {})
      : n_(n), window_(window), group_sizes_(std::move(group_sizes)) {}

  struct Claim {
    int64_t seq = 0;
    int64_t count = 1;
  };
  // Blocks until a unit may be claimed (within the window); nullopt when stopped or all claimed.
  std::optional<Claim> ClaimNext() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || next_claim_ >= n_ || next_claim_ < next_consume_ + window_; });
    if (stop_ || next_claim_ >= n_) return std::nullopt;
    Claim c{next_claim_, group_sizes_.empty() ? 1 : group_sizes_[static_cast<size_t>(next_claim_)]};
    next_claim_ += c.count;
    return c;
  }
  // A recycled block, or a new one.
  std::unique_ptr<Block> FreeBlock() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<Block> b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return std::make_unique<Block>();
  }
  // Pre-stocks the free list (blocks kept from an earlier pass).
  void AddFree(std::unique_ptr<Block> b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }
  void Complete(int64_t seq, std::unique_ptr<Block> block) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_[seq] = std::move(block);
    }
    cv_.notify_all();
  }
  // Assembler: the block of unit `seq` once decoded; nullptr when stopped.
  std::unique_ptr<Block> Await(int64_t seq) {
    std::unique_ptr<Block> b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || done_.count(seq) > 0; });
      if (stop_) return nullptr;
      auto it = done_.find(seq);
      b = std::move(it->second);
      done_.erase(it);
      ++next_consume_;
    }
    cv_.notify_all();
    return b;
  }
  void Release(std::unique_ptr<Block> block) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(block));
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  // Every block still held (free or decoded); call after the workers and the assembler joined.
  std::vector<std::unique_ptr<Block>> TakeBlocks() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::unique_ptr<Block>> out = std::move(free_);
    for (auto& [seq, b] : done_) out.push_back(std::move(b));
    done_.clear();
    return out;
  }

 private:
  const int64_t n_;
  const int64_t window_;
  const std::vector<int64_t> group_sizes_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                // guarded by mu_
  int64_t next_claim_ = 0;                           // guarded by mu_
  int64_t next_consume_ = 0;                         // guarded by mu_
  std::map<int64_t, std::unique_ptr<Block>> done_;  // guarded by mu_
  std::vector<std::unique_ptr<Block>> free_;         // guarded by mu_
};

// What a reader holds for a pass, reserved up front: its batches (each sized to data.batch_size
// rows of `layout` when it starts, data.prefetch + 3 of them: queued, recycled, in assembly)
// and, when shuffling, the shuffle buffer (data.shuffle_buffer rows, or `expected_rows` when
// fewer; -1: unknown). More than this machine's memory cannot be honoured: InvalidArgument
// naming the keys, what a row holds and how much the machine has.
Status CheckReaderBuffersFit(const ReadOptions& options, const RowLayout& layout, int64_t expected_rows);

class BatchAssembler {
 public:
  // `queue` and `recycler` must outlive the assembler. `slots` (may be null: a new buffer) is the
  // shuffle buffer's storage, `expected_rows` (-1: unknown) the pass's rows, to reserve it once.
  BatchAssembler(const RowLayout& layout, const ReadOptions& options, PrefetchQueue* queue,
                 BatchRecycler* recycler, std::unique_ptr<ShuffleSlots> slots, int64_t expected_rows);

  bool shuffling() const { return shuffle_; }

  // Adds one row (through the shuffle buffer when shuffling). `source`/`line` name where it came
  // from in file order (nullptr/0: unknown). False once the reader is being destroyed.
  bool AddRow(const RowView& row, const std::string* source, int64_t line);
  // Adds rows [r0, r0 + n) of a decoded columnar block; in file order they are copied as ranges.
  // `first_line` is the 1-based line (row) of r0 in `source`.
  bool AddRows(const Batch& block, int64_t r0, int64_t n, const std::string* source, int64_t first_line);
  // Drains the shuffle buffer and delivers the last, partial batch. False when destroyed.
  bool Flush();
  // The end of the pass (after Flush), or its error.
  bool PushEnd();
  bool PushError(Status s);

  int64_t rows_skipped() const { return rows_skipped_.load(std::memory_order_relaxed); }
  // The shuffle buffer's storage, for reuse by a later reader (multi lists emptied).
  std::unique_ptr<ShuffleSlots> TakeSlots();

 private:
  bool Skip();
  void StartBatch(const std::string* source, int64_t line);
  bool FinishBatchIfFull();
  bool Deliver();
  void EmitView(const RowView& row);
  void EmitSlot(int64_t j);
  void GrowSlots();
  void StoreView(const RowView& row, int64_t j);
  void StoreBatchRow(const Batch& b, int64_t r, int64_t j);
  // Emits a uniformly drawn slot to make room; false when destroyed.
  bool MakeRoom(int64_t* slot);

  const RowLayout layout_;
  const ReadOptions options_;
  const bool shuffle_;
  PrefetchQueue* queue_;
  BatchRecycler* recycler_;
  std::unique_ptr<ShuffleSlots> sb_;
  int64_t sb_size_ = 0;
  Rng rng_;
  Batch batch_;
  bool open_ = false;  // batch_ is being filled
  int64_t skip_remaining_ = 0;
  std::atomic<int64_t> rows_skipped_{0};
};

}  // namespace rectrain::data::internal
