#include "rectrain/data/memory_split.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "rectrain/base/check.h"

namespace rectrain::data {
namespace {

template <typename T>
int64_t CapacityBytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}

std::string Mib(int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

bool MemoryBudget::TryReserve(int64_t bytes) {
  int64_t used = used_bytes_.load(std::memory_order_relaxed);
  while (true) {
    if (bytes > limit_bytes_ - used) return false;
    if (used_bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed)) return true;
  }
}

void MemoryBudget::Release(int64_t bytes) { used_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

int64_t MemoryBudget::DefaultBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 30;
  return static_cast<int64_t>(pages) * static_cast<int64_t>(page_size) / 4;
}

MemorySplit::~MemorySplit() {
  if (budget_) budget_->Release(bytes_);
}

namespace {
constexpr int64_t kPrefetchAhead = 8;  // rows
constexpr uint64_t kLow32 = 0xffffffffULL;
}  // namespace

void MemorySplit::Gather(std::span<const uint32_t> rows, Batch* out) const {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int nd = num_dense();
  const int ns = num_sparse();
  const int64_t words = record_words();
  const int64_t dw = dense_words();
  out->size = n;
  out->num_dense = nd;
  out->source.clear();
  out->first_line = 0;
  out->labels.resize(static_cast<size_t>(n));
  out->dense.resize(static_cast<size_t>(n * nd));
  out->sparse.resize(static_cast<size_t>(ns));
  out->group_keys.resize(has_group_ ? static_cast<size_t>(n) : 0);
  int num_multi = 0;
  for (int c = 0; c < ns; ++c) {
    SparseColumn& col = out->sparse[static_cast<size_t>(c)];
    if (multi_[static_cast<size_t>(c)]) {
      ++num_multi;
      col.offsets.assign(static_cast<size_t>(n + 1), 0);
    } else {
      col.offsets.clear();
      col.ids.resize(static_cast<size_t>(n));
    }
  }
  auto record = [&](uint32_t r) {
    return blocks_[r / kBlockRows].records.data() + static_cast<int64_t>(r % kBlockRows) * words;
  };
  // One pass over the records (row-major reads, prefetched ahead); multi-valued fields get their
  // counts here and their ids in a second pass.
  for (int64_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) {
      const char* ahead = reinterpret_cast<const char*>(record(rows[static_cast<size_t>(i + kPrefetchAhead)]));
      for (int64_t b = 0; b < words * 8; b += 64) __builtin_prefetch(ahead + b);
    }
    const uint32_t r = rows[static_cast<size_t>(i)];
    RECTRAIN_DCHECK(r < rows_);
    const uint64_t* rec = record(r);
    std::memcpy(&out->labels[static_cast<size_t>(i)], rec, sizeof(float));
    if (nd > 0) {
      std::memcpy(out->dense.data() + i * nd, reinterpret_cast<const char*>(rec) + sizeof(float),
                  sizeof(float) * static_cast<size_t>(nd));
    }
    const uint64_t* slots = rec + dw;
    for (int c = 0; c < ns; ++c) {
      SparseColumn& col = out->sparse[static_cast<size_t>(c)];
      if (num_multi == 0 || !multi_[static_cast<size_t>(c)]) {
        col.ids[static_cast<size_t>(i)] = slots[c];
      } else {
        col.offsets[static_cast<size_t>(i + 1)] = static_cast<int32_t>(slots[c] >> 32);
      }
    }
    if (has_group_) out->group_keys[static_cast<size_t>(i)] = slots[ns];
  }
  if (num_multi == 0) return;
  for (int c = 0; c < ns; ++c) {
    if (!multi_[static_cast<size_t>(c)]) continue;
    SparseColumn& col = out->sparse[static_cast<size_t>(c)];
    int64_t total = 0;
    for (int64_t i = 1; i <= n; ++i) {
      total += col.offsets[static_cast<size_t>(i)];
      RECTRAIN_CHECK(total <= INT32_MAX) << "a gathered batch holds more than 2^31 ids in field "
                                         << sparse_names_[static_cast<size_t>(c)];
      col.offsets[static_cast<size_t>(i)] = static_cast<int32_t>(total);
    }
    col.ids.resize(static_cast<size_t>(total));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t r = rows[static_cast<size_t>(i)];
      const uint64_t slot = record(r)[dw + c];
      const uint64_t* pool = blocks_[r / kBlockRows].pool.data() + (slot & kLow32);
      std::copy_n(pool, slot >> 32, col.ids.data() + col.offsets[static_cast<size_t>(i)]);
    }
  }
}

std::vector<uint64_t> MemorySplit::GroupKeys() const {
  std::vector<uint64_t> keys;
  if (!has_group_) return keys;
  keys.reserve(static_cast<size_t>(rows_));
  const int64_t words = record_words();
  for (const Block& b : blocks_) {
    for (int64_t r = 0; r < b.rows; ++r) keys.push_back(b.records[static_cast<size_t>(r * words + words - 1)]);
  }
  return keys;
}

