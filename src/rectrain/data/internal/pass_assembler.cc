#include "rectrain/data/internal/pass_assembler.h"

#include "rectrain/base/memory.h"

#include <algorithm>

namespace rectrain::data::internal {

RowLayout RowLayout::Make(int num_dense, std::vector<bool> multi, bool has_group) {
  RowLayout l;
  l.num_dense = num_dense;
  l.multi = std::move(multi);
  l.has_group = has_group;
  for (int f = 0; f < l.num_sparse(); ++f) (l.multi[static_cast<size_t>(f)] ? l.multi_fields : l.single_fields).push_back(f);
  return l;
}

void BatchRecycler::Give(Batch&& b) {
  // Only full-size batches of this pass's shape are worth keeping.
  if (b.size != batch_size_ || b.num_dense != layout_->num_dense || b.num_sparse() != layout_->num_sparse()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (batches_.size() < capacity_) batches_.push_back(std::move(b));
}

void BatchRecycler::Stock(Batch&& b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (batches_.size() < capacity_) batches_.push_back(std::move(b));
}

std::optional<Batch> BatchRecycler::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (batches_.empty()) return std::nullopt;
  Batch b = std::move(batches_.back());
  batches_.pop_back();
  return b;
}

std::vector<Batch> BatchRecycler::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(batches_, {});
}

Status CheckReaderBuffersFit(const ReadOptions& options, const RowLayout& layout, int64_t expected_rows) {
  const double memory = static_cast<double>(PhysicalMemoryBytes());
  if (memory <= 0) return OkStatus();
  const double n1 = static_cast<double>(layout.single_fields.size()), nm = static_cast<double>(layout.multi_fields.size());
  const double group = layout.has_group ? sizeof(uint64_t) : 0;
  // A batch row (Batch): the label, the dense values, an id per single-valued field, an offset
  // per multi-valued one (its ids besides), the group key.
  const double batch_row = sizeof(float) * (1.0 + layout.num_dense) + sizeof(uint64_t) * n1 + sizeof(int32_t) * nm + group;
  const double batches = static_cast<double>(options.batch_size) * batch_row * (options.prefetch_batches + 3.0);
  // A shuffle slot (ShuffleSlots): the same, with a list per multi-valued field.
  const double slot = sizeof(float) * (1.0 + layout.num_dense) + sizeof(uint64_t) * n1 + sizeof(std::vector<uint64_t>) * nm + group;
  const bool shuffling = options.shuffle && options.shuffle_buffer_rows > 0;
  const double slots =
      shuffling ? static_cast<double>(expected_rows >= 0 ? std::min(options.shuffle_buffer_rows, expected_rows)
                                                         : options.shuffle_buffer_rows) * slot
                : 0.0;
  if (batches + slots <= memory) return OkStatus();
  const std::string row = "a label, " + std::to_string(layout.num_dense) + " dense values and " +
                          std::to_string(layout.num_sparse()) + " categorical fields a row";
  if (slots > batches) {
    return InvalidArgumentError("data.shuffle_buffer: " + std::to_string(options.shuffle_buffer_rows) + " rows (" + row +
                                ") need " + FormatBytes(slots) + ", more than this machine's memory (" +
                                FormatBytes(memory) + "): at most " +
                                std::to_string(static_cast<int64_t>((memory - batches) / slot)) +
                                " rows here, or data.shuffle: global for a permutation of the whole split");
  }
  return InvalidArgumentError("data.batch_size: " + std::to_string(options.batch_size) + " rows (" + row + ") in " +
                              std::to_string(options.prefetch_batches + 3) + " batches (data.prefetch + 3) need " +
                              FormatBytes(batches) + ", more than this machine's memory (" + FormatBytes(memory) +
                              "); lower data.batch_size or data.prefetch");
}

