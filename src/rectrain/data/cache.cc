// The sample cache: key, build, lookup (data.cache) and the cache BatchReader.
//
// Reader pipeline (threads owned by the reader, like the text reader's):
//   workers (num_threads)  claim block sequence numbers (at most num_threads + 2 in flight), read
//                          the block with pread and decode it (checksums, lz4/zstd, dictionary
//                          gather) into a Batch of block rows.
//   assembler (1 thread)   takes decoded blocks strictly in sequence order, copies rows (in file
//                          order: whole ranges; shuffled: through the row-major shuffle buffer)
//                          into batches of batch_size, applies skip_rows, and fills the bounded
//                          prefetch queue.
//   consumer               Next() pops the queue.
//
// Buffers outlive the reader: decoded blocks, read scratch, batches and the shuffle buffer go back
// to a process-wide pool (BufferPool) when a reader is destroyed, and the next reader (the next
// epoch, eval, a tune trial) starts with them. A fresh buffer costs a zero-fill and a page fault
// per 4 KiB, which was about a third of a file-order pass and most of a shuffled one
// (docs/decisions/0003-sample-cache.md). The shuffle buffer is never value-initialised and is
// reserved once at min(shuffle_buffer_rows, rows of the files), so it is never regrown either.
#include "rectrain/data/cache.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/internal/cache_dispatch.h"
#include "rectrain/data/internal/cache_format.h"
#include "rectrain/data/internal/prefetch_queue.h"
#include "rectrain/data/internal/stats_pass.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"

namespace rectrain::data {

using internal::CacheFile;
using internal::CacheSchema;

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool NeedsStats(const DataConfig& config) {
  for (const auto& [name, spec] : config.transforms) {
    auto t = ParseTransform(spec);
    if (!t.ok()) continue;  // the reader reports it
    for (const TransformStep& s : t->steps) {
      if (s.NeedsStats()) return true;
    }
  }
  return false;
}

std::string Hex16(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// DataSignature entries ("key=len:value\n") as a map, for comparing a cache with a config.
std::map<std::string, std::string> SignatureEntries(const std::string& sig) {
  std::map<std::string, std::string> out;
  size_t pos = sig.find('\n');  // skip the version line
  pos = pos == std::string::npos ? sig.size() : pos + 1;
  while (pos < sig.size()) {
    const size_t eq = sig.find('=', pos);
    const size_t colon = eq == std::string::npos ? eq : sig.find(':', eq);
    if (colon == std::string::npos) break;
    const std::string key = sig.substr(pos, eq - pos);
    size_t len = 0;
    try {
      len = std::stoul(sig.substr(eq + 1, colon - eq - 1));
    } catch (...) {
      break;
    }
    if (colon + 1 + len > sig.size()) break;
    out[key] = sig.substr(colon + 1, len);
    pos = colon + 1 + len + 1;
  }
  return out;
}

// The settings that change the rows of a cache file read directly as input; a difference from
// the config is an error (the config would otherwise be silently ignored).
bool IsRowSetting(const std::string& key) {
  return key == "dense_default" || key == "hash_seed" || key == "filters" ||
         key == "negative_downsampling" || key.rfind("transform.", 0) == 0;
}

Status CheckSignature(const std::string& path, const std::string& stored, const std::string& wanted) {
  const auto a = SignatureEntries(stored);
  const auto b = SignatureEntries(wanted);
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a) {
    if (!IsRowSetting(k)) continue;
    auto it = b.find(k);
    const std::string other = it == b.end() ? "(unset)" : it->second;
    if (other != v) diff[k] = {v, other};
  }
  for (const auto& [k, v] : b) {
    if (IsRowSetting(k) && a.count(k) == 0) diff[k] = {"(unset)", v};
  }
  if (diff.empty()) return OkStatus();
  const auto& [k, vals] = *diff.begin();
  return InvalidArgumentError(
      "sample cache " + path + " holds rows built with " + k + " = \"" + vals.first +
      "\" but the config has \"" + vals.second + "\" (" + std::to_string(diff.size()) +
      " differing setting(s)); a cache file's rows are already transformed: make the config match, "
      "or rebuild the file from the source data with `rectrain data convert --to cache --config CONFIG`");
}

// ---- the reader ----

struct BlockRef {
  int file = 0;
  int64_t block = 0;
  int64_t first_row = 0;  // 0-based row of the block within its file
};

struct Decoded {
  int64_t seq = 0;
  Batch batch;
  Status status;
  int64_t bytes = 0;
  double seconds = 0;
};

// std::allocator without value-initialisation: resize() leaves new PODs uninitialised (every slot
// of the shuffle buffer is written before it is read).
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

// Process-wide free buffers for the next reader (see the top comment). Bounded: what one or two
// readers use at once; the shuffle buffer keeps the pages of the largest pass.
class BufferPool {
 public:
  static BufferPool& Get() {
    static BufferPool* pool = new BufferPool();  // leaked: readers may outlive static destructors
    return *pool;
  }
  std::unique_ptr<Decoded> TakeBlock() { return Take(&blocks_); }
  std::unique_ptr<internal::CacheReadScratch> TakeScratch() { return Take(&scratch_); }
  std::unique_ptr<ShuffleSlots> TakeShuffle() { return Take(&shuffle_); }
  std::optional<Batch> TakeBatch() {
    std::lock_guard<std::mutex> lock(mu_);
    if (batches_.empty()) return std::nullopt;
    Batch b = std::move(batches_.back());
    batches_.pop_back();
    return b;
  }
  void Give(std::unique_ptr<Decoded> d) { Put(&blocks_, std::move(d), kMaxBlocks); }
  void Give(std::unique_ptr<internal::CacheReadScratch> s) { Put(&scratch_, std::move(s), kMaxScratch); }
  void Give(std::unique_ptr<ShuffleSlots> s) { Put(&shuffle_, std::move(s), kMaxShuffle); }
  void Give(Batch&& b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (batches_.size() < kMaxBatches) batches_.push_back(std::move(b));
  }