// ---- builder ----

MemorySplitBuilder::MemorySplitBuilder(std::shared_ptr<MemoryBudget> budget,
                                       std::vector<std::string> dense_names,
                                       std::vector<std::string> sparse_names)
    : budget_(std::move(budget)), split_(new MemorySplit()) {
  RECTRAIN_CHECK(budget_ != nullptr);
  split_->multi_.assign(sparse_names.size(), false);
  split_->dense_names_ = std::move(dense_names);
  split_->sparse_names_ = std::move(sparse_names);
}

MemorySplitBuilder::~MemorySplitBuilder() {
  if (split_) budget_->Release(split_->bytes_);
}

Status MemorySplitBuilder::Reserve(int64_t delta) {
  if (delta <= 0) {
    budget_->Release(-delta);
    split_->bytes_ += delta;
    return OkStatus();
  }
  if (!budget_->TryReserve(delta)) {
    failed_ = true;
    return ResourceExhaustedError(
        "the memory cache is full: " + std::to_string(split_->rows_) + " rows take " + Mib(split_->bytes_) +
        " and the next " + Mib(delta) + " would exceed data.memory_cache_bytes (" +
        Mib(budget_->limit_bytes()) + ", " + Mib(budget_->used_bytes()) + " in use)");
  }
  split_->bytes_ += delta;
  return OkStatus();
}

namespace {
constexpr size_t kUnbounded = size_t{1} << 40;
// Grows `v`'s capacity to at least `needed` (doubling, capped at `limit` elements when that
// suffices), reserving the added bytes from the builder first.
template <typename T, typename ReserveFn>
Status Ensure(std::vector<T>& v, size_t needed, size_t limit, ReserveFn&& reserve) {
  if (v.capacity() >= needed) return OkStatus();
  size_t cap = std::max(needed, std::min(limit, std::max<size_t>(v.capacity() * 2, 1024)));
  const int64_t before = CapacityBytes(v);
  RECTRAIN_RETURN_IF_ERROR(reserve(static_cast<int64_t>(cap * sizeof(T)) - before));
  v.reserve(cap);
  const int64_t extra = CapacityBytes(v) - static_cast<int64_t>(cap * sizeof(T));
  if (extra != 0) return reserve(extra);  // an allocator that rounds up (not libstdc++)
  return OkStatus();
}
}  // namespace