BatchAssembler::BatchAssembler(const RowLayout& layout, const ReadOptions& options, PrefetchQueue* queue,
                               BatchRecycler* recycler, std::unique_ptr<ShuffleSlots> slots, int64_t expected_rows)
    : layout_(layout),
      options_(options),
      shuffle_(options.shuffle && options.shuffle_buffer_rows > 0),
      queue_(queue),
      recycler_(recycler),
      sb_(std::move(slots)),
      // The shuffle buffer's stream ("SHUFF"), per epoch.
      rng_(DeriveSeed(DeriveSeed(options.seed, 0x5348554646ULL), static_cast<uint64_t>(options.epoch))),
      skip_remaining_(options.skip_rows) {
  if (!shuffle_) {
    sb_.reset();
    return;
  }
  if (sb_ == nullptr) sb_ = std::make_unique<ShuffleSlots>();
  // One reservation for the whole pass: no regrowth copies (untouched pages cost nothing).
  const int64_t cap = options.shuffle_buffer_rows;
  const size_t slots_wanted = static_cast<size_t>(expected_rows >= 0 ? std::min(cap, expected_rows) : cap);
  sb_->labels.reserve(slots_wanted);
  sb_->dense.reserve(slots_wanted * static_cast<size_t>(layout_.num_dense));
  sb_->ids.reserve(slots_wanted * layout_.single_fields.size());
  sb_->multi.reserve(slots_wanted * layout_.multi_fields.size());
  if (layout_.has_group) sb_->group.reserve(slots_wanted);
  sb_->rows = 0;  // sized for this pass's layout as rows arrive
}

std::unique_ptr<ShuffleSlots> BatchAssembler::TakeSlots() {
  if (sb_ != nullptr) {
    for (auto& v : sb_->multi) v.clear();
  }
  return std::move(sb_);
}

