// rectrain/data/internal/read_ahead.h: private to data/. Read-ahead for files on an object store,
// sized by the reader's consumption. A pass reads its units (text chunks, Parquet row groups) in
// a known order; when a worker claims unit `seq`, the byte ranges of the units after it are
// hinted to their files (io::RandomAccessFile::Prefetch, which fetches them in the background)
// until `window` bytes lie ahead of the consumer. Whenever a read had to wait on the network
// (the file's waits() grew), the window doubles, up to `max_window`: it settles where the store
// keeps ahead of the reader, and stays small for a reader slower than the store.
//
// Thread safety: OnClaim may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace rectrain::data::internal {

class ReadAhead {
 public:
  struct Unit {
    int file = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;  // (offset, bytes) the unit will read
  };
  // Hint(file, offset, n) passes a range on; Waits(file) is the file's io waits() counter.
  using HintFn = std::function<void(int file, int64_t offset, int64_t n)>;
  using WaitsFn = std::function<int64_t(int file)>;

  ReadAhead(std::vector<Unit> units, int num_files, int64_t initial_window, int64_t max_window, HintFn hint,
            WaitsFn waits);

  // Unit `seq` is being read now (claims come in increasing order): hints the units after it.
  void OnClaim(int64_t seq);

  int64_t window() const;

 private:
  std::vector<Unit> units_;
  std::vector<int64_t> unit_bytes_;
  HintFn hint_;
  WaitsFn waits_;
  mutable std::mutex mu_;
  int64_t window_;                   // guarded by mu_
  const int64_t max_window_;
  int64_t next_ = 0;                 // first unit not hinted yet, guarded by mu_
  int64_t consumer_ = -1;            // last claimed unit, guarded by mu_
  int64_t ahead_ = 0;                // bytes of units in (consumer_, next_), guarded by mu_
  std::vector<int64_t> seen_waits_;  // per file, guarded by mu_
};

}  // namespace rectrain::data::internal