 private:
  static constexpr size_t kMaxBlocks = 16;
  static constexpr size_t kMaxScratch = 8;
  static constexpr size_t kMaxShuffle = 2;
  static constexpr size_t kMaxBatches = 32;
  template <typename T>
  std::unique_ptr<T> Take(std::vector<std::unique_ptr<T>>* v) {
    std::lock_guard<std::mutex> lock(mu_);
    if (v->empty()) return nullptr;
    std::unique_ptr<T> out = std::move(v->back());
    v->pop_back();
    return out;
  }
  template <typename T>
  void Put(std::vector<std::unique_ptr<T>>* v, std::unique_ptr<T> x, size_t max) {
    if (x == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (v->size() < max) v->push_back(std::move(x));
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<Decoded>> blocks_;                       // guarded by mu_
  std::vector<std::unique_ptr<internal::CacheReadScratch>> scratch_;  // guarded by mu_
  std::vector<std::unique_ptr<ShuffleSlots>> shuffle_;                // guarded by mu_
  std::vector<Batch> batches_;                                         // guarded by mu_
};

class CacheBatchReader final : public BatchReader {
 public:
  CacheBatchReader(std::vector<std::unique_ptr<CacheFile>> files, const ReadOptions& options,
                   std::vector<BlockRef> order, std::string note)
      : files_(std::move(files)), options_(options), order_(std::move(order)), note_(std::move(note)) {
    const CacheSchema& s = files_[0]->footer().schema;
    dense_names_ = s.dense_names;
    sparse_names_ = s.sparse_names;
    multi_ = s.multi;
    has_group_ = s.has_group;
    for (size_t f = 0; f < multi_.size(); ++f) {
      if (multi_[f]) {
        multi_fields_.push_back(static_cast<int>(f));
      } else {
        single_fields_.push_back(static_cast<int>(f));
      }
    }
    stats_.files = static_cast<int64_t>(files_.size());
    window_ = options_.num_threads + 2;
    BufferPool& pool = BufferPool::Get();
    for (int64_t i = 0; i < window_; ++i) {
      std::unique_ptr<Decoded> d = pool.TakeBlock();
      if (d == nullptr) break;
      free_.push_back(std::move(d));
    }
    for (int i = 0; i < options_.prefetch_batches + 2; ++i) {
      std::optional<Batch> b = pool.TakeBatch();
      if (!b) break;
      recycled_.push_back(std::move(*b));
    }
    if (options_.shuffle && options_.shuffle_buffer_rows > 0) {
      int64_t total_rows = 0;
      for (const BlockRef& ref : order_) {
        total_rows += files_[static_cast<size_t>(ref.file)]->footer().blocks[static_cast<size_t>(ref.block)].rows;
      }
      sb_ = pool.TakeShuffle();
      if (sb_ == nullptr) sb_ = std::make_unique<ShuffleSlots>();
      // One reservation for the whole pass: no regrowth copies (untouched pages cost nothing).
      const size_t slots = static_cast<size_t>(std::min(options_.shuffle_buffer_rows, total_rows));
      sb_->labels.reserve(slots);
      sb_->dense.reserve(slots * dense_names_.size());
      sb_->ids.reserve(slots * single_fields_.size());
      sb_->multi.reserve(slots * multi_fields_.size());
      if (has_group_) sb_->group.reserve(slots);
      sb_->rows = 0;  // resized per this reader's schema as rows arrive
    }
    assembler_ = std::thread([this] { AssemblerLoop(); });
    for (int i = 0; i < options_.num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~CacheBatchReader() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    queue_.Stop();
    for (std::thread& t : workers_) t.join();
    assembler_.join();
    BufferPool& pool = BufferPool::Get();
    for (auto& d : free_) pool.Give(std::move(d));
    for (auto& [seq, d] : done_) pool.Give(std::move(d));
    for (Batch& b : recycled_) pool.Give(std::move(b));
    for (Item& item : queue_.TakeAll()) {
      if (!item.end && item.status.ok() && item.batch.size > 0) pool.Give(std::move(item.batch));
    }
    if (sb_ != nullptr) {
      for (auto& v : sb_->multi) v.clear();
      pool.Give(std::move(sb_));
    }
  }

  Result<std::optional<Batch>> Next() override {
    return internal::NextFromQueue(queue_, &latched_, &finished_, &stats_, stats_mu_);
  }

  void Recycle(Batch&& batch) override {
    if (batch.size != options_.batch_size || batch.num_dense != static_cast<int>(dense_names_.size()) ||
        batch.num_sparse() != static_cast<int>(sparse_names_.size())) {
      return;
    }
    std::lock_guard<std::mutex> lock(recycle_mu_);
    if (static_cast<int>(recycled_.size()) < options_.prefetch_batches + 2) recycled_.push_back(std::move(batch));
  }

  ReaderStats Stats() const override {
    ReaderStats stats;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats = stats_;
    }
    stats.queue_depth = queue_.size();
    return stats;
  }
  const std::vector<std::string>& dense_names() const override { return dense_names_; }
  const std::vector<std::string>& sparse_names() const override { return sparse_names_; }
  std::string cache_note() const override { return note_; }

 private:
  using Item = internal::PrefetchQueue::Item;

  void WorkerLoop() {
    std::unique_ptr<internal::CacheReadScratch> scratch_owner = BufferPool::Get().TakeScratch();
    if (scratch_owner == nullptr) scratch_owner = std::make_unique<internal::CacheReadScratch>();
    internal::CacheReadScratch& scratch = *scratch_owner;
    struct GiveBack {
      std::unique_ptr<internal::CacheReadScratch>* s;
      ~GiveBack() { BufferPool::Get().Give(std::move(*s)); }
    } give_back{&scratch_owner};
    const int64_t n = static_cast<int64_t>(order_.size());
    while (true) {
      int64_t seq;
      std::unique_ptr<Decoded> d;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || next_claim_ >= n || next_claim_ < next_consume_ + window_; });
        if (stop_ || next_claim_ >= n) return;
        seq = next_claim_++;
        if (!free_.empty()) {
          d = std::move(free_.back());
          free_.pop_back();
        }
      }
      if (!d) d = std::make_unique<Decoded>();
      Stopwatch sw;
      const BlockRef& ref = order_[static_cast<size_t>(seq)];
      const CacheFile& file = *files_[static_cast<size_t>(ref.file)];
      d->seq = seq;
      d->status = file.ReadBlock(ref.block, &scratch, &d->batch);
      d->bytes = file.footer().blocks[static_cast<size_t>(ref.block)].bytes;
      d->seconds = sw.Seconds();
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_[seq] = std::move(d);
      }
      work_cv_.notify_all();
    }
  }

  bool Push(Item item) { return queue_.Push(std::move(item)); }

  void Fail(Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    Item item;
    item.status = std::move(s);
    Push(std::move(item));
  }

  void AssemblerLoop() {
    const int64_t n = static_cast<int64_t>(order_.size());
    const bool shuffle = options_.shuffle && options_.shuffle_buffer_rows > 0;
    rng_ = Rng(DeriveSeed(DeriveSeed(options_.seed, 0x5348554646ULL), static_cast<uint64_t>(options_.epoch)));
    skip_remaining_ = options_.skip_rows;
    for (int64_t seq = 0; seq < n; ++seq) {
      std::unique_ptr<Decoded> d;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || done_.count(seq) > 0; });
        if (stop_) return;
        auto it = done_.find(seq);
        d = std::move(it->second);
        done_.erase(it);
        ++next_consume_;
      }
      work_cv_.notify_all();
      if (!d->status.ok()) {
        Fail(d->status);
        return;
      }
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.bytes_read += d->bytes;
        stats_.parse_seconds += d->seconds;
      }
      const Batch& b = d->batch;
      const BlockRef& ref = order_[static_cast<size_t>(seq)];
      if (shuffle) {
        for (int64_t r = 0; r < b.size; ++r) {
          if (!ShuffleRow(b, r)) return;
        }
      } else {
        int64_t r = 0;
        while (r < b.size) {
          const int64_t skip = std::min(skip_remaining_, b.size - r);
          if (skip > 0) {
            skip_remaining_ -= skip;
            rows_skipped_ += skip;
            r += skip;
            continue;
          }
          if (batch_.labels.empty()) StartBatch();
          if (batch_.size == 0 && !options_.shuffle) {
            batch_.source = files_[static_cast<size_t>(ref.file)]->path();
            batch_.first_line = ref.first_row + r + 1;
          }
          const int64_t take = std::min(b.size - r, options_.batch_size - batch_.size);
          CopyRange(b, r, take);
          r += take;
          if (batch_.size == options_.batch_size && !FlushBatch()) return;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(std::move(d));
      }
    }
    if (shuffle && !DrainShuffle()) return;
    if (!FlushBatch()) return;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.rows_skipped = rows_skipped_;
      for (const auto& f : files_) {
        stats_.rows_rejected += f->footer().counts.rows_rejected;
        stats_.rows_filtered += f->footer().counts.rows_filtered;
        stats_.rows_downsampled += f->footer().counts.rows_downsampled;
      }
    }
    Item end;
    end.end = true;
    Push(std::move(end));
  }

  void StartBatch() {
    const int64_t bs = options_.batch_size;
    {
      std::lock_guard<std::mutex> lock(recycle_mu_);
      if (!recycled_.empty()) {
        batch_ = std::move(recycled_.back());
        recycled_.pop_back();
      } else {
        batch_ = Batch();
      }
    }
    const int nd = static_cast<int>(dense_names_.size());
    batch_.size = 0;
    batch_.source.clear();
    batch_.first_line = 0;
    batch_.num_dense = nd;
    batch_.labels.resize(static_cast<size_t>(bs));
    batch_.dense.resize(static_cast<size_t>(bs * nd));
    batch_.sparse.resize(sparse_names_.size());
    for (size_t f = 0; f < multi_.size(); ++f) {
      SparseColumn& c = batch_.sparse[f];
      if (multi_[f]) {
        c.offsets.resize(static_cast<size_t>(bs + 1));
        c.offsets[0] = 0;
        c.ids.clear();
      } else {
        c.offsets.clear();
        c.ids.resize(static_cast<size_t>(bs));
      }
    }
    if (has_group_) {
      batch_.group_keys.resize(static_cast<size_t>(bs));
    } else {
      batch_.group_keys.clear();
    }
  }

  // Appends rows [r0, r0 + n) of a decoded block (file order).
  void CopyRange(const Batch& b, int64_t r0, int64_t n) {
    const int64_t at = batch_.size;
    const int nd = batch_.num_dense;
    std::copy_n(b.labels.data() + r0, n, batch_.labels.data() + at);
    std::copy_n(b.dense.data() + r0 * nd, n * nd, batch_.dense.data() + at * nd);
    for (int f : single_fields_) {
      std::copy_n(b.sparse[f].ids.data() + r0, n, batch_.sparse[f].ids.data() + at);
    }
    for (int f : multi_fields_) {
      const SparseColumn& src = b.sparse[f];
      SparseColumn& dst = batch_.sparse[f];
      const int32_t base = dst.offsets[at] - src.offsets[r0];
      dst.ids.insert(dst.ids.end(), src.ids.begin() + src.offsets[r0], src.ids.begin() + src.offsets[r0 + n]);
      for (int64_t k = 1; k <= n; ++k) dst.offsets[at + k] = src.offsets[r0 + k] + base;
    }
    if (has_group_) std::copy_n(b.group_keys.data() + r0, n, batch_.group_keys.data() + at);
    batch_.size = at + n;
  }

  bool FlushBatch() {
    if (batch_.size == 0) return true;
    const int64_t n = batch_.size;
    batch_.labels.resize(static_cast<size_t>(n));
    batch_.dense.resize(static_cast<size_t>(n * batch_.num_dense));
    for (SparseColumn& c : batch_.sparse) {
      if (c.offsets.empty()) {
        c.ids.resize(static_cast<size_t>(n));
      } else {
        c.offsets.resize(static_cast<size_t>(n + 1));
      }
    }
    if (has_group_) batch_.group_keys.resize(static_cast<size_t>(n));
    Item item;
    item.batch = std::move(batch_);
    batch_ = Batch();
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.rows_skipped = rows_skipped_;
    }
    return Push(std::move(item));
  }

  // ---- shuffle buffer: row-major slots (label, dense, single ids, multi ids, group) ----
  void StoreRow(const Batch& b, int64_t r, int64_t j) {
    const int nd = b.num_dense;
    const size_t n1 = single_fields_.size();
    const size_t nm = multi_fields_.size();
    sb_->labels[j] = b.labels[r];
    std::copy_n(b.dense.data() + r * nd, nd, sb_->dense.data() + j * nd);
    uint64_t* ids = sb_->ids.data() + j * static_cast<int64_t>(n1);
    for (size_t k = 0; k < n1; ++k) ids[k] = b.sparse[single_fields_[k]].ids[r];
    for (size_t m = 0; m < nm; ++m) {
      const SparseColumn& c = b.sparse[multi_fields_[m]];
      sb_->multi[j * nm + m].assign(c.ids.begin() + c.offsets[r], c.ids.begin() + c.offsets[r + 1]);
    }
    if (has_group_) sb_->group[j] = b.group_keys[r];
  }

  // Emits slot j as the next row; false if the reader is being destroyed.
  bool EmitSlot(int64_t j) {
    if (skip_remaining_ > 0) {
      --skip_remaining_;
      ++rows_skipped_;
      return true;
    }
    if (batch_.labels.empty()) StartBatch();
    const int64_t r = batch_.size;
    const int nd = batch_.num_dense;
    const size_t n1 = single_fields_.size();
    const size_t nm = multi_fields_.size();
    batch_.labels[r] = sb_->labels[j];
    std::copy_n(sb_->dense.data() + j * nd, nd, batch_.dense.data() + r * nd);
    const uint64_t* ids = sb_->ids.data() + j * static_cast<int64_t>(n1);
    for (size_t k = 0; k < n1; ++k) batch_.sparse[single_fields_[k]].ids[r] = ids[k];
    for (size_t m = 0; m < nm; ++m) {
      SparseColumn& c = batch_.sparse[multi_fields_[m]];
      const std::vector<uint64_t>& v = sb_->multi[j * nm + m];
      c.ids.insert(c.ids.end(), v.begin(), v.end());
      c.offsets[r + 1] = static_cast<int32_t>(c.ids.size());
    }
    if (has_group_) batch_.group_keys[r] = sb_->group[j];
    batch_.size = r + 1;
    if (batch_.size == options_.batch_size) return FlushBatch();
    return true;
  }

  bool ShuffleRow(const Batch& b, int64_t r) {
    const int64_t cap = options_.shuffle_buffer_rows;
    if (sb_size_ < cap) {
      if (sb_size_ == sb_->rows) {
        // Within the reservation made in the constructor: no reallocation, no zero-fill.
        const int64_t grow = std::min(cap, std::max<int64_t>(4096, sb_size_ * 2));
        sb_->labels.resize(static_cast<size_t>(grow));
        sb_->dense.resize(static_cast<size_t>(grow * b.num_dense));
        sb_->ids.resize(static_cast<size_t>(grow) * single_fields_.size());
        sb_->multi.resize(static_cast<size_t>(grow) * multi_fields_.size());
        if (has_group_) sb_->group.resize(static_cast<size_t>(grow));
        sb_->rows = grow;
      }
      StoreRow(b, r, sb_size_++);
      return true;
    }
    const int64_t j = static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(cap)));
    if (!EmitSlot(j)) return false;
    StoreRow(b, r, j);
    return true;
  }

  bool DrainShuffle() {
    const int nd = static_cast<int>(dense_names_.size());
    const int64_t n1 = static_cast<int64_t>(single_fields_.size());
    const int64_t nm = static_cast<int64_t>(multi_fields_.size());
    while (sb_size_ > 0) {
      const int64_t j = static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(sb_size_)));
      if (!EmitSlot(j)) return false;
      const int64_t last = --sb_size_;
      if (j != last) {
        sb_->labels[j] = sb_->labels[last];
        std::copy_n(sb_->dense.data() + last * nd, nd, sb_->dense.data() + j * nd);
        std::copy_n(sb_->ids.data() + last * n1, n1, sb_->ids.data() + j * n1);
        for (int64_t m = 0; m < nm; ++m) std::swap(sb_->multi[j * nm + m], sb_->multi[last * nm + m]);
        if (has_group_) sb_->group[j] = sb_->group[last];
      }
    }
    return true;
  }

  const std::vector<std::unique_ptr<CacheFile>> files_;
  const ReadOptions options_;
  const std::vector<BlockRef> order_;
  const std::string note_;
  std::vector<std::string> dense_names_;
  std::vector<std::string> sparse_names_;
  std::vector<bool> multi_;
  std::vector<int> single_fields_;
  std::vector<int> multi_fields_;
  bool has_group_ = false;
  int64_t window_ = 1;

  std::mutex mu_;
  std::condition_variable work_cv_;
  bool stop_ = false;                                       // guarded by mu_
  int64_t next_claim_ = 0;                                  // guarded by mu_
  int64_t next_consume_ = 0;                                // guarded by mu_
  std::map<int64_t, std::unique_ptr<Decoded>> done_;        // guarded by mu_
  std::vector<std::unique_ptr<Decoded>> free_;              // guarded by mu_

  internal::PrefetchQueue queue_{options_.prefetch_batches};

  std::mutex recycle_mu_;
  std::vector<Batch> recycled_;  // guarded by recycle_mu_

  mutable std::mutex stats_mu_;
  ReaderStats stats_;  // guarded by stats_mu_

  // Assembler-thread state.
  Batch batch_;
  Rng rng_{0};
  int64_t skip_remaining_ = 0;
  int64_t rows_skipped_ = 0;
  int64_t sb_size_ = 0;
  std::unique_ptr<ShuffleSlots> sb_;  // set when shuffling (from the pool)

  // Consumer-thread state.
  Status latched_;
  bool finished_ = false;

  std::vector<std::thread> workers_;
  std::thread assembler_;
};