bool BatchAssembler::Skip() {
  if (skip_remaining_ == 0) return false;
  --skip_remaining_;
  rows_skipped_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void BatchAssembler::StartBatch(const std::string* source, int64_t line) {
  const int64_t bs = options_.batch_size;
  std::optional<Batch> recycled = recycler_->Take();
  batch_ = recycled ? std::move(*recycled) : Batch();
  batch_.size = 0;
  batch_.source = source != nullptr ? *source : std::string();
  batch_.first_line = source != nullptr ? line : 0;
  batch_.num_dense = layout_.num_dense;
  batch_.labels.resize(static_cast<size_t>(bs));
  batch_.dense.resize(static_cast<size_t>(bs * layout_.num_dense));
  batch_.sparse.resize(static_cast<size_t>(layout_.num_sparse()));
  for (int f = 0; f < layout_.num_sparse(); ++f) {
    SparseColumn& c = batch_.sparse[static_cast<size_t>(f)];
    if (layout_.multi[static_cast<size_t>(f)]) {
      c.offsets.resize(static_cast<size_t>(bs + 1));
      c.offsets[0] = 0;
      c.ids.clear();
    } else {
      c.offsets.clear();
      c.ids.resize(static_cast<size_t>(bs));
    }
  }
  if (layout_.has_group) {
    batch_.group_keys.resize(static_cast<size_t>(bs));
  } else {
    batch_.group_keys.clear();
  }
  open_ = true;
}

bool BatchAssembler::Deliver() {
  open_ = false;
  const int64_t n = batch_.size;
  if (n == 0) return true;
  batch_.labels.resize(static_cast<size_t>(n));
  batch_.dense.resize(static_cast<size_t>(n * layout_.num_dense));
  for (SparseColumn& c : batch_.sparse) {
    if (c.offsets.empty()) {
      c.ids.resize(static_cast<size_t>(n));
    } else {
      c.offsets.resize(static_cast<size_t>(n + 1));
    }
  }
  if (layout_.has_group) batch_.group_keys.resize(static_cast<size_t>(n));
  PrefetchQueue::Item item;
  item.batch = std::move(batch_);
  batch_ = Batch();
  return queue_->Push(std::move(item));
}

bool BatchAssembler::FinishBatchIfFull() { return batch_.size < options_.batch_size || Deliver(); }

void BatchAssembler::EmitView(const RowView& row) {
  const int64_t r = batch_.size;
  const int nd = layout_.num_dense;
  batch_.labels[static_cast<size_t>(r)] = row.label;
  std::copy(row.dense, row.dense + nd, batch_.dense.data() + r * nd);
  for (int f : layout_.single_fields) batch_.sparse[static_cast<size_t>(f)].ids[static_cast<size_t>(r)] = row.ids[f];
  for (int m = 0; m < layout_.num_multi(); ++m) {
    SparseColumn& c = batch_.sparse[static_cast<size_t>(layout_.multi_fields[static_cast<size_t>(m)])];
    c.ids.insert(c.ids.end(), row.multi[m].ids, row.multi[m].ids + row.multi[m].n);
    c.offsets[static_cast<size_t>(r + 1)] = static_cast<int32_t>(c.ids.size());
  }
  if (layout_.has_group) batch_.group_keys[static_cast<size_t>(r)] = row.group;
  batch_.size = r + 1;
}

void BatchAssembler::EmitSlot(int64_t j) {
  const int64_t r = batch_.size;
  const int nd = layout_.num_dense;
  const size_t n1 = layout_.single_fields.size();
  const size_t nm = layout_.multi_fields.size();
  batch_.labels[static_cast<size_t>(r)] = sb_->labels[static_cast<size_t>(j)];
  std::copy_n(sb_->dense.data() + j * nd, nd, batch_.dense.data() + r * nd);
  const uint64_t* ids = sb_->ids.data() + j * static_cast<int64_t>(n1);
  for (size_t k = 0; k < n1; ++k) batch_.sparse[static_cast<size_t>(layout_.single_fields[k])].ids[static_cast<size_t>(r)] = ids[k];
  for (size_t m = 0; m < nm; ++m) {
    SparseColumn& c = batch_.sparse[static_cast<size_t>(layout_.multi_fields[m])];
    const std::vector<uint64_t>& v = sb_->multi[static_cast<size_t>(j) * nm + m];
    c.ids.insert(c.ids.end(), v.begin(), v.end());
    c.offsets[static_cast<size_t>(r + 1)] = static_cast<int32_t>(c.ids.size());
  }
  if (layout_.has_group) batch_.group_keys[static_cast<size_t>(r)] = sb_->group[static_cast<size_t>(j)];
  batch_.size = r + 1;
}

void BatchAssembler::GrowSlots() {
  // Within the reservation made in the constructor: no reallocation, no zero-fill.
  const int64_t grow = std::min(options_.shuffle_buffer_rows, std::max<int64_t>(4096, sb_size_ * 2));
  sb_->labels.resize(static_cast<size_t>(grow));
  sb_->dense.resize(static_cast<size_t>(grow * layout_.num_dense));
  sb_->ids.resize(static_cast<size_t>(grow) * layout_.single_fields.size());
  sb_->multi.resize(static_cast<size_t>(grow) * layout_.multi_fields.size());
  if (layout_.has_group) sb_->group.resize(static_cast<size_t>(grow));
  sb_->rows = grow;
}

void BatchAssembler::StoreView(const RowView& row, int64_t j) {
  const int nd = layout_.num_dense;
  const size_t n1 = layout_.single_fields.size();
  const size_t nm = layout_.multi_fields.size();
  sb_->labels[static_cast<size_t>(j)] = row.label;
  std::copy_n(row.dense, nd, sb_->dense.data() + j * nd);
  uint64_t* ids = sb_->ids.data() + j * static_cast<int64_t>(n1);
  for (size_t k = 0; k < n1; ++k) ids[k] = row.ids[layout_.single_fields[k]];
  for (size_t m = 0; m < nm; ++m) {
    sb_->multi[static_cast<size_t>(j) * nm + m].assign(row.multi[m].ids, row.multi[m].ids + row.multi[m].n);
  }
  if (layout_.has_group) sb_->group[static_cast<size_t>(j)] = row.group;
}

void BatchAssembler::StoreBatchRow(const Batch& b, int64_t r, int64_t j) {
  const int nd = layout_.num_dense;
  const size_t n1 = layout_.single_fields.size();
  const size_t nm = layout_.multi_fields.size();
  sb_->labels[static_cast<size_t>(j)] = b.labels[static_cast<size_t>(r)];
  std::copy_n(b.dense.data() + r * nd, nd, sb_->dense.data() + j * nd);
  uint64_t* ids = sb_->ids.data() + j * static_cast<int64_t>(n1);
  for (size_t k = 0; k < n1; ++k) ids[k] = b.sparse[static_cast<size_t>(layout_.single_fields[k])].ids[static_cast<size_t>(r)];
  for (size_t m = 0; m < nm; ++m) {
    const SparseColumn& c = b.sparse[static_cast<size_t>(layout_.multi_fields[m])];
    sb_->multi[static_cast<size_t>(j) * nm + m].assign(c.ids.begin() + c.offsets[static_cast<size_t>(r)],
                                                       c.ids.begin() + c.offsets[static_cast<size_t>(r + 1)]);
  }
  if (layout_.has_group) sb_->group[static_cast<size_t>(j)] = b.group_keys[static_cast<size_t>(r)];
}

bool BatchAssembler::MakeRoom(int64_t* slot) {
  const int64_t cap = options_.shuffle_buffer_rows;
  if (sb_size_ < cap) {
    if (sb_size_ == sb_->rows) GrowSlots();
    *slot = sb_size_++;
    return true;
  }
  // Full: a uniformly drawn resident row leaves, the new row takes its slot.
  const int64_t j = static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(cap)));
  *slot = j;
  if (Skip()) return true;
  if (!open_) StartBatch(nullptr, 0);
  EmitSlot(j);
  return FinishBatchIfFull();
}

