#include "rectrain/data/epoch_source.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "rectrain/base/stopwatch.h"

namespace rectrain::data {
namespace {

// "<what>: <s's message>; <fix>", keeping s's code.
Status Explain(const Status& s, const std::string& what, const std::string& fix) {
  return Status(s.code(), what + ": " + s.message() + "; " + fix);
}

std::string Mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Serves a MemorySplit in a given order, batch_size rows at a time, starting at skip_rows. One
// background thread gathers up to `prefetch` batches ahead (like the file readers' prefetch
// queue), so the gathers overlap training; the order is fixed up front, so timing cannot
// change it. Gathering inside Next() instead was measured (docs/benchmarks.md "In-memory epoch
// cache", follow-up): no gain at 100k-400k rows, and at 1M rows a random-order gather misses
// the caches (3-4 s of data wait per epoch on the training thread vs 0.2 s with this thread).
class MemoryBatchReader final : public BatchReader {
 public:
  MemoryBatchReader(std::shared_ptr<const MemorySplit> split, std::vector<uint32_t> order,
                    int64_t batch_size, int64_t skip_rows, int prefetch)
      : split_(std::move(split)),
        order_(std::move(order)),
        batch_size_(batch_size),
        depth_(static_cast<size_t>(std::max(1, prefetch))) {
    const int64_t n = static_cast<int64_t>(order_.size());
    next_row_ = std::min(skip_rows, n);
    stats_.rows_skipped = next_row_;
    worker_ = std::thread([this] { Produce(); });
  }

  ~MemoryBatchReader() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  Result<std::optional<Batch>> Next() override {
    Stopwatch sw;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || produced_all_; });
    if (ready_.empty()) return std::optional<Batch>();
    Batch batch = std::move(ready_.front());
    ready_.pop_front();
    stats_.rows_read += batch.size;
    stats_.wait_seconds += sw.Seconds();
    lock.unlock();
    cv_.notify_all();
    return std::optional<Batch>(std::move(batch));
  }

  void Recycle(Batch&& batch) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (recycled_.size() < depth_ + 2) recycled_.push_back(std::move(batch));
  }
  ReaderStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    ReaderStats s = stats_;
    s.queue_depth = static_cast<int64_t>(ready_.size());
    return s;
  }
  const std::vector<std::string>& dense_names() const override { return split_->dense_names(); }
  const std::vector<std::string>& sparse_names() const override { return split_->sparse_names(); }

 private:
  void Produce() {
    const int64_t n = static_cast<int64_t>(order_.size());
    while (next_row_ < n) {
      Batch batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
        if (stop_) return;
        if (!recycled_.empty()) {
          batch = std::move(recycled_.back());
          recycled_.pop_back();
        }
      }
      const int64_t take = std::min(batch_size_, n - next_row_);
      split_->Gather(std::span<const uint32_t>(order_.data() + next_row_, static_cast<size_t>(take)), &batch);
      next_row_ += take;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(batch));
      }
      cv_.notify_all();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      produced_all_ = true;
    }
    cv_.notify_all();
  }

  const std::shared_ptr<const MemorySplit> split_;
  const std::vector<uint32_t> order_;
  const int64_t batch_size_;
  const size_t depth_;
  int64_t next_row_ = 0;  // worker thread only (after construction)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;      // guarded by mu_
  std::vector<Batch> recycled_;  // guarded by mu_
  bool stop_ = false;            // guarded by mu_
  bool produced_all_ = false;    // guarded by mu_
  ReaderStats stats_;            // guarded by mu_
  std::thread worker_;
};

}  // namespace

// Passes a source reader's batches through while copying them into a MemorySplitBuilder; at the
// end of the pass hands the finished split to the EpochSource.
class FillingReader final : public BatchReader {
 public:
  FillingReader(EpochSource* owner, std::unique_ptr<BatchReader> source)
      : owner_(owner), source_(std::move(source)) {
    builder_ = std::make_unique<MemorySplitBuilder>(owner_->budget_, source_->dense_names(),
                                                    source_->sparse_names());
  }