Status ValidateReadOptions(const ReadOptions& o) {
  if (o.batch_size <= 0) return InvalidArgumentError("batch_size must be > 0, got " + std::to_string(o.batch_size));
  if (o.num_threads < 1 || o.num_threads > 256) {
    return InvalidArgumentError("data.num_threads must be in 1..256, got " + std::to_string(o.num_threads));
  }
  if (o.prefetch_batches < 1) {
    return InvalidArgumentError("data.prefetch_batches must be >= 1, got " + std::to_string(o.prefetch_batches));
  }
  if (o.shuffle_buffer_rows < 0) {
    return InvalidArgumentError("data.shuffle_buffer_rows must be >= 0, got " + std::to_string(o.shuffle_buffer_rows));
  }
  if (o.skip_rows < 0) return InvalidArgumentError("skip_rows must be >= 0, got " + std::to_string(o.skip_rows));
  return OkStatus();
}

Result<std::unique_ptr<BatchReader>> OpenCacheFiles(const std::vector<std::string>& paths,
                                                    const ReadOptions& options, const std::string& expected_key,
                                                    const std::string& signature, std::string note) {
  RECTRAIN_RETURN_IF_ERROR(ValidateReadOptions(options));
  if (paths.empty()) return InvalidArgumentError("no sample cache files to read");
  std::vector<std::unique_ptr<CacheFile>> files;
  std::vector<BlockRef> order;
  for (const std::string& p : paths) {
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CacheFile> f, CacheFile::Open(p));
    const internal::CacheFooter& footer = f->footer();
    if (!expected_key.empty() && footer.key != expected_key) {
      return FailedPreconditionError("sample cache " + p + " was built for other data or settings (its key differs)");
    }
    if (!signature.empty()) {
      RECTRAIN_RETURN_IF_ERROR(CheckSignature(p, footer.signature, signature));
    }
    if (!files.empty()) {
      const CacheSchema& a = files[0]->footer().schema;
      const CacheSchema& b = footer.schema;
      if (a.dense_names != b.dense_names || a.sparse_names != b.sparse_names || a.multi != b.multi ||
          a.has_group != b.has_group) {
        return InvalidArgumentError("sample cache " + p + " has other fields than " + files[0]->path() +
                                    "; all cache files of one split must share one schema");
      }
    }
    int64_t row = 0;
    for (size_t b = 0; b < footer.blocks.size(); ++b) {
      order.push_back(BlockRef{static_cast<int>(files.size()), static_cast<int64_t>(b), row});
      row += footer.blocks[b].rows;
    }
    files.push_back(std::move(f));
  }
  if (options.shuffle) {
    Rng rng(DeriveSeed(DeriveSeed(options.seed, 0x4348554e4bULL), static_cast<uint64_t>(options.epoch)));
    for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
    }
  }
  return std::unique_ptr<BatchReader>(new CacheBatchReader(std::move(files), options, std::move(order), std::move(note)));
}