Status MemorySplitBuilder::Append(const Batch& batch) {
  if (failed_) return FailedPreconditionError("MemorySplitBuilder::Append after a failed Append");
  MemorySplit& s = *split_;
  const int64_t n = batch.size;
  const int nd = s.num_dense();
  const size_t ns = s.sparse_names_.size();
  if (n < 0 || batch.num_dense != nd || batch.num_sparse() != static_cast<int>(ns) ||
      static_cast<int64_t>(batch.labels.size()) != n ||
      static_cast<int64_t>(batch.dense.size()) != n * nd) {
    return InvalidArgumentError("memory cache: a batch of " + std::to_string(n) + " rows with " +
                                std::to_string(batch.num_dense) + " dense and " +
                                std::to_string(batch.num_sparse()) + " sparse fields does not match the split (" +
                                std::to_string(nd) + " dense, " + std::to_string(ns) + " sparse)");
  }
  for (size_t c = 0; c < ns; ++c) {
    const SparseColumn& col = batch.sparse[c];
    const bool ok = col.single_valued()
                        ? static_cast<int64_t>(col.ids.size()) == n
                        : static_cast<int64_t>(col.offsets.size()) == n + 1 && col.offsets[0] == 0 &&
                              static_cast<int64_t>(col.ids.size()) == col.offsets[static_cast<size_t>(n)];
    if (!ok) {
      return InvalidArgumentError("memory cache: sparse field " + s.sparse_names_[c] +
                                  " has inconsistent CSR sizes in a batch of " + std::to_string(n) + " rows");
    }
  }
  if (n == 0) return OkStatus();
  const bool has_group = !batch.group_keys.empty();
  if (has_group && static_cast<int64_t>(batch.group_keys.size()) != n) {
    return InvalidArgumentError("memory cache: a batch of " + std::to_string(n) + " rows has " +
                                std::to_string(batch.group_keys.size()) + " group keys");
  }
  if (!group_decided_) {
    s.has_group_ = has_group;
    group_decided_ = true;
  } else if (has_group != s.has_group_) {
    return InvalidArgumentError("memory cache: group keys are present in some batches only");
  }
  if (s.rows_ + n > MemorySplit::kMaxRows) {
    failed_ = true;
    return ResourceExhaustedError("the memory cache holds at most " + std::to_string(MemorySplit::kMaxRows) +
                                  " rows; set data.memory_cache: off for this split");
  }
  auto reserve = [this](int64_t delta) { return Reserve(delta); };
  const int64_t words = s.record_words();
  const int64_t dw = s.dense_words();
  // A field seen multi-valued for the first time: existing rows move their id into the pool.
  for (size_t c = 0; c < ns; ++c) {
    if (batch.sparse[c].single_valued() || s.multi_[c]) continue;
    s.multi_[c] = true;
    for (MemorySplit::Block& b : s.blocks_) {
      const size_t needed = b.pool.size() + static_cast<size_t>(b.rows);
      RECTRAIN_RETURN_IF_ERROR(Ensure(b.pool, needed, kUnbounded, reserve));
      for (int64_t r = 0; r < b.rows; ++r) {
        uint64_t& slot = b.records[static_cast<size_t>(r * words + dw) + c];
        b.pool.push_back(slot);
        slot = (uint64_t{1} << 32) | static_cast<uint64_t>(b.pool.size() - 1);
      }
    }
  }
  int64_t done = 0;
  while (done < n) {
    if (s.blocks_.empty() || s.blocks_.back().rows == MemorySplit::kBlockRows) s.blocks_.emplace_back();
    MemorySplit::Block& b = s.blocks_.back();
    const int64_t take = std::min(n - done, MemorySplit::kBlockRows - b.rows);
    RECTRAIN_RETURN_IF_ERROR(Ensure(b.records, static_cast<size_t>((b.rows + take) * words),
                                    static_cast<size_t>(MemorySplit::kBlockRows * words), reserve));
    int64_t pool_add = 0;
    for (size_t c = 0; c < ns; ++c) {
      if (s.multi_[c]) pool_add += batch.sparse[c].RowEnd(done + take - 1) - batch.sparse[c].RowBegin(done);
    }
    if (static_cast<int64_t>(b.pool.size()) + pool_add > static_cast<int64_t>(kLow32)) {
      failed_ = true;
      return ResourceExhaustedError("the memory cache holds at most 2^32-1 ids of multi-valued fields per " +
                                    std::to_string(MemorySplit::kBlockRows) +
                                    " rows; set data.memory_cache: off for this split");
    }
    const size_t pool_needed = b.pool.size() + static_cast<size_t>(pool_add);
    RECTRAIN_RETURN_IF_ERROR(Ensure(b.pool, pool_needed, kUnbounded, reserve));
    const size_t first_word = static_cast<size_t>(b.rows * words);
    b.records.resize(first_word + static_cast<size_t>(take * words), 0);
    for (int64_t i = 0; i < take; ++i) {
      const int64_t r = done + i;
      uint64_t* rec = b.records.data() + first_word + static_cast<size_t>(i * words);
      char* bytes = reinterpret_cast<char*>(rec);
      std::memcpy(bytes, &batch.labels[static_cast<size_t>(r)], sizeof(float));
      if (nd > 0) {
        std::memcpy(bytes + sizeof(float), batch.dense.data() + r * nd, sizeof(float) * static_cast<size_t>(nd));
      }
      uint64_t* slots = rec + dw;
      for (size_t c = 0; c < ns; ++c) {
        const SparseColumn& col = batch.sparse[c];
        if (!s.multi_[c]) {
          slots[c] = col.ids[static_cast<size_t>(r)];
          continue;
        }
        const int64_t begin = col.RowBegin(r), end = col.RowEnd(r);
        slots[c] = (static_cast<uint64_t>(end - begin) << 32) | static_cast<uint64_t>(b.pool.size());
        b.pool.insert(b.pool.end(), col.ids.begin() + begin, col.ids.begin() + end);
      }
      if (s.has_group_) slots[ns] = batch.group_keys[static_cast<size_t>(r)];
    }
    b.rows += take;
    s.rows_ += take;
    done += take;
  }
  return OkStatus();
}

Result<std::shared_ptr<const MemorySplit>> MemorySplitBuilder::Finish() {
  if (failed_ || !split_) return FailedPreconditionError("MemorySplitBuilder::Finish after a failure or twice");
  MemorySplit& s = *split_;
  if (!s.blocks_.empty()) {
    MemorySplit::Block& b = s.blocks_.back();
    const int64_t before = CapacityBytes(b.records) + CapacityBytes(b.pool);
    b.records.shrink_to_fit();
    b.pool.shrink_to_fit();
    const int64_t after = CapacityBytes(b.records) + CapacityBytes(b.pool);
    budget_->Release(before - after);
    s.bytes_ -= before - after;
  }
  s.budget_ = budget_;
  return std::shared_ptr<const MemorySplit>(split_.release());
}

}  // namespace rectrain::data
