// rectrain/data/epoch_source.h: one split (data.train or data.valid) read pass after pass, with
// an optional in-memory epoch cache (MemorySplit) and the shuffle modes of data.shuffle. The
// trainer asks it for a BatchReader per pass; whether the rows come from the files or from
// memory is invisible to the training loop. It composes with any source: it wraps whatever
// OpenBatchReader returns (text, Parquet, a binary cache).
//
// Shuffle modes (docs/data.md "Shuffling"):
//   off     file order every pass.
//   buffer  the readers' chunk-order + bounded shuffle buffer (ReadOptions::shuffle). With the
//           memory cache, epoch 0 is read from the files (and cached in the order read) and
//           epoch e >= 1 is a full permutation of the cached rows, PermutedOrder(seed, e).
//   global  a full permutation of the whole split in every epoch, including the first:
//           the split is read into memory up front in file order. With shuffle_key the order
//           is StratifiedOrder (epoch_order.h): one key's rows spread over the epoch's batches.
//
// Memory cache (data.memory_cache): off = re-read the files every pass; on = cache, and fail
// with ResourceExhausted when the split does not fit the budget; auto = cache when it fits,
// otherwise re-read the files and log why. The cached rows are always "the pass of epoch 0"
// (or file order), so a resumed process that rebuilds the cache serves identical epochs:
// the order of a pass depends only on (seed, epoch), never on when the cache was filled.
// The cache is filled while epoch 0 is read (no extra pass) when that pass starts at row 0;
// otherwise (a resume mid-run, or global shuffle) it is built up front by reading the epoch-0
// pass once. In auto mode the last pass of a run with a known number of epochs
// (EpochOptions::epochs) is never copied: a single-epoch run reads data.train from the files.
//
// A pass from memory gathers its batches on one background thread, data.prefetch batches ahead
// (gathering inside Next() was measured and rejected: docs/benchmarks.md "In-memory epoch cache").
//
// Thread safety: an EpochSource and its readers are used from one thread. A reader returned by
// Open() must be destroyed before the EpochSource (it reports back to it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/epoch_order.h"
#include "rectrain/data/memory_split.h"
#include "rectrain/data/reader.h"

namespace rectrain::data {

enum class ShuffleMode { kOff, kBuffer, kGlobal };
enum class MemoryCacheMode { kAuto, kOn, kOff };

// data.shuffle, data.shuffle_key, data.memory_cache, data.memory_cache_bytes.
struct EpochOptions {
  ShuffleMode shuffle = ShuffleMode::kBuffer;
  // global only: the column whose rows are spread over batches (read as the group key of this
  // split's reader, so batches carry its hashes in Batch::group_keys).
  std::string shuffle_key;
  MemoryCacheMode memory_cache = MemoryCacheMode::kAuto;
  int64_t memory_cache_bytes = 0;  // the run's budget; 0 = MemoryBudget::DefaultBytes()
  // The number of passes the run makes over this split (train.epochs for data.train); 0 = not
  // known (data.valid: read once per evaluation). With memory_cache auto and shuffle off or
  // buffer, the pass of the last epoch (epoch + 1 >= epochs) is read from the files and not
  // copied: no later pass could use the copy. memory_cache on caches it anyway.
  int64_t epochs = 0;
};

// "off" | "buffer" | "global"; also true (= buffer) and false (= off) from older configs.
const char* ShuffleModeName(ShuffleMode mode);
const char* MemoryCacheModeName(MemoryCacheMode mode);

class EpochSource {
 public:
  using LogFn = std::function<void(const std::string&)>;

  // `config`, `read`: as for OpenBatchReader (read.epoch and read.skip_rows are set per pass;
  // read.shuffle is derived from epoch.shuffle). `budget` (non-null) is shared by the run's
  // splits. `name` names the split in messages ("data.train"). `log` (may be empty) gets one
  // line per caching decision.
  // Errors: InvalidArgument for shuffle_key without global, or global with memory_cache off;
  // global reads the split now, so also every OpenBatchReader/Next error and ResourceExhausted
  // when the split does not fit the budget.
  static Result<std::unique_ptr<EpochSource>> Create(DataConfig config, ReadOptions read,
                                                     EpochOptions epoch,
                                                     std::shared_ptr<MemoryBudget> budget,
                                                     std::string name, LogFn log);
  ~EpochSource();

  // The reader of pass `epoch`, starting after `skip_rows` rows of that pass (resume).
  // Errors: as OpenBatchReader, plus those of building the cache up front.
  Result<std::unique_ptr<BatchReader>> Open(int64_t epoch, int64_t skip_rows);

  // True once the split is held in memory.
  bool cached() const { return split_ != nullptr; }
  const MemorySplit* split() const { return split_.get(); }

 private:
  friend class FillingReader;
  EpochSource() = default;
  Status BuildUpFront();
  void Adopt(std::shared_ptr<const MemorySplit> split);
  // Auto mode: stop trying to cache, with the reason logged once.
  void GiveUp(const Status& why);
  std::vector<uint32_t> OrderFor(int64_t epoch) const;
  ReadOptions PassOptions(int64_t epoch, int64_t skip_rows) const;
  std::unique_ptr<BatchReader> MemoryReader(int64_t epoch, int64_t skip_rows) const;

  DataConfig config_;
  ReadOptions read_;
  EpochOptions epoch_;
  std::shared_ptr<MemoryBudget> budget_;
  std::string name_;
  LogFn log_;
  std::shared_ptr<const MemorySplit> split_;
  KeyGroups groups_;      // global + shuffle_key
  bool gave_up_ = false;  // auto: the split does not fit
  bool said_last_pass_ = false;  // auto: the "last pass, not copied" line was logged
};

}  // namespace rectrain::data