CacheInfo InfoOf(const CacheFile& f) {
  CacheInfo info;
  info.path = f.path();
  info.rows = f.footer().rows;
  info.blocks = static_cast<int64_t>(f.footer().blocks.size());
  info.file_bytes = f.file_size();
  info.source_bytes = f.footer().counts.source_bytes;
  info.rows_rejected = f.footer().counts.rows_rejected;
  info.rows_filtered = f.footer().counts.rows_filtered;
  info.rows_downsampled = f.footer().counts.rows_downsampled;
  return info;
}

std::string WithThousands(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > (v < 0 ? 1 : 0); i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

Result<std::string> CacheKey(const DataConfig& config) {
  std::string key = "rectrain-sample-cache-key v" + std::to_string(internal::kCacheFormatVersion) + "\n";
  key += internal::DataSignature(config);
  key += "max_bad_rows=" + std::to_string(config.max_bad_rows) + "\n";
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths(config.files));
  for (const std::string& p : paths) {
    RECTRAIN_ASSIGN_OR_RETURN(io::FileFingerprint fp, io::Fingerprint(p));
    key += "file=" + std::to_string(p.size()) + ":" + p + " " + fp.ToString() + "\n";
  }
  if (NeedsStats(config)) {
    // Standardize/quantiles statistics come from these files: other statistics, other rows.
    const std::vector<std::string>& stats = config.stats_files.empty() ? config.files : config.stats_files;
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> spaths, io::ExpandPaths(stats));
    for (const std::string& p : spaths) {
      RECTRAIN_ASSIGN_OR_RETURN(io::FileFingerprint fp, io::Fingerprint(p));
      key += "stats_file=" + std::to_string(p.size()) + ":" + p + " " + fp.ToString() + "\n";
    }
  }
  return key;
}