bool BatchAssembler::AddRow(const RowView& row, const std::string* source, int64_t line) {
  if (shuffle_) {
    int64_t j = 0;
    if (!MakeRoom(&j)) return false;
    StoreView(row, j);
    return true;
  }
  if (Skip()) return true;
  if (!open_) StartBatch(source, line);
  EmitView(row);
  return FinishBatchIfFull();
}

bool BatchAssembler::AddRows(const Batch& b, int64_t r0, int64_t n, const std::string* source, int64_t first_line) {
  if (shuffle_) {
    for (int64_t r = r0; r < r0 + n; ++r) {
      int64_t j = 0;
      if (!MakeRoom(&j)) return false;
      StoreBatchRow(b, r, j);
    }
    return true;
  }
  int64_t r = r0;
  const int64_t end = r0 + n;
  while (r < end) {
    const int64_t skip = std::min(skip_remaining_, end - r);
    if (skip > 0) {
      skip_remaining_ -= skip;
      rows_skipped_.fetch_add(skip, std::memory_order_relaxed);
      r += skip;
      continue;
    }
    if (!open_) StartBatch(source, first_line + (r - r0));
    // Copy a range of columns at once (the file-order fast path).
    const int64_t take = std::min(end - r, options_.batch_size - batch_.size);
    const int64_t at = batch_.size;
    const int nd = layout_.num_dense;
    std::copy_n(b.labels.data() + r, take, batch_.labels.data() + at);
    std::copy_n(b.dense.data() + r * nd, take * nd, batch_.dense.data() + at * nd);
    for (int f : layout_.single_fields) {
      std::copy_n(b.sparse[static_cast<size_t>(f)].ids.data() + r, take, batch_.sparse[static_cast<size_t>(f)].ids.data() + at);
    }
    for (int f : layout_.multi_fields) {
      const SparseColumn& src = b.sparse[static_cast<size_t>(f)];
      SparseColumn& dst = batch_.sparse[static_cast<size_t>(f)];
      const int32_t base = dst.offsets[static_cast<size_t>(at)] - src.offsets[static_cast<size_t>(r)];
      dst.ids.insert(dst.ids.end(), src.ids.begin() + src.offsets[static_cast<size_t>(r)],
                     src.ids.begin() + src.offsets[static_cast<size_t>(r + take)]);
      for (int64_t k = 1; k <= take; ++k) {
        dst.offsets[static_cast<size_t>(at + k)] = src.offsets[static_cast<size_t>(r + k)] + base;
      }
    }
    if (layout_.has_group) std::copy_n(b.group_keys.data() + r, take, batch_.group_keys.data() + at);
    batch_.size = at + take;
    r += take;
    if (!FinishBatchIfFull()) return false;
  }
  return true;
}

bool BatchAssembler::Flush() {
  if (shuffle_) {
    // The remainder in a uniformly random order (a draw without replacement).
    const int nd = layout_.num_dense;
    const int64_t n1 = static_cast<int64_t>(layout_.single_fields.size());
    const int64_t nm = static_cast<int64_t>(layout_.multi_fields.size());
    while (sb_size_ > 0) {
      const int64_t j = static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(sb_size_)));
      if (!Skip()) {
        if (!open_) StartBatch(nullptr, 0);
        EmitSlot(j);
        if (!FinishBatchIfFull()) return false;
      }
      const int64_t last = --sb_size_;
      if (j != last) {
        sb_->labels[static_cast<size_t>(j)] = sb_->labels[static_cast<size_t>(last)];
        std::copy_n(sb_->dense.data() + last * nd, nd, sb_->dense.data() + j * nd);
        std::copy_n(sb_->ids.data() + last * n1, n1, sb_->ids.data() + j * n1);
        for (int64_t m = 0; m < nm; ++m) std::swap(sb_->multi[static_cast<size_t>(j * nm + m)], sb_->multi[static_cast<size_t>(last * nm + m)]);
        if (layout_.has_group) sb_->group[static_cast<size_t>(j)] = sb_->group[static_cast<size_t>(last)];
      }
    }
  }
  return !open_ || Deliver();
}

bool BatchAssembler::PushEnd() {
  PrefetchQueue::Item end;
  end.end = true;
  return queue_->Push(std::move(end));
}

bool BatchAssembler::PushError(Status s) {
  PrefetchQueue::Item item;
  item.status = std::move(s);
  return queue_->Push(std::move(item));
}

}  // namespace rectrain::data::internal