  Result<std::optional<Batch>> Next() override {
    auto next = source_->Next();
    if (!next.ok()) {
      builder_.reset();
      return next;
    }
    if (!next->has_value()) {
      if (builder_) {
        auto split = builder_->Finish();
        builder_.reset();
        if (!split.ok()) return split.status();
        owner_->Adopt(std::move(split).value());
      }
      return next;
    }
    if (builder_) {
      Status s = builder_->Append(**next);
      if (!s.ok()) {
        builder_.reset();
        if (owner_->epoch_.memory_cache == MemoryCacheMode::kOn || s.code() != StatusCode::kResourceExhausted) {
          return Explain(s, "data.memory_cache: " + std::string(MemoryCacheModeName(owner_->epoch_.memory_cache)) +
                                " (" + owner_->name_ + ")",
                         "raise data.memory_cache_bytes or set data.memory_cache: auto");
        }
        owner_->GiveUp(s);
      }
    }
    return next;
  }

  void Recycle(Batch&& batch) override { source_->Recycle(std::move(batch)); }
  ReaderStats Stats() const override { return source_->Stats(); }
  const std::vector<std::string>& dense_names() const override { return source_->dense_names(); }
  const std::vector<std::string>& sparse_names() const override { return source_->sparse_names(); }

 private:
  EpochSource* owner_;
  std::unique_ptr<BatchReader> source_;
  std::unique_ptr<MemorySplitBuilder> builder_;
};

const char* ShuffleModeName(ShuffleMode mode) {
  switch (mode) {
    case ShuffleMode::kOff: return "off";
    case ShuffleMode::kBuffer: return "buffer";
    case ShuffleMode::kGlobal: return "global";
  }
  return "?";
}

const char* MemoryCacheModeName(MemoryCacheMode mode) {
  switch (mode) {
    case MemoryCacheMode::kAuto: return "auto";
    case MemoryCacheMode::kOn: return "on";
    case MemoryCacheMode::kOff: return "off";
  }
  return "?";
}

Result<std::unique_ptr<EpochSource>> EpochSource::Create(DataConfig config, ReadOptions read,
                                                         EpochOptions epoch,
                                                         std::shared_ptr<MemoryBudget> budget,
                                                         std::string name, LogFn log) {
  if (!epoch.shuffle_key.empty() && epoch.shuffle != ShuffleMode::kGlobal) {
    return InvalidArgumentError("data.shuffle_key (\"" + epoch.shuffle_key + "\") needs data.shuffle: global, but " +
                                name + " is read with data.shuffle: " + ShuffleModeName(epoch.shuffle));
  }
  if (epoch.shuffle == ShuffleMode::kGlobal && epoch.memory_cache == MemoryCacheMode::kOff) {
    return InvalidArgumentError(
        "data.shuffle: global permutes the whole split in memory, so it cannot run with data.memory_cache: off "
        "(set data.memory_cache: auto or on, or use data.shuffle: buffer)");
  }
  if (budget == nullptr) return InvalidArgumentError("EpochSource::Create: no memory budget");
  std::unique_ptr<EpochSource> src(new EpochSource());
  src->config_ = std::move(config);
  if (!epoch.shuffle_key.empty()) src->config_.schema.group_key = epoch.shuffle_key;
  src->read_ = read;
  src->epoch_ = std::move(epoch);
  src->budget_ = std::move(budget);
  src->name_ = std::move(name);
  src->log_ = std::move(log);
  if (src->epoch_.shuffle == ShuffleMode::kGlobal) {
    RECTRAIN_RETURN_IF_ERROR(src->BuildUpFront());
  }
  return src;
}

EpochSource::~EpochSource() = default;

ReadOptions EpochSource::PassOptions(int64_t epoch, int64_t skip_rows) const {
  ReadOptions ro = read_;
  ro.epoch = epoch;
  ro.skip_rows = skip_rows;
  ro.shuffle = epoch_.shuffle == ShuffleMode::kBuffer;
  return ro;
}

Status EpochSource::BuildUpFront() {
  Stopwatch sw;
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, OpenBatchReader(config_, PassOptions(0, 0)));
  auto builder = std::make_unique<MemorySplitBuilder>(budget_, reader->dense_names(), reader->sparse_names());
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> batch, reader->Next());
    if (!batch) break;
    Status s = builder->Append(*batch);
    if (!s.ok()) {
      builder.reset();
      if (epoch_.shuffle == ShuffleMode::kGlobal) {
        return Explain(s, "data.shuffle: global needs all of " + name_ + " in memory",
                       "raise data.memory_cache_bytes or use data.shuffle: buffer");
      }
      if (epoch_.memory_cache == MemoryCacheMode::kOn || s.code() != StatusCode::kResourceExhausted) {
        return Explain(s, "data.memory_cache: " + std::string(MemoryCacheModeName(epoch_.memory_cache)) + " (" + name_ + ")",
                       "raise data.memory_cache_bytes or set data.memory_cache: auto");
      }
      GiveUp(s);
      return OkStatus();
    }
    reader->Recycle(std::move(*batch));
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<const MemorySplit> split, builder->Finish());
  if (log_) log_("memory cache: read " + name_ + " into memory up front in " + std::to_string(sw.Seconds()).substr(0, 5) + "s");
  Adopt(std::move(split));
  return OkStatus();
}