std::string CachePath(const DataConfig& config, const std::string& key) {
  return internal::CacheDir(config) + "/samples-" + Hex16(HashBytes(key, 0x7274636163686bULL)) + ".rtc";
}

Result<std::optional<CacheInfo>> FindCache(const DataConfig& config) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, CacheKey(config));
  const std::string path = CachePath(config, key);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::optional<CacheInfo>();
  auto f = CacheFile::Open(path);
  if (!f.ok() || (*f)->footer().key != key) return std::optional<CacheInfo>();
  return std::optional<CacheInfo>(InfoOf(**f));
}

Result<CacheInfo> BuildCache(const DataConfig& config, const ReadOptions& read,
                             const CacheWriteOptions& options, const std::string& out_path) {
  RECTRAIN_ASSIGN_OR_RETURN(internal::CacheCodec codec, internal::ParseCacheCodec(options.codec));
  if (options.block_rows < 1 || options.block_rows > internal::kCacheMaxBlockRows) {
    return InvalidArgumentError("cache block rows must be in 1.." + std::to_string(internal::kCacheMaxBlockRows) +
                                ", got " + std::to_string(options.block_rows));
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, CacheKey(config));
  std::string path = out_path;
  if (path.empty()) {
    if (!options.force) {
      RECTRAIN_ASSIGN_OR_RETURN(std::optional<CacheInfo> found, FindCache(config));
      if (found) return *found;
    }
    const std::string dir = internal::CacheDir(config);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return UnavailableError("cannot create the cache directory " + dir + " (data.cache_dir): " + ec.message());
    path = CachePath(config, key);
  }
  Stopwatch sw;
  DataConfig src = config;
  src.cache = "off";
  ReadOptions ro = read;
  ro.shuffle = false;
  ro.skip_rows = 0;
  ro.epoch = 0;
  ro.batch_size = options.block_rows;  // one batch per block
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenBatchReader(src, ro));
  CacheSchema schema;
  schema.dense_names = reader->dense_names();
  schema.sparse_names = reader->sparse_names();
  schema.multi.assign(schema.sparse_names.size(), false);
  std::unique_ptr<internal::CacheFileWriter> writer;
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> batch, reader->Next());
    if (!batch) break;
    if (!writer) {
      for (size_t f = 0; f < schema.multi.size(); ++f) schema.multi[f] = !batch->sparse[f].single_valued();
      schema.has_group = !batch->group_keys.empty();
      RECTRAIN_ASSIGN_OR_RETURN(writer, internal::CacheFileWriter::Create(path, schema, codec, options.block_rows));
    }
    RECTRAIN_RETURN_IF_ERROR(writer->Append(*batch));
    reader->Recycle(std::move(*batch));
  }
  if (!writer) {
    RECTRAIN_ASSIGN_OR_RETURN(writer, internal::CacheFileWriter::Create(path, schema, codec, options.block_rows));
  }
  const ReaderStats rs = reader->Stats();
  internal::CacheBuildCounts counts;
  counts.rows_rejected = rs.rows_rejected;
  counts.rows_filtered = rs.rows_filtered;
  counts.rows_downsampled = rs.rows_downsampled;
  counts.source_files = rs.files;
  counts.source_bytes = rs.bytes_read;
  const int64_t raw = writer->raw_bytes();
  RECTRAIN_RETURN_IF_ERROR(writer->Finish(key, internal::DataSignature(src), src.schema.format, counts));
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CacheFile> check, CacheFile::Open(path));
  CacheInfo info = InfoOf(*check);
  info.built = true;
  info.raw_bytes = raw;
  info.seconds = sw.Seconds();
  return info;
}

