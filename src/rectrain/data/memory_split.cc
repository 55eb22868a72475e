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

void MemorySplit::Gather(std::span<const uint32_t> rows, Batch* out) const {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int nd = num_dense();
  out->size = n;
  out->num_dense = nd;
  out->source.clear();
  out->first_line = 0;
  out->labels.resize(static_cast<size_t>(n));
  out->dense.resize(static_cast<size_t>(n * nd));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = rows[static_cast<size_t>(i)];
    RECTRAIN_DCHECK(r < rows_);
    const Block& b = blocks_[r / kBlockRows];
    const int64_t o = r % kBlockRows;
    out->labels[static_cast<size_t>(i)] = b.labels[static_cast<size_t>(o)];
    if (nd > 0) {
      std::memcpy(out->dense.data() + i * nd, b.dense.data() + o * nd, sizeof(float) * static_cast<size_t>(nd));
    }
  }
  out->sparse.resize(sparse_names_.size());
  for (size_t c = 0; c < sparse_names_.size(); ++c) {
    SparseColumn& col = out->sparse[c];
    if (!multi_[c]) {
      col.offsets.clear();
      col.ids.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t r = rows[static_cast<size_t>(i)];
        col.ids[static_cast<size_t>(i)] = blocks_[r / kBlockRows].sparse[c].ids[r % kBlockRows];
      }
      continue;
    }
    col.offsets.resize(static_cast<size_t>(n + 1));
    col.offsets[0] = 0;
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t r = rows[static_cast<size_t>(i)];
      const Column& src = blocks_[r / kBlockRows].sparse[c];
      const int64_t o = r % kBlockRows;
      total += src.offsets[static_cast<size_t>(o + 1)] - src.offsets[static_cast<size_t>(o)];
      RECTRAIN_CHECK(total <= INT32_MAX) << "a gathered batch holds more than 2^31 ids in field "
                                         << sparse_names_[c];
      col.offsets[static_cast<size_t>(i + 1)] = static_cast<int32_t>(total);
    }
    col.ids.resize(static_cast<size_t>(total));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t r = rows[static_cast<size_t>(i)];
      const Column& src = blocks_[r / kBlockRows].sparse[c];
      const int64_t o = r % kBlockRows;
      const int64_t begin = src.offsets[static_cast<size_t>(o)];
      const int64_t len = src.offsets[static_cast<size_t>(o + 1)] - begin;
      std::copy_n(src.ids.data() + begin, len, col.ids.data() + col.offsets[static_cast<size_t>(i)]);
    }
  }
  if (has_group_) {
    out->group_keys.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t r = rows[static_cast<size_t>(i)];
      out->group_keys[static_cast<size_t>(i)] = blocks_[r / kBlockRows].group_keys[r % kBlockRows];
    }
  } else {
    out->group_keys.clear();
  }
}

std::vector<uint64_t> MemorySplit::GroupKeys() const {
  std::vector<uint64_t> keys;
  if (!has_group_) return keys;
  keys.reserve(static_cast<size_t>(rows_));
  for (const Block& b : blocks_) keys.insert(keys.end(), b.group_keys.begin(), b.group_keys.end());
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
  // A field seen multi-valued for the first time: existing blocks get CSR offsets.
  for (size_t c = 0; c < ns; ++c) {
    if (batch.sparse[c].single_valued() || s.multi_[c]) continue;
    s.multi_[c] = true;
    for (MemorySplit::Block& b : s.blocks_) {
      MemorySplit::Column& col = b.sparse[c];
      RECTRAIN_RETURN_IF_ERROR(Ensure(col.offsets, static_cast<size_t>(b.rows + 1),
                                      static_cast<size_t>(MemorySplit::kBlockRows + 1), reserve));
      col.offsets.resize(static_cast<size_t>(b.rows + 1));
      for (int64_t r = 0; r <= b.rows; ++r) col.offsets[static_cast<size_t>(r)] = r;
    }
  }
  int64_t done = 0;
  while (done < n) {
    if (s.blocks_.empty() || s.blocks_.back().rows == MemorySplit::kBlockRows) {
      s.blocks_.emplace_back();
      s.blocks_.back().sparse.resize(ns);
    }
    MemorySplit::Block& b = s.blocks_.back();
    const int64_t take = std::min(n - done, MemorySplit::kBlockRows - b.rows);
    const size_t rows_after = static_cast<size_t>(b.rows + take);
    const size_t lim = static_cast<size_t>(MemorySplit::kBlockRows);
    RECTRAIN_RETURN_IF_ERROR(Ensure(b.labels, rows_after, lim, reserve));
    RECTRAIN_RETURN_IF_ERROR(Ensure(b.dense, rows_after * static_cast<size_t>(nd), lim * static_cast<size_t>(nd), reserve));
    if (s.has_group_) {
      RECTRAIN_RETURN_IF_ERROR(Ensure(b.group_keys, rows_after, lim, reserve));
    }
    b.labels.insert(b.labels.end(), batch.labels.begin() + done, batch.labels.begin() + done + take);
    b.dense.insert(b.dense.end(), batch.dense.begin() + done * nd, batch.dense.begin() + (done + take) * nd);
    if (s.has_group_) {
      b.group_keys.insert(b.group_keys.end(), batch.group_keys.begin() + done,
                          batch.group_keys.begin() + done + take);
    }
    for (size_t c = 0; c < ns; ++c) {
      const SparseColumn& src = batch.sparse[c];
      MemorySplit::Column& dst = b.sparse[c];
      if (!s.multi_[c]) {
        RECTRAIN_RETURN_IF_ERROR(Ensure(dst.ids, rows_after, lim, reserve));
        dst.ids.insert(dst.ids.end(), src.ids.begin() + done, src.ids.begin() + done + take);
        continue;
      }
      RECTRAIN_RETURN_IF_ERROR(Ensure(dst.offsets, rows_after + 1, lim + 1, reserve));
      if (dst.offsets.empty()) dst.offsets.push_back(0);
      const int64_t first = src.RowBegin(done);
      const int64_t last = src.RowEnd(done + take - 1);
      const size_t ids_after = dst.ids.size() + static_cast<size_t>(last - first);
      RECTRAIN_RETURN_IF_ERROR(Ensure(dst.ids, ids_after, ids_after, reserve));
      const int64_t base = static_cast<int64_t>(dst.ids.size()) - first;
      for (int64_t r = done; r < done + take; ++r) dst.offsets.push_back(base + src.RowEnd(r));
      dst.ids.insert(dst.ids.end(), src.ids.begin() + first, src.ids.begin() + last);
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
    int64_t before = CapacityBytes(b.labels) + CapacityBytes(b.dense) + CapacityBytes(b.group_keys);
    for (const auto& c : b.sparse) before += CapacityBytes(c.offsets) + CapacityBytes(c.ids);
    b.labels.shrink_to_fit();
    b.dense.shrink_to_fit();
    b.group_keys.shrink_to_fit();
    int64_t after = CapacityBytes(b.labels) + CapacityBytes(b.dense) + CapacityBytes(b.group_keys);
    for (auto& c : b.sparse) {
      c.offsets.shrink_to_fit();
      c.ids.shrink_to_fit();
      after += CapacityBytes(c.offsets) + CapacityBytes(c.ids);
    }
    budget_->Release(before - after);
    s.bytes_ -= before - after;
  }
  s.budget_ = budget_;
  return std::shared_ptr<const MemorySplit>(split_.release());
}

}  // namespace rectrain::data
