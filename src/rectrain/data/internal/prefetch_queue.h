// rectrain/data/internal/prefetch_queue.h: private. The bounded prefetch queue between a
// reader's producer (its assembler thread) and its one consumer (BatchReader::Next()), shared by
// the text reader (reader.cc) and the sample-cache reader (cache.cc). An item is a batch, an
// error, or the end of the pass.
//
// Thread safety: Push() and Stop() from any thread; Pop(), NextFromQueue() and TakeAll() from
// the consumer's thread (TakeAll() only after the producers have been joined).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "rectrain/base/result.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/batch.h"
#include "rectrain/data/reader.h"

namespace rectrain::data::internal {

class PrefetchQueue {
 public:
  struct Item {
    Batch batch;
    Status status;
    bool end = false;
  };

  // `capacity` >= 1: items the producer may run ahead (ReadOptions::prefetch_batches).
  explicit PrefetchQueue(int capacity) : capacity_(capacity) {}

  // Blocks while `capacity` items wait. False (the item is dropped) once Stop() was called.
  bool Push(Item item) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || static_cast<int>(items_.size()) < capacity_; });
    if (stopped_) return false;
    items_.push_back(std::move(item));
    lock.unlock();
    cv_.notify_all();
    return true;
  }

  // Blocks until an item is there; `*waited_seconds` gets the time blocked (0 if none).
  Item Pop(double* waited_seconds) {
    Item item;
    *waited_seconds = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (items_.empty()) {
        Stopwatch sw;
        cv_.wait(lock, [&] { return !items_.empty(); });
        *waited_seconds = sw.Seconds();
      }
      item = std::move(items_.front());
      items_.pop_front();
    }
    cv_.notify_all();
    return item;
  }

  // Push() returns false from now on; a producer blocked in it wakes up.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  int64_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(items_.size());
  }

  // The items left, e.g. to give their buffers back. Call after the producers were joined.
  std::deque<Item> TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(items_, {});
  }

 private:
  const int capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;  // guarded by mu_
  bool stopped_ = false;    // guarded by mu_
};

// BatchReader::Next() over a PrefetchQueue: the first error is latched in `*latched` and returned
// by every later call; the end item sets `*finished`. Adds the blocked time to
// stats->wait_seconds and delivered rows to stats->rows_read, under `stats_mu`.
inline Result<std::optional<Batch>> NextFromQueue(PrefetchQueue& queue, Status* latched,
                                                  bool* finished, ReaderStats* stats,
                                                  std::mutex& stats_mu) {
  if (!latched->ok()) return *latched;
  if (*finished) return std::optional<Batch>();
  double waited = 0;
  PrefetchQueue::Item item = queue.Pop(&waited);
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    stats->wait_seconds += waited;
  }
  if (!item.status.ok()) {
    *latched = item.status;
    return *latched;
  }
  if (item.end) {
    *finished = true;
    return std::optional<Batch>();
  }
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    stats->rows_read += item.batch.size;
  }
  return std::optional<Batch>(std::move(item.batch));
}

}  // namespace rectrain::data::internal