Result<std::unique_ptr<BatchReader>> OpenCacheReader(const std::vector<std::string>& paths,
                                                     const ReadOptions& options, const std::string& expected_key,
                                                     const std::string& signature) {
  std::string note = "sample cache ";
  for (size_t i = 0; i < paths.size(); ++i) note += (i ? ", " : "") + paths[i];
  return OpenCacheFiles(paths, options, expected_key, signature, note);
}

namespace internal {

bool UsesCache(const DataConfig& config) {
  if (config.cache != "off" || config.schema.format == "cache") return true;
  // Cache files are read as such whatever data.format says (parsing them as text never helps).
  return !config.files.empty() && std::all_of(config.files.begin(), config.files.end(),
                                              [](const std::string& f) { return EndsWith(f, ".rtc"); });
}

Result<std::unique_ptr<BatchReader>> OpenWithCache(const DataConfig& config, const ReadOptions& options) {
  if (config.cache != "off" && config.cache != "auto" && config.cache != "build") {
    return InvalidArgumentError("data.cache must be off, auto or build, got \"" + config.cache + "\"");
  }
  {
    Result<std::vector<std::string>> paths = io::ExpandPaths(config.files);
    bool all_rtc = paths.ok() && !paths->empty();
    for (const std::string& p : paths.ok() ? *paths : std::vector<std::string>()) all_rtc = all_rtc && EndsWith(p, ".rtc");
    if (config.schema.format == "cache" || all_rtc) {
      if (!paths.ok()) return paths.status();
      return OpenCacheReader(*paths, options, "", DataSignature(config));
    }
  }
  if (config.cache == "off") return OpenParsingReader(config, options);
  // A key that cannot be computed (a missing file, ...) is reported by the parsing reader,
  // whose messages name the file and option.
  Result<std::string> key = CacheKey(config);
  if (!key.ok()) return OpenParsingReader(config, options);
  Result<std::optional<CacheInfo>> found = FindCache(config);
  if (!found.ok()) return OpenParsingReader(config, options);
  std::optional<CacheInfo> info = *found;
  if (!info && config.cache == "build") {
    RECTRAIN_ASSIGN_OR_RETURN(CacheInfo built, BuildCache(config, options, CacheWriteOptions{}));
    info = built;
  }
  if (!info) return OpenParsingReader(config, options);
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", info->seconds);
  std::string note = "sample cache " + info->path + " (" + WithThousands(info->rows) + " rows, " +
                     WithThousands(info->file_bytes) + " bytes; " +
                     (info->built ? "built now in " + std::string(secs) + " s" : std::string("key matches")) + ")";
  return OpenCacheFiles({info->path}, options, *key, "", std::move(note));
}

}  // namespace internal

}  // namespace rectrain::data