void EpochSource::Adopt(std::shared_ptr<const MemorySplit> split) {
  split_ = std::move(split);
  if (epoch_.shuffle == ShuffleMode::kGlobal && !epoch_.shuffle_key.empty()) {
    groups_ = GroupRowsByKey(split_->GroupKeys());
  }
  if (log_) {
    std::string line = "memory cache: " + name_ + " holds " + std::to_string(split_->rows()) + " rows in " +
                       Mib(split_->bytes()) + " (" + Mib(budget_->used_bytes()) + " of data.memory_cache_bytes " +
                       Mib(budget_->limit_bytes()) + " in use); later passes read from memory";
    if (!epoch_.shuffle_key.empty()) {
      line += "; " + std::to_string(groups_.num_keys()) + " distinct " + epoch_.shuffle_key + " keys";
    }
    log_(line);
  }
}

void EpochSource::GiveUp(const Status& why) {
  gave_up_ = true;
  if (log_) {
    log_("memory cache: " + name_ + " does not fit (" + std::string(why.message()) +
         "); re-reading the files on every pass (data.memory_cache: auto)");
  }
}

std::vector<uint32_t> EpochSource::OrderFor(int64_t epoch) const {
  const int64_t rows = split_->rows();
  switch (epoch_.shuffle) {
    case ShuffleMode::kOff:
      return IdentityOrder(rows);
    case ShuffleMode::kBuffer:
      // The cache holds the epoch-0 pass in the order it was read.
      return epoch == 0 ? IdentityOrder(rows) : PermutedOrder(rows, read_.seed, epoch);
    case ShuffleMode::kGlobal:
      if (!epoch_.shuffle_key.empty()) return StratifiedOrder(groups_, read_.batch_size, read_.seed, epoch);
      return PermutedOrder(rows, read_.seed, epoch);
  }
  return IdentityOrder(rows);
}

std::unique_ptr<BatchReader> EpochSource::MemoryReader(int64_t epoch, int64_t skip_rows) const {
  return std::make_unique<MemoryBatchReader>(split_, OrderFor(epoch), read_.batch_size, skip_rows,
                                             read_.prefetch_batches);
}

Result<std::unique_ptr<BatchReader>> EpochSource::Open(int64_t epoch, int64_t skip_rows) {
  if (epoch < 0 || skip_rows < 0) {
    return InvalidArgumentError("EpochSource::Open: epoch and skip_rows must be >= 0");
  }
  if (split_) return MemoryReader(epoch, skip_rows);
  if (epoch_.memory_cache == MemoryCacheMode::kOff || gave_up_) {
    return OpenBatchReader(config_, PassOptions(epoch, skip_rows));
  }
  // auto: a copy made during (or before) the run's last pass would never be read.
  if (epoch_.memory_cache == MemoryCacheMode::kAuto && epoch_.epochs > 0 && epoch + 1 >= epoch_.epochs) {
    if (log_ && !said_last_pass_) {
      log_("memory cache: " + name_ + " is not copied into memory: epoch " + std::to_string(epoch) +
           " is the last of " + std::to_string(epoch_.epochs) +
           " (train.epochs), so no later pass would read the copy (data.memory_cache: auto; set on to copy anyway)");
    }
    said_last_pass_ = true;
    return OpenBatchReader(config_, PassOptions(epoch, skip_rows));
  }
  // Fill while this pass is read when it is the pass the cache must hold.
  if (skip_rows == 0 && (epoch == 0 || epoch_.shuffle == ShuffleMode::kOff)) {
    RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> source, OpenBatchReader(config_, PassOptions(epoch, 0)));
    return std::unique_ptr<BatchReader>(new FillingReader(this, std::move(source)));
  }
  RECTRAIN_RETURN_IF_ERROR(BuildUpFront());
  if (split_) return MemoryReader(epoch, skip_rows);
  return OpenBatchReader(config_, PassOptions(epoch, skip_rows));
}

}  // namespace rectrain::data
