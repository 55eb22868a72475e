// The in-process sharded embedding table behind MakeEmbeddingTable. Design: docs/embedding.md;
// checkpoint layout: docs/formats/checkpoint-embedding.md.
#include "rectrain/embedding/embedding_table.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/embedding/internal/checkpoint_io.h"
#include "rectrain/embedding/internal/flat_map.h"
#include "rectrain/embedding/internal/initializer.h"
#include "rectrain/embedding/internal/row_slab.h"

namespace rectrain::embedding {
namespace {

using internal::CheckpointReader;
using internal::CheckpointWriter;
using internal::FlatMap;
using internal::RowInitializer;
using internal::RowSlab;

// Row layout (floats): [meta (4) | weights (dim) | optimizer state (width) | pad to 4].
// meta = {u64 id, u32 update count, u32 last-access tick}. Freed rows carry kFreeTick.
constexpr int64_t kMetaFloats = 4;
constexpr uint32_t kFreeTick = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kMaxTick = kFreeTick - 1;
constexpr int64_t kPrefetchDistance = 16;
// Below this many ids a call runs on the calling thread: waking the pool costs more.
constexpr int64_t kMinIdsForThreads = 4096;
constexpr int kMaxShards = 1 << 16;
// Rows per checkpoint block (each block carries its own CRC).
constexpr uint32_t kRowsPerBlock = 4096;
constexpr char kMagic[8] = {'R', 'T', 'E', 'M', 'B', 'T', 'B', '1'};
constexpr char kEndMagic[8] = {'R', 'T', 'E', 'M', 'B', 'E', 'N', 'D'};
// Version 2 added the expiry counters to the header and the last-seen tick to pending records;
// version 1 files still load (their pending ids count as seen at the file's clock).
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kOldestFormatVersion = 1;
constexpr uint32_t kMaxOptimizerName = 64;
// Delta files (docs/formats/checkpoint-embedding-delta.md): the changes since a checkpoint.
constexpr char kDeltaMagic[8] = {'R', 'T', 'E', 'M', 'B', 'D', 'L', '1'};
constexpr uint32_t kDeltaFormatVersion = 1;
// Expiry sweeps per ttl_steps: more sweeps cost more scans, fewer let entries outlive the ttl longer.
constexpr uint32_t kSweepsPerTtl = 8;

inline uint64_t RowId(const float* row) {
  uint64_t v;
  std::memcpy(&v, row, 8);
  return v;
}
inline uint32_t RowUpdates(const float* row) {
  uint32_t v;
  std::memcpy(&v, row + 2, 4);
  return v;
}
inline uint32_t RowTick(const float* row) {
  uint32_t v;
  std::memcpy(&v, row + 3, 4);
  return v;
}
inline void SetRowId(float* row, uint64_t v) { std::memcpy(row, &v, 8); }
inline void SetRowUpdates(float* row, uint32_t v) { std::memcpy(row + 2, &v, 4); }
inline void SetRowTick(float* row, uint32_t v) { std::memcpy(row + 3, &v, 4); }

// Row copy with the common widths as compile-time sizes (inlined vector moves, no libc call).
inline void CopyRow(float* dst, const float* src, int dim) {
  switch (dim) {
    case 8: std::memcpy(dst, src, 32); return;
    case 16: std::memcpy(dst, src, 64); return;
    case 32: std::memcpy(dst, src, 128); return;
    case 64: std::memcpy(dst, src, 256); return;
    default: std::memcpy(dst, src, static_cast<size_t>(dim) * 4);
  }
}

// A not-yet-admitted id: its sightings so far and the tick of the last one (for ttl_steps).
// Empty map slots are PendingId{} (count 0), which no stored entry equals.
struct PendingId {
  uint32_t count = 0;
  uint32_t tick = 0;
  friend bool operator==(const PendingId&, const PendingId&) = default;
};
static_assert(sizeof(FlatMap<PendingId>::Slot) == 16);

struct Shard {
  Shard(int64_t stride_floats, int64_t first_block_rows) : slab(stride_floats, first_block_rows) {}

  FlatMap<float*> index;      // admitted id -> row
  FlatMap<PendingId> pending;  // not-yet-admitted id -> sightings
  RowSlab slab;
  std::vector<uint64_t> removed;  // ids whose rows were removed, while TrackRemovedIds(true)
  // Per change log (ChangeLog) while it is tracked, since its mark: ids whose rows changed
  // (first touch only; an id re-admitted after a removal twice) and ids whose rows were removed.
  struct ChangeRecord {
    std::vector<uint64_t> changed;
    std::vector<uint64_t> dropped;
  };
  std::array<ChangeRecord, kChangeLogs> logs;

  // Per-call state (reset at the start of each call that uses it).
  std::vector<float> oov_grad;
  bool oov_touched = false;
  bool recycled = false;  // a row touched in this call was evicted and may have been reused
  // rows_scratch_[untick_begin, untick_end) were found by this Pull but their last-access tick
  // is only written in phase 2; an eviction first stamps them so LRU sees them as in use.
  int64_t untick_begin = 0;
  int64_t untick_end = 0;
  int64_t admissions = 0;
  int64_t evictions = 0;
  int64_t oov_lookups = 0;
  int64_t pending_resets = 0;
  int64_t expirations = 0;
  int64_t pending_expirations = 0;
};

template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The header and OOV row of a full table file or (delta) a delta file.
struct CheckpointHeader {
  bool delta = false;
  uint32_t version = 0;
  uint32_t dim = 0;
  uint32_t state_width = 0;
  uint64_t row_count = 0;
  uint64_t pending_count = 0;
  uint64_t removed_count = 0;  // delta
  uint32_t tick = 0;
  uint32_t base_tick = 0;  // delta: the clock of the checkpoint it follows (full: reserved, 0)
  int64_t admissions = 0, evictions = 0, lookups = 0, oov_lookups = 0;
  int64_t expirations = 0, pending_expirations = 0;  // full version 2
  std::string optimizer;
  uint32_t oov_updates = 0;
  std::vector<float> oov;  // weights | state
};

// A row record's fields before its values.
struct FileRow {
  uint64_t id = 0;
  uint32_t updates = 0;
  uint32_t tick = 0;
};

class ShardedEmbeddingTable final : public EmbeddingTable {
 public:
  ShardedEmbeddingTable(const EmbeddingTableConfig& config,
                        std::unique_ptr<optim::SparseOptimizer> optimizer, RowInitializer init)
      : config_(config), optimizer_(std::move(optimizer)), init_(init) {
    dim_ = config.dim;
    width_ = optimizer_->StateWidth(dim_);
    stride_ = (kMetaFloats + dim_ + width_ + 3) / 4 * 4;
    stride_bytes_ = stride_ * 4;
    shard_bits_ = std::countr_zero(static_cast<unsigned>(config.num_shards));
    budgeted_ = config.memory_budget_bytes > 0;
    evict_ = config.on_budget == OnBudget::kEvict;
    oov_bytes_ = static_cast<int64_t>(dim_ + width_) * 4;
    if (budgeted_) shard_budget_ = (config.memory_budget_bytes - oov_bytes_) / config.num_shards;
    ttl_ = static_cast<uint32_t>(config.ttl_steps);
    sweep_every_ = std::max<uint32_t>(1, ttl_ / kSweepsPerTtl);
    const int64_t per_shard = ReserveRowsPerShard(config.expected_rows);
    for (int s = 0; s < config.num_shards; ++s) {
      shards_.push_back(std::make_unique<Shard>(stride_, std::max<int64_t>(per_shard, 64)));
      if (per_shard > 0) shards_.back()->index.Reserve(per_shard);
    }
    oov_.resize(dim_ + width_);
    init_.Fill(~uint64_t{0} - 0x4f4f56 /* the OOV row's own stream */, {oov_.data(), size_t(dim_)});
    optimizer_->InitState({oov_.data(), size_t(dim_)}, {oov_.data() + dim_, size_t(width_)});
    shard_status_.resize(config.num_shards);
    RefreshStats();
  }

  // Smallest budget that holds every shard's empty index and pending map plus 4 rows each.
  static int64_t MinimumBudget(const EmbeddingTableConfig& c, int width) {
    const int64_t stride_bytes = (kMetaFloats + c.dim + width + 3) / 4 * 4 * 4;
    const int64_t empty_maps = FlatMap<float*>().bytes() + FlatMap<uint32_t>().bytes();
    return int64_t{c.num_shards} * (empty_maps + 4 * stride_bytes) + int64_t{c.dim + width} * 4;
  }

  const EmbeddingTableConfig& config() const override { return config_; }

  Status Pull(std::span<const uint64_t> ids, PullMode mode, std::span<float> out,
              const ComputeContext& compute) override {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (static_cast<int64_t>(out.size()) != n * dim_) {
      return InvalidArgumentError("embedding table '" + config_.name + "': Pull got " + Str(n) +
                                  " ids but an output of " + Str(out.size()) +
                                  " floats; expected ids × dim = " + Str(n * dim_));
    }
    RECTRAIN_RETURN_IF_ERROR(Partition(ids));
    if (mode == PullMode::kTrain && tick_ < kMaxTick) ++tick_;
    const ComputeContext cc{n >= kMinIdsForThreads ? compute.num_threads : 1};
    ParallelForEach(cc, config_.num_shards, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        shard_status_[s] = PullShard(static_cast<int>(s), ids, mode, out.data());
      }
    });
    if (mode == PullMode::kTrain && ExpiryDue()) {
      const ComputeContext sweep{rows_.load(std::memory_order_relaxed) >= kMinIdsForThreads ? compute.num_threads : 1};
      ParallelForEach(sweep, config_.num_shards, 1, [&](int, int64_t begin, int64_t end) {
        for (int64_t s = begin; s < end; ++s) ExpireShard(*shards_[s]);
      });
    }
    lookups_.fetch_add(n, std::memory_order_relaxed);
    return FinishCall();
  }

  Result<bool> PushRows(std::span<const uint64_t> ids, std::span<const float> grads, const optim::StepContext& step,
                        const ComputeContext& compute, std::span<float> oov_grad) override {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (static_cast<int64_t>(grads.size()) != n * dim_) {
      return InvalidArgumentError("embedding table '" + config_.name + "': Push got " + Str(n) +
                                  " ids but " + Str(grads.size()) +
                                  " gradient floats; expected ids × dim = " + Str(n * dim_));
    }
    if (static_cast<int64_t>(oov_grad.size()) != dim_) {
      return InvalidArgumentError("embedding table '" + config_.name + "': an OOV gradient of " +
                                  Str(oov_grad.size()) + " floats; expected dim = " + Str(dim_));
    }
    RECTRAIN_RETURN_IF_ERROR(Partition(ids));
    const ComputeContext cc{n >= kMinIdsForThreads ? compute.num_threads : 1};
    ParallelForEach(cc, config_.num_shards, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) PushShard(static_cast<int>(s), ids, grads.data(), step);
    });
    // Non-admitted ids share the OOV row: their gradients are summed in shard order, so the
    // result does not depend on the thread count.
    bool oov_touched = false;
    for (auto& shard : shards_) {
      if (!shard->oov_touched) continue;
      oov_touched = true;
      for (int d = 0; d < dim_; ++d) oov_grad[d] += shard->oov_grad[d];
    }
    return oov_touched;
  }

  Status ApplyOovGradient(std::span<const float> grad, const optim::StepContext& step) override {
    if (static_cast<int64_t>(grad.size()) != dim_) {
      return InvalidArgumentError("embedding table '" + config_.name + "': an OOV gradient of " + Str(grad.size()) +
                                  " floats; expected dim = " + Str(dim_));
    }
    optimizer_->UpdateRow(step, oov_updates_, {oov_.data(), size_t(dim_)}, {oov_.data() + dim_, size_t(width_)}, grad);
    if (oov_updates_ < std::numeric_limits<uint32_t>::max()) ++oov_updates_;
    return OkStatus();
  }

  Status ForEachRow(const RowVisitor& fn) const override {
    for (const auto& sh : shards_) {
      sh->index.ForEach([&](uint64_t id, float* row) {
        fn(id, RowUpdates(row), std::span<const float>(row + kMetaFloats, static_cast<size_t>(dim_)));
      });
    }
    return OkStatus();
  }
  std::span<const float> OovWeights() const override { return {oov_.data(), static_cast<size_t>(dim_)}; }

  TableStats Stats() const override {
    TableStats s;
    s.rows = rows_.load(std::memory_order_relaxed);
    s.bytes = bytes_.load(std::memory_order_relaxed);
    s.admissions = admissions_.load(std::memory_order_relaxed);
    s.evictions = evictions_.load(std::memory_order_relaxed);
    s.lookups = lookups_.load(std::memory_order_relaxed);
    s.oov_lookups = oov_lookups_.load(std::memory_order_relaxed);
    s.pending_ids = pending_ids_.load(std::memory_order_relaxed);
    s.pending_resets = pending_resets_.load(std::memory_order_relaxed);
    s.expirations = expirations_.load(std::memory_order_relaxed);
    s.pending_expirations = pending_expirations_.load(std::memory_order_relaxed);
    return s;
  }

  void TrackRemovedIds(bool on) override {
    track_removed_ = on;
    if (!on) {
      for (auto& sh : shards_) std::vector<uint64_t>().swap(sh->removed);
    }
  }
  std::vector<uint64_t> TakeRemovedIds() override {
    std::vector<uint64_t> ids;
    for (auto& sh : shards_) {
      ids.insert(ids.end(), sh->removed.begin(), sh->removed.end());
      sh->removed.clear();
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  void TrackChanges(ChangeLog log, bool on) override {
    const int l = static_cast<int>(log);
    tracked_ = on ? (tracked_ | (1u << l)) : (tracked_ & ~(1u << l));
    for (auto& sh : shards_) {
      std::vector<uint64_t>().swap(sh->logs[l].changed);
      std::vector<uint64_t>().swap(sh->logs[l].dropped);
    }
    marks_[l] = tick_;
  }
  void MarkSaved(ChangeLog log) override {
    const int l = static_cast<int>(log);
    for (auto& sh : shards_) {
      sh->logs[l].changed.clear();
      sh->logs[l].dropped.clear();
    }
    marks_[l] = tick_;
  }
  Status ForEachChangedRow(ChangeLog log, const RowVisitor& fn, std::vector<uint64_t>* removed) const override;
  Status SaveChanges(const std::string& path) const override;
  Status LoadChanges(const std::string& path, const LoadOptions& options) override;

  Status Save(const std::string& path) const override;
  using EmbeddingTable::Load;
  Status Load(const std::string& path, const LoadOptions& options) override;

 private:
  int64_t ReserveRowsPerShard(int64_t expected_rows) const {
    if (expected_rows <= 0) return 0;
    // 10% headroom over the mean: hashing spreads ids evenly, but not exactly.
    int64_t per_shard = expected_rows / config_.num_shards + expected_rows / config_.num_shards / 10 + 16;
    if (budgeted_) per_shard = std::min(per_shard, shard_budget_ / (stride_bytes_ + 64));
    return per_shard;
  }

  int ShardOf(uint64_t h) const {
    return shard_bits_ == 0 ? 0 : static_cast<int>(h >> (64 - shard_bits_));
  }

  int64_t ShardBytes(const Shard& sh) const {
    return sh.slab.touched_bytes() + sh.index.bytes() + sh.pending.bytes();
  }

  // Counting sort of the ids by shard: order_[k] is an index into ids, hashes_[k] its Mix64.
  Status Partition(std::span<const uint64_t> ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgumentError("embedding table '" + config_.name + "': " + Str(n) +
                                  " ids in one call; at most 2^32-1 are supported");
    }
    const int num_shards = config_.num_shards;
    shard_begin_.assign(num_shards + 1, 0);
    if (tmp_hash_.size() < static_cast<size_t>(n)) {
      tmp_hash_.resize(n);
      hashes_.resize(n);
      order_.resize(n);
      rows_scratch_.resize(n);
    }
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t h = Mix64(ids[i]);
      tmp_hash_[i] = h;
      ++shard_begin_[ShardOf(h) + 1];
    }
    for (int s = 0; s < num_shards; ++s) shard_begin_[s + 1] += shard_begin_[s];
    cursor_.assign(shard_begin_.begin(), shard_begin_.end() - 1);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t h = tmp_hash_[i];
      const int64_t pos = cursor_[ShardOf(h)]++;
      order_[pos] = static_cast<uint32_t>(i);
      hashes_[pos] = h;
    }
    return OkStatus();
  }

  void PrefetchRow(const float* row) const {
    const char* p = reinterpret_cast<const char*>(row);
    for (int64_t off = 0; off < std::min<int64_t>(stride_bytes_, 256); off += 64) {
      __builtin_prefetch(p + off);
    }
  }

  Status PullShard(int s, std::span<const uint64_t> ids, PullMode mode, float* out) {
    Shard& sh = *shards_[s];
    const int64_t begin = shard_begin_[s];
    const int64_t end = shard_begin_[s + 1];
    if (begin == end) return OkStatus();
    sh.recycled = false;
    sh.untick_begin = begin;
    const bool train = mode == PullMode::kTrain;
    // Phase 1: look every id up (index slots prefetched ahead), admitting new ids in kTrain.
    for (int64_t j = begin; j < end; ++j) {
      if (j + kPrefetchDistance < end) sh.index.Prefetch(hashes_[j + kPrefetchDistance]);
      const uint64_t id = ids[order_[j]];
      float* row = sh.index.Find(id, hashes_[j]);
      if (row == nullptr && train) {
        sh.untick_end = j;
        Result<float*> admitted = Admit(s, sh, id, hashes_[j]);
        if (!admitted.ok()) {
          sh.untick_begin = sh.untick_end = 0;
          return admitted.status();
        }
        row = *admitted;
      }
      rows_scratch_[j] = row;
    }
    sh.untick_begin = sh.untick_end = 0;
    const bool track = train && tracked_ != 0;
    // Phase 2: copy rows out (rows prefetched ahead) and mark them used.
    for (int64_t j = begin; j < end; ++j) {
      if (j + kPrefetchDistance / 2 < end && rows_scratch_[j + kPrefetchDistance / 2]) {
        PrefetchRow(rows_scratch_[j + kPrefetchDistance / 2]);
      }
      const uint32_t pos = order_[j];
      float* row = rows_scratch_[j];
      // An eviction in phase 1 may have freed (or freed and reused) a row found earlier in
      // this call: such an id reads the OOV row, and a freed row must stay marked free.
      if (row != nullptr && sh.recycled &&
          (RowId(row) != ids[pos] || RowTick(row) == kFreeTick)) {
        row = nullptr;
      }
      float* dst = out + static_cast<int64_t>(pos) * dim_;
      if (row == nullptr) {
        CopyRow(dst, oov_.data(), dim_);
        ++sh.oov_lookups;
      } else {
        CopyRow(dst, row + kMetaFloats, dim_);
        if (track) NoteChange(sh, row);
        if (train) SetRowTick(row, tick_);
      }
    }
    return OkStatus();
  }

  void PushShard(int s, std::span<const uint64_t> ids, const float* grads,
                 const optim::StepContext& step) {
    Shard& sh = *shards_[s];
    sh.oov_touched = false;
    const int64_t begin = shard_begin_[s];
    const int64_t end = shard_begin_[s + 1];
    for (int64_t j = begin; j < end; ++j) {
      if (j + kPrefetchDistance < end) sh.index.Prefetch(hashes_[j + kPrefetchDistance]);
      rows_scratch_[j] = sh.index.Find(ids[order_[j]], hashes_[j]);
    }
    const size_t dim = static_cast<size_t>(dim_);
    const size_t width = static_cast<size_t>(width_);
    const bool track = tracked_ != 0;
    for (int64_t j = begin; j < end; ++j) {
      if (j + kPrefetchDistance / 2 < end) {
        const int64_t ahead = j + kPrefetchDistance / 2;
        if (rows_scratch_[ahead]) PrefetchRow(rows_scratch_[ahead]);
        __builtin_prefetch(grads + static_cast<int64_t>(order_[ahead]) * dim_);
      }
      const float* g = grads + static_cast<int64_t>(order_[j]) * dim_;
      float* row = rows_scratch_[j];
      if (row == nullptr) {
        if (!sh.oov_touched) {
          sh.oov_grad.assign(dim, 0.0f);
          sh.oov_touched = true;
        }
        for (size_t d = 0; d < dim; ++d) sh.oov_grad[d] += g[d];
        continue;
      }
      const uint32_t updates = RowUpdates(row);
      optimizer_->UpdateRow(step, updates, {row + kMetaFloats, dim},
                            {row + kMetaFloats + dim, width}, {g, dim});
      if (updates < std::numeric_limits<uint32_t>::max()) SetRowUpdates(row, updates + 1);
      if (track) NoteChange(sh, row);  // a push without a kTrain pull since the mark (async servers)
    }
  }

  // Records a row as changed in each tracked log the first time it is touched after that log's
  // mark: a row untouched since then still carries a tick <= the mark (pulls stamp rows with the
  // clock, which a kTrain Pull advances before stamping). The row's tick is thus the change
  // sequence every log shares; each log only keeps its own mark. At the clock's limit every
  // touch records (CollectChanges dedupes).
  void NoteChange(Shard& sh, const float* row) const {
    const uint32_t tick = RowTick(row);
    for (int l = 0; l < kChangeLogs; ++l) {
      if ((tracked_ >> l & 1u) != 0 && tick <= marks_[l]) sh.logs[l].changed.push_back(RowId(row));
    }
  }
  // A row admitted or removed: recorded in every tracked log whatever its mark.
  void NoteAll(Shard& sh, uint64_t id, std::vector<uint64_t> Shard::ChangeRecord::*list) const {
    for (int l = 0; l < kChangeLogs; ++l) {
      if ((tracked_ >> l & 1u) != 0) (sh.logs[l].*list).push_back(id);
    }
  }

  // kTrain miss: counts a sighting; returns the new row once the id reaches min_count, or
  // nullptr while it is pending (it reads and trains the OOV row meanwhile).
  Result<float*> Admit(int s, Shard& sh, uint64_t id, uint64_t h) {
    if (config_.min_count > 1) {
      PendingId* pending = sh.pending.FindMutable(id, h);
      if (pending == nullptr) {
        RECTRAIN_RETURN_IF_ERROR(EnsurePendingRoom(s, sh));
        sh.pending.Insert(id, h, PendingId{.count = 1, .tick = tick_});
        return static_cast<float*>(nullptr);
      }
      if (pending->count + int64_t{1} < config_.min_count) {
        ++pending->count;
        pending->tick = tick_;
        return static_cast<float*>(nullptr);
      }
      sh.pending.Erase(id, h);
    }
    RECTRAIN_ASSIGN_OR_RETURN(float* row, NewRow(s, sh, id, h, tick_));
    init_.Fill(id, {row + kMetaFloats, size_t(dim_)});
    optimizer_->InitState({row + kMetaFloats, size_t(dim_)},
                          {row + kMetaFloats + dim_, size_t(width_)});
    ++sh.admissions;
    if (tracked_ != 0) NoteAll(sh, id, &Shard::ChangeRecord::changed);
    return row;
  }

  // Allocates and indexes a row for id (contents: meta set, rest uninitialised; padding zeroed).
  Result<float*> NewRow(int s, Shard& sh, uint64_t id, uint64_t h, uint32_t tick) {
    RECTRAIN_RETURN_IF_ERROR(EnsureRowRoom(s, sh));
    float* row = sh.slab.Allocate();
    if (row == nullptr) {
      return ResourceExhaustedError("embedding table '" + config_.name +
                                    "': out of memory allocating rows; set "
                                    "embedding.memory_budget to bound the table");
    }
    SetRowId(row, id);
    SetRowUpdates(row, 0);
    SetRowTick(row, tick);
    for (int64_t f = kMetaFloats + dim_ + width_; f < stride_; ++f) row[f] = 0.0f;
    sh.index.Insert(id, h, row);
    return row;
  }

  Status BudgetError(int s, const Shard& sh) const {
    return ResourceExhaustedError(
        "embedding table '" + config_.name + "' is over its memory budget of " +
        Str(config_.memory_budget_bytes) + " bytes (embedding.memory_budget): shard " + Str(s) +
        " of " + Str(config_.num_shards) + " holds " + Str(sh.index.size()) + " rows and " +
        Str(sh.pending.size()) + " pending ids in " + Str(ShardBytes(sh)) + " of its " +
        Str(shard_budget_) +
        " bytes; raise embedding.memory_budget or set embedding.on_budget to evict");
  }

  // Makes room for one more row in the shard: grows the index or evicts under the budget.
  Status EnsureRowRoom(int s, Shard& sh) {
    for (;;) {
      const bool grow = sh.index.NeedsGrow();
      if (!budgeted_) {
        if (grow) sh.index.Grow();
        return OkStatus();
      }
      const int64_t extra = (grow ? sh.index.GrowBytes() : 0) +
                            (sh.slab.NeedsFreshRow() ? stride_bytes_ : 0);
      if (ShardBytes(sh) + extra <= shard_budget_) {
        if (grow) sh.index.Grow();
        return OkStatus();
      }
      if (!evict_ || sh.index.size() == 0) return BudgetError(s, sh);
      EvictBatch(sh);
    }
  }

  Status EnsurePendingRoom(int s, Shard& sh) {
    if (!sh.pending.NeedsGrow()) return OkStatus();
    if (!budgeted_ || ShardBytes(sh) + sh.pending.GrowBytes() <= shard_budget_) {
      sh.pending.Grow();
      return OkStatus();
    }
    if (!evict_) return BudgetError(s, sh);
    // Under budget pressure the sighting counts are forgotten (ids restart counting).
    sh.pending.Clear();
    ++sh.pending_resets;
    return OkStatus();
  }

  // Evicts the ~1/16 least recently used rows of the shard (exactly the k oldest by last-access
  // tick; ties broken in memory order). The k-th smallest tick is found by a 3-digit radix
  // select over sequential scans of the slab, so no per-row scratch memory is needed.
  void EvictBatch(Shard& sh) {
    for (int64_t j = sh.untick_begin; j < sh.untick_end; ++j) {
      if (rows_scratch_[j] == nullptr) continue;
      if (tracked_ != 0) NoteChange(sh, rows_scratch_[j]);
      SetRowTick(rows_scratch_[j], tick_);
    }
    sh.untick_begin = sh.untick_end;
    const int64_t k = std::max<int64_t>(1, sh.index.size() / 16);
    uint32_t prefix = 0;
    int prefix_bits = 0;
    int64_t rank = k;  // 1-based rank of the threshold tick among live rows
    constexpr int kDigitBits[3] = {11, 11, 10};
    for (int digit_bits : kDigitBits) {
      uint32_t hist[2048] = {};
      const int shift = 32 - prefix_bits - digit_bits;
      const uint32_t digit_mask = (1u << digit_bits) - 1;
      sh.slab.ForEachCarved([&](const float* row) {
        const uint32_t t = RowTick(row);
        if (t == kFreeTick) return;
        if (prefix_bits > 0 && (t >> (32 - prefix_bits)) != prefix) return;
        ++hist[(t >> shift) & digit_mask];
      });
      uint32_t digit = 0;
      while (digit < digit_mask && rank > hist[digit]) rank -= hist[digit++];
      prefix = (prefix << digit_bits) | digit;
      prefix_bits += digit_bits;
    }
    const uint32_t threshold = prefix;
    int64_t ties = rank;
    sh.slab.ForEachCarved([&](float* row) {
      const uint32_t t = RowTick(row);
      if (t == kFreeTick || t > threshold) return;
      if (t == threshold) {
        if (ties == 0) return;
        --ties;
      }
      if (t == tick_) sh.recycled = true;
      RemoveRow(sh, row);
      ++sh.evictions;
    });
  }

  void RemoveRow(Shard& sh, float* row) {
    const uint64_t id = RowId(row);
    sh.index.Erase(id, Mix64(id));
    SetRowTick(row, kFreeTick);
    sh.slab.Free(row);
    if (track_removed_) sh.removed.push_back(id);
    if (tracked_ != 0) NoteAll(sh, id, &Shard::ChangeRecord::dropped);
  }

  // A delta's removed id: drops its row, if this table holds one.
  void DropRow(uint64_t id) {
    Shard& sh = *shards_[ShardOf(Mix64(id))];
    if (float* row = sh.index.Find(id, Mix64(id))) RemoveRow(sh, row);
  }

  // Expiry sweeps run at every sweep_every_-th tick (ttl/8: an entry lives at most 1/8 of the
  // ttl past it), so when they run depends only on the clock, which checkpoints keep.
  bool ExpiryDue() const { return ttl_ > 0 && tick_ > ttl_ && tick_ < kMaxTick && tick_ % sweep_every_ == 0; }

  // Removes the shard's rows and pending ids last pulled more than ttl_ ticks ago: one
  // sequential scan of the slab (as EvictBatch) and one of the pending map.
  void ExpireShard(Shard& sh) {
    const uint32_t oldest_kept = tick_ - ttl_;
    sh.slab.ForEachCarved([&](float* row) {
      const uint32_t t = RowTick(row);
      if (t == kFreeTick || t >= oldest_kept) return;
      RemoveRow(sh, row);
      ++sh.expirations;
    });
    if (sh.pending.size() > 0) {
      sh.pending_expirations +=
          sh.pending.EraseIf([oldest_kept](uint64_t, const PendingId& p) { return p.tick < oldest_kept; });
    }
  }

  // Collects per-shard results after a parallel call; returns the first error in shard order.
  Status FinishCall() {
    Status first;
    for (size_t s = 0; s < shards_.size(); ++s) {
      if (first.ok() && !shard_status_[s].ok()) first = shard_status_[s];
      shard_status_[s] = OkStatus();
    }
    RefreshStats();
    return first;
  }

  void RefreshStats() {
    int64_t rows = 0, bytes = oov_bytes_, pending = 0;
    int64_t admissions = 0, evictions = 0, oov = 0, resets = 0, expirations = 0, pending_expirations = 0;
    for (auto& sh : shards_) {
      rows += sh->index.size();
      bytes += ShardBytes(*sh);
      pending += sh->pending.size();
      admissions += sh->admissions;
      evictions += sh->evictions;
      oov += sh->oov_lookups;
      resets += sh->pending_resets;
      expirations += sh->expirations;
      pending_expirations += sh->pending_expirations;
      ClearShardCounters(*sh);
    }
    rows_.store(rows, std::memory_order_relaxed);
    bytes_.store(bytes, std::memory_order_relaxed);
    pending_ids_.store(pending, std::memory_order_relaxed);
    admissions_.fetch_add(admissions, std::memory_order_relaxed);
    evictions_.fetch_add(evictions, std::memory_order_relaxed);
    oov_lookups_.fetch_add(oov, std::memory_order_relaxed);
    pending_resets_.fetch_add(resets, std::memory_order_relaxed);
    expirations_.fetch_add(expirations, std::memory_order_relaxed);
    pending_expirations_.fetch_add(pending_expirations, std::memory_order_relaxed);
  }

  static void ClearShardCounters(Shard& sh) {
    sh.admissions = sh.evictions = sh.oov_lookups = sh.pending_resets = 0;
    sh.expirations = sh.pending_expirations = 0;
  }

  // Reads a checkpoint (ReadDelta: a delta file). With apply == false it only validates (every
  // checksum, every count); with apply == true it also replaces (applies to) the table's contents.
  Status ReadCheckpoint(const std::string& path, bool apply, const LoadOptions& options);
  Status ReadDelta(const std::string& path, bool apply, const LoadOptions& options);
  Status ReadHeader(CheckpointReader& r, bool delta, CheckpointHeader* h) const;
  Status CheckShape(const std::string& path, const CheckpointHeader& h) const;
  Status ReadPending(CheckpointReader& r, const CheckpointHeader& h, bool apply, const LoadOptions& options);
  void ApplyTableState(const CheckpointHeader& h, const LoadOptions& options, bool full);
  Status PutRow(const FileRow& rec, const std::vector<float>& values, bool upsert, const std::string& path);
  void FinishLoad(const CheckpointHeader& h, const LoadOptions& options);
  void WriteHeader(CheckpointWriter& w, const CheckpointHeader& h) const;
  void WriteRow(CheckpointWriter& w, const float* row) const;
  void WritePendingAndEnd(CheckpointWriter& w, uint64_t pending_count) const;
  void CollectChanges(ChangeLog log, std::vector<const float*>* rows, std::vector<uint64_t>* removed) const;

  const EmbeddingTableConfig config_;
  const std::unique_ptr<optim::SparseOptimizer> optimizer_;
  const RowInitializer init_;
  int dim_ = 0;
  int width_ = 0;
  int64_t stride_ = 0;  // floats per row
  int64_t stride_bytes_ = 0;
  int shard_bits_ = 0;
  bool budgeted_ = false;
  bool evict_ = true;
  int64_t shard_budget_ = 0;
  int64_t oov_bytes_ = 0;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<float> oov_;  // weights | state of the shared OOV row
  uint32_t oov_updates_ = 0;
  uint32_t tick_ = 0;  // incremented by every kTrain Pull; rows store it as last access
  uint32_t ttl_ = 0;   // config_.ttl_steps (0: no expiry)
  uint32_t sweep_every_ = 1;
  bool track_removed_ = false;
  uint32_t tracked_ = 0;  // bit l: change log l is tracked (TrackChanges)
  std::array<uint32_t, kChangeLogs> marks_{};  // per change log: the clock at its last mark

  // Per-call scratch, reused across calls (never shrunk).
  std::vector<uint64_t> tmp_hash_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> order_;
  std::vector<float*> rows_scratch_;
  std::vector<int64_t> shard_begin_;
  std::vector<int64_t> cursor_;
  std::vector<Status> shard_status_;

  std::atomic<int64_t> rows_{0}, bytes_{0}, admissions_{0}, evictions_{0}, lookups_{0},
      oov_lookups_{0}, pending_ids_{0}, pending_resets_{0}, expirations_{0}, pending_expirations_{0};
};

// Writes records in blocks of kRowsPerBlock: Begin() before each record, End() after it.
class BlockWriter {
 public:
  BlockWriter(CheckpointWriter& w, uint64_t count) : w_(w), left_(count) {}
  void Begin() {
    if (in_block_ > 0) return;
    in_block_ = static_cast<uint32_t>(std::min<uint64_t>(left_, kRowsPerBlock));
    w_.Put<uint32_t>(in_block_);
  }
  void End() {
    --left_;
    if (--in_block_ == 0) w_.WriteCrc();
  }

 private:
  CheckpointWriter& w_;
  uint64_t left_;
  uint32_t in_block_ = 0;
};

void ShardedEmbeddingTable::WriteHeader(CheckpointWriter& w, const CheckpointHeader& h) const {
  w.Write(h.delta ? kDeltaMagic : kMagic, sizeof(kMagic));
  w.Put<uint32_t>(h.delta ? kDeltaFormatVersion : kFormatVersion);
  w.Put<uint32_t>(dim_);
  w.Put<uint32_t>(width_);
  w.Put<uint32_t>(static_cast<uint32_t>(h.optimizer.size()));
  w.Put<uint64_t>(h.row_count);
  w.Put<uint64_t>(h.pending_count);
  w.Put<uint32_t>(tick_);
  w.Put<uint32_t>(h.base_tick);  // reserved (0) in a full file
  w.Put<int64_t>(admissions_.load());
  w.Put<int64_t>(evictions_.load());
  w.Put<int64_t>(lookups_.load());
  w.Put<int64_t>(oov_lookups_.load());
  w.Put<int64_t>(expirations_.load());
  w.Put<int64_t>(pending_expirations_.load());
  if (h.delta) w.Put<uint64_t>(h.removed_count);
  w.Write(h.optimizer.data(), h.optimizer.size());
  w.WriteCrc();
  // The OOV row.
  w.Put<uint32_t>(oov_updates_);
  w.Write(oov_.data(), oov_.size() * 4);
  w.WriteCrc();
}

void ShardedEmbeddingTable::WriteRow(CheckpointWriter& w, const float* row) const {
  w.Put<uint64_t>(RowId(row));
  w.Put<uint32_t>(RowUpdates(row));
  w.Put<uint32_t>(RowTick(row));
  w.Write(row + kMetaFloats, static_cast<size_t>(dim_ + width_) * 4);
}

// Pending sighting counts, every shard's, then the end marker.
void ShardedEmbeddingTable::WritePendingAndEnd(CheckpointWriter& w, uint64_t pending_count) const {
  BlockWriter pending(w, pending_count);
  for (const auto& sh : shards_) {
    sh->pending.ForEach([&](uint64_t id, const PendingId& p) {
      pending.Begin();
      w.Put<uint64_t>(id);
      w.Put<uint32_t>(p.count);
      w.Put<uint32_t>(p.tick);
      pending.End();
    });
  }
  w.Write(kEndMagic, sizeof(kEndMagic));
}

Status ShardedEmbeddingTable::Save(const std::string& path) const {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> w, CheckpointWriter::Open(path));
  CheckpointHeader h;
  h.optimizer = optimizer_->name();
  for (const auto& sh : shards_) {
    h.row_count += sh->index.size();
    h.pending_count += sh->pending.size();
  }
  WriteHeader(*w, h);
  BlockWriter rows(*w, h.row_count);
  for (const auto& sh : shards_) {
    sh->index.ForEach([&](uint64_t, float* row) {
      rows.Begin();
      WriteRow(*w, row);
      rows.End();
    });
  }
  WritePendingAndEnd(*w, h.pending_count);
  RECTRAIN_RETURN_IF_ERROR(w->Commit()) << "while saving embedding table '" << config_.name << "'";
  return OkStatus();
}

// The rows changed since the log's mark and the ids removed since then that have no row now,
// each by ascending id.
void ShardedEmbeddingTable::CollectChanges(ChangeLog log, std::vector<const float*>* rows,
                                           std::vector<uint64_t>* removed) const {
  std::vector<uint64_t> ids;
  for (const auto& sh : shards_) {
    const Shard::ChangeRecord& r = sh->logs[static_cast<int>(log)];
    ids = r.changed;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (uint64_t id : ids) {
      if (const float* row = sh->index.Find(id, Mix64(id))) rows->push_back(row);
    }
    for (uint64_t id : r.dropped) {
      if (sh->index.Find(id, Mix64(id)) == nullptr) removed->push_back(id);
    }
  }
  std::sort(rows->begin(), rows->end(), [](const float* a, const float* b) { return RowId(a) < RowId(b); });
  std::sort(removed->begin(), removed->end());
  removed->erase(std::unique(removed->begin(), removed->end()), removed->end());
}

Status ShardedEmbeddingTable::ForEachChangedRow(ChangeLog log, const RowVisitor& fn,
                                                std::vector<uint64_t>* removed) const {
  if ((tracked_ >> static_cast<int>(log) & 1u) == 0) {
    return FailedPreconditionError("embedding table '" + config_.name +
                                   "': ForEachChangedRow without TrackChanges(log, true) (no record of the changed rows)");
  }
  std::vector<const float*> changed;
  CollectChanges(log, &changed, removed);
  for (const float* row : changed) {
    fn(RowId(row), RowUpdates(row), std::span<const float>(row + kMetaFloats, static_cast<size_t>(dim_)));
  }
  return OkStatus();
}

Status ShardedEmbeddingTable::SaveChanges(const std::string& path) const {
  if ((tracked_ >> static_cast<int>(ChangeLog::kCheckpoint) & 1u) == 0) {
    return FailedPreconditionError("embedding table '" + config_.name +
                                   "': SaveChanges without TrackChanges(kCheckpoint, true) (no record of the changed rows)");
  }
  std::vector<const float*> changed;
  std::vector<uint64_t> removed;
  CollectChanges(ChangeLog::kCheckpoint, &changed, &removed);
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> w, CheckpointWriter::Open(path));
  CheckpointHeader h;
  h.delta = true;
  h.optimizer = optimizer_->name();
  h.row_count = changed.size();
  h.removed_count = removed.size();
  h.base_tick = marks_[static_cast<int>(ChangeLog::kCheckpoint)];
  for (const auto& sh : shards_) h.pending_count += sh->pending.size();
  WriteHeader(*w, h);
  BlockWriter gone(*w, h.removed_count);
  for (uint64_t id : removed) {
    gone.Begin();
    w->Put<uint64_t>(id);
    gone.End();
  }
  BlockWriter rows(*w, h.row_count);
  for (const float* row : changed) {
    rows.Begin();
    WriteRow(*w, row);
    rows.End();
  }
  WritePendingAndEnd(*w, h.pending_count);
  RECTRAIN_RETURN_IF_ERROR(w->Commit()) << "while saving the changes of embedding table '" << config_.name << "'";
  return OkStatus();
}

// Reads and checks the header and the OOV row of a full (delta == false) or delta file.
Status ShardedEmbeddingTable::ReadHeader(CheckpointReader& r, bool delta, CheckpointHeader* h) const {
  const std::string& path = r.path();
  char magic[8];
  RECTRAIN_RETURN_IF_ERROR(r.Read(magic, sizeof(magic), "the header"));
  if (std::memcmp(magic, delta ? kDeltaMagic : kMagic, sizeof(kMagic)) != 0) {
    const bool other = std::memcmp(magic, delta ? kMagic : kDeltaMagic, sizeof(kMagic)) == 0;
    return DataLossError("embedding checkpoint " + path + ": bad magic: " +
                         (other ? (delta ? "a full table file where a delta was expected"
                                         : "a delta file where a full table file was expected")
                                : "not an embedding table checkpoint (or a corrupt one)"));
  }
  h->delta = delta;
  uint32_t name_len = 0;
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->version, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->dim, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->state_width, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&name_len, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->row_count, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->pending_count, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->tick, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->base_tick, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->admissions, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->evictions, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->lookups, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->oov_lookups, "the header"));
  const uint32_t newest = delta ? kDeltaFormatVersion : kFormatVersion;
  if (delta || (h->version >= 2 && h->version <= newest)) {  // full version 2 added the expiry counters
    RECTRAIN_RETURN_IF_ERROR(r.Get(&h->expirations, "the header"));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&h->pending_expirations, "the header"));
  }
  if (delta) {
    RECTRAIN_RETURN_IF_ERROR(r.Get(&h->removed_count, "the header"));
  }
  if (name_len > kMaxOptimizerName) {
    return DataLossError("embedding checkpoint " + path + ": optimizer name length " + Str(name_len) + " exceeds " +
                         Str(kMaxOptimizerName) + " (corrupt header)");
  }
  h->optimizer.resize(name_len);
  RECTRAIN_RETURN_IF_ERROR(r.Read(h->optimizer.data(), name_len, "the header"));
  RECTRAIN_RETURN_IF_ERROR(r.CheckCrc("the header"));
  const uint32_t oldest = delta ? kDeltaFormatVersion : kOldestFormatVersion;
  if (h->version < oldest || h->version > newest) {
    return InvalidArgumentError("embedding checkpoint " + path + " has " + (delta ? "delta " : "") + "format version " +
                                Str(h->version) + "; this build reads versions " + Str(oldest) + " to " + Str(newest));
  }
  RECTRAIN_RETURN_IF_ERROR(CheckShape(path, *h));
  h->oov.resize(dim_ + width_);
  RECTRAIN_RETURN_IF_ERROR(r.Get(&h->oov_updates, "the OOV row"));
  RECTRAIN_RETURN_IF_ERROR(r.Read(h->oov.data(), h->oov.size() * 4, "the OOV row"));
  return r.CheckCrc("the OOV row");
}

Status ShardedEmbeddingTable::CheckShape(const std::string& path, const CheckpointHeader& h) const {
  if (h.dim != static_cast<uint32_t>(dim_)) {
    return InvalidArgumentError("embedding checkpoint " + path + " has dim " + Str(h.dim) + " but table '" +
                                config_.name + "' has dim " + Str(dim_) + " (embedding.dim)");
  }
  if (h.optimizer != optimizer_->name() || h.state_width != static_cast<uint32_t>(width_)) {
    return InvalidArgumentError("embedding checkpoint " + path + " was written with sparse optimizer '" + h.optimizer +
                                "' (state width " + Str(h.state_width) + ") but table '" + config_.name + "' uses '" +
                                optimizer_->name() + "' (state width " + Str(width_) + ")");
  }
  return OkStatus();
}

// Reads `total` records in blocks of kRowsPerBlock, each by read_record(where), checking every
// block's count and CRC.
Status ReadBlocks(CheckpointReader& r, uint64_t total, const char* what,
                  const std::function<Status(const std::string& where)>& read_record) {
  uint64_t left = total;
  for (int64_t block = 0; left > 0; ++block) {
    const std::string where = std::string(what) + " block " + Str(block);
    uint32_t n = 0;
    RECTRAIN_RETURN_IF_ERROR(r.Get(&n, where.c_str()));
    const uint64_t expected = std::min<uint64_t>(left, kRowsPerBlock);
    if (n != expected) {
      return DataLossError("embedding checkpoint " + r.path() + ": " + where + " holds " + Str(n) +
                           " records; expected " + Str(expected) + " (corrupt block header at byte " +
                           Str(r.offset() - 4) + ")");
    }
    for (uint32_t i = 0; i < n; ++i) RECTRAIN_RETURN_IF_ERROR(read_record(where));
    RECTRAIN_RETURN_IF_ERROR(r.CheckCrc(where.c_str()));
    left -= n;
  }
  return OkStatus();
}

// Reads a row record into `rec` and `values` (dim + width floats).
Status ReadRowRecord(CheckpointReader& r, const std::string& where, FileRow* rec, std::vector<float>* values) {
  RECTRAIN_RETURN_IF_ERROR(r.Get(&rec->id, where.c_str()));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&rec->updates, where.c_str()));
  RECTRAIN_RETURN_IF_ERROR(r.Get(&rec->tick, where.c_str()));
  return r.Read(values->data(), values->size() * 4, where.c_str());
}

// Reads the pending blocks and, when applying, inserts the ids into the (cleared or merged) pending maps.
Status ShardedEmbeddingTable::ReadPending(CheckpointReader& r, const CheckpointHeader& h, bool apply,
                                          const LoadOptions& options) {
  auto read_pending = [&](const std::string& where) -> Status {
    uint64_t id = 0;
    PendingId p{.count = 0, .tick = h.tick};  // full version 1: seen at the file's clock
    RECTRAIN_RETURN_IF_ERROR(r.Get(&id, where.c_str()));
    RECTRAIN_RETURN_IF_ERROR(r.Get(&p.count, where.c_str()));
    if (h.delta || h.version >= 2) {
      RECTRAIN_RETURN_IF_ERROR(r.Get(&p.tick, where.c_str()));
    }
    if (p.count == 0) return DataLossError("embedding checkpoint " + r.path() + ": " + where + ": pending id with a count of 0");
    if (!apply || config_.min_count <= 1) return OkStatus();  // no admission counting here
    if (options.keep && !options.keep(id)) return OkStatus();
    const uint64_t hash = Mix64(id);
    const int s = ShardOf(hash);
    Shard& sh = *shards_[s];
    if (sh.pending.Find(id, hash).count != 0) {
      return DataLossError("embedding checkpoint " + r.path() + ": pending id " + Str(id) + " appears twice");
    }
    RECTRAIN_RETURN_IF_ERROR(EnsurePendingRoom(s, sh));
    p.tick = std::min(p.tick, kMaxTick);
    sh.pending.Insert(id, hash, p);
    return OkStatus();
  };
  return ReadBlocks(r, h.pending_count, "pending ids", read_pending);
}

// The end marker, then nothing.
Status ReadEnd(CheckpointReader& r) {
  char end_magic[8];
  RECTRAIN_RETURN_IF_ERROR(r.Read(end_magic, sizeof(end_magic), "the end marker"));
  if (std::memcmp(end_magic, kEndMagic, sizeof(kEndMagic)) != 0) {
    return DataLossError("embedding checkpoint " + r.path() + ": bad end marker at byte " + Str(r.offset() - 8));
  }
  return r.ExpectEnd();
}

// What the first file of a load (merge false) sets for the whole table, and what every file
// merges: the OOV row, the clock; with `full`, the file replaces every row and pending id, a
// delta replaces the pending ids only.
void ShardedEmbeddingTable::ApplyTableState(const CheckpointHeader& h, const LoadOptions& options, bool full) {
  if (options.merge) {
    tick_ = std::max(tick_, h.tick);
    return;
  }
  oov_ = h.oov;
  oov_updates_ = h.oov_updates;
  tick_ = h.tick;
  const int64_t per_shard = full ? ReserveRowsPerShard(static_cast<int64_t>(h.row_count)) : 0;
  for (auto& sh : shards_) {
    sh->pending.Clear();
    if (!full) continue;
    sh->index.Clear();
    sh->slab.Reset();
    sh->removed.clear();  // removals relative to contents that are gone
    if (per_shard > 0) sh->index.Reserve(per_shard);
  }
}

// After a file was applied: the file's cumulative counters, and the change record starts afresh
// (the table now holds a saved state).
void ShardedEmbeddingTable::FinishLoad(const CheckpointHeader& h, const LoadOptions& options) {
  for (auto& sh : shards_) {
    ClearShardCounters(*sh);
    for (Shard::ChangeRecord& r : sh->logs) {
      r.changed.clear();
      r.dropped.clear();
    }
  }
  marks_.fill(tick_);
  if (!options.merge) {
    admissions_.store(0);
    evictions_.store(0);
    lookups_.store(0);
    oov_lookups_.store(0);
    expirations_.store(0);
    pending_expirations_.store(0);
  }
  if (options.counters) {
    admissions_.fetch_add(h.admissions);
    evictions_.fetch_add(h.evictions);
    lookups_.fetch_add(h.lookups);
    oov_lookups_.fetch_add(h.oov_lookups);
    expirations_.fetch_add(h.expirations);
    pending_expirations_.fetch_add(h.pending_expirations);
  }
  RefreshStats();
}

// Sets a row from a file: a new row, or (upsert, a delta) the id's row replaced.
Status ShardedEmbeddingTable::PutRow(const FileRow& rec, const std::vector<float>& values, bool upsert,
                                     const std::string& path) {
  const uint64_t hash = Mix64(rec.id);
  const int s = ShardOf(hash);
  Shard& sh = *shards_[s];
  float* row = sh.index.Find(rec.id, hash);
  const uint32_t tick = std::min(rec.tick, kMaxTick);
  if (row != nullptr && !upsert) return DataLossError("embedding checkpoint " + path + ": id " + Str(rec.id) + " appears twice");
  if (row == nullptr) {
    RECTRAIN_ASSIGN_OR_RETURN(row, NewRow(s, sh, rec.id, hash, tick));
  } else {
    SetRowTick(row, tick);
  }
  SetRowUpdates(row, rec.updates);
  std::memcpy(row + kMetaFloats, values.data(), values.size() * 4);
  return OkStatus();
}

Status ShardedEmbeddingTable::ReadCheckpoint(const std::string& path, bool apply, const LoadOptions& options) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  CheckpointHeader h;
  RECTRAIN_RETURN_IF_ERROR(ReadHeader(*r, /*delta=*/false, &h));
  if (apply) ApplyTableState(h, options, /*full=*/true);
  std::vector<float> values(dim_ + width_);
  FileRow rec;
  auto read_row = [&](const std::string& where) -> Status {
    RECTRAIN_RETURN_IF_ERROR(ReadRowRecord(*r, where, &rec, &values));
    if (!apply || (options.keep && !options.keep(rec.id))) return OkStatus();
    return PutRow(rec, values, /*upsert=*/false, path);
  };
  RECTRAIN_RETURN_IF_ERROR(ReadBlocks(*r, h.row_count, "rows", read_row));
  RECTRAIN_RETURN_IF_ERROR(ReadPending(*r, h, apply, options));
  RECTRAIN_RETURN_IF_ERROR(ReadEnd(*r));
  if (apply) FinishLoad(h, options);
  return OkStatus();
}

// A delta: removed ids (their rows dropped), changed rows (upserted), pending ids (replacing
// the table's on the first file). Ids ascend strictly among the rows and among the removed ids,
// so a repeated id is DataLoss.
Status ShardedEmbeddingTable::ReadDelta(const std::string& path, bool apply, const LoadOptions& options) {
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  CheckpointHeader h;
  RECTRAIN_RETURN_IF_ERROR(ReadHeader(*r, /*delta=*/true, &h));
  if (apply) ApplyTableState(h, options, /*full=*/false);
  std::vector<float> values(dim_ + width_);
  FileRow rec;
  std::optional<uint64_t> previous;  // ids ascend strictly in each section
  auto in_order = [&](const std::string& where, uint64_t id) -> Status {
    if (previous && id <= *previous) {
      return DataLossError("embedding checkpoint " + path + ": " + where + ": id " + Str(id) +
                           " out of order or repeated (after " + Str(*previous) + ")");
    }
    previous = id;
    return OkStatus();
  };
  auto read_row = [&](const std::string& where) -> Status {
    RECTRAIN_RETURN_IF_ERROR(ReadRowRecord(*r, where, &rec, &values));
    RECTRAIN_RETURN_IF_ERROR(in_order(where, rec.id));
    if (!apply || (options.keep && !options.keep(rec.id))) return OkStatus();
    return PutRow(rec, values, /*upsert=*/true, path);
  };
  auto read_removed = [&](const std::string& where) -> Status {
    uint64_t id = 0;
    RECTRAIN_RETURN_IF_ERROR(r->Get(&id, where.c_str()));
    RECTRAIN_RETURN_IF_ERROR(in_order(where, id));
    if (apply && (!options.keep || options.keep(id))) DropRow(id);
    return OkStatus();
  };
  // Removals first: the rows they free make room for the changed rows under a memory budget.
  RECTRAIN_RETURN_IF_ERROR(ReadBlocks(*r, h.removed_count, "removed ids", read_removed));
  previous.reset();
  RECTRAIN_RETURN_IF_ERROR(ReadBlocks(*r, h.row_count, "rows", read_row));
  RECTRAIN_RETURN_IF_ERROR(ReadPending(*r, h, apply, options));
  RECTRAIN_RETURN_IF_ERROR(ReadEnd(*r));
  if (apply) FinishLoad(h, options);
  return OkStatus();
}

Status ShardedEmbeddingTable::Load(const std::string& path, const LoadOptions& options) {
  // Validate the whole file first so that a corrupt checkpoint leaves the table unchanged.
  RECTRAIN_RETURN_IF_ERROR(ReadCheckpoint(path, /*apply=*/false, options))
      << "while loading embedding table '" << config_.name << "'";
  RECTRAIN_RETURN_IF_ERROR(ReadCheckpoint(path, /*apply=*/true, options))
      << "while loading embedding table '" << config_.name << "'";
  return OkStatus();
}

Status ShardedEmbeddingTable::LoadChanges(const std::string& path, const LoadOptions& options) {
  RECTRAIN_RETURN_IF_ERROR(ReadDelta(path, /*apply=*/false, options))
      << "while loading the changes of embedding table '" << config_.name << "'";
  RECTRAIN_RETURN_IF_ERROR(ReadDelta(path, /*apply=*/true, options))
      << "while loading the changes of embedding table '" << config_.name << "'";
  return OkStatus();
}

}  // namespace

Status EmbeddingTable::Push(std::span<const uint64_t> ids, std::span<const float> grads,
                            const optim::StepContext& step, const ComputeContext& compute) {
  std::vector<float> oov_grad(static_cast<size_t>(dim()), 0.0f);
  RECTRAIN_ASSIGN_OR_RETURN(const bool oov_touched, PushRows(ids, grads, step, compute, oov_grad));
  return oov_touched ? ApplyOovGradient(oov_grad, step) : OkStatus();
}

Result<std::unique_ptr<EmbeddingTable>> MakeEmbeddingTable(const EmbeddingTableConfig& config) {
  const std::string where = "embedding table '" + config.name + "': ";
  if (config.dim < 1) {
    return InvalidArgumentError(where + "embedding.dim must be >= 1, got " + Str(config.dim));
  }
  if (config.num_shards < 1 || config.num_shards > kMaxShards ||
      (config.num_shards & (config.num_shards - 1)) != 0) {
    return InvalidArgumentError(where + "embedding.num_shards must be a power of two in [1, " +
                                Str(kMaxShards) + "], got " + Str(config.num_shards));
  }
  if (config.min_count < 1 || config.min_count > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError(where + "embedding.min_count must be in [1, 2^32-1], got " +
                                Str(config.min_count));
  }
  if (config.memory_budget_bytes < 0) {
    return InvalidArgumentError(where + "embedding.memory_budget must be >= 0 (0 = unlimited), got " +
                                Str(config.memory_budget_bytes));
  }
  if (config.ttl_steps < 0 || config.ttl_steps >= kMaxTick) {
    return InvalidArgumentError(where + "embedding.ttl_steps must be in [0, " + Str(kMaxTick - 1) +
                                "] (0 = no expiry), got " + Str(config.ttl_steps));
  }
  if (config.expected_rows < 0) {
    return InvalidArgumentError(where + "embedding.expected_rows must be >= 0, got " +
                                Str(config.expected_rows));
  }
  auto optimizer = optim::MakeSparseOptimizer(config.optimizer);
  if (!optimizer.ok()) return optimizer.status().WithContext(where.substr(0, where.size() - 2));
  auto init = RowInitializer::Make(config.initializer, config.seed);
  if (!init.ok()) return init.status().WithContext(where.substr(0, where.size() - 2));
  const int width = (*optimizer)->StateWidth(config.dim);
  if (config.memory_budget_bytes > 0) {
    const int64_t minimum = ShardedEmbeddingTable::MinimumBudget(config, width);
    if (config.memory_budget_bytes < minimum) {
      return InvalidArgumentError(
          where + "embedding.memory_budget of " + Str(config.memory_budget_bytes) +
          " bytes is below the minimum of " + Str(minimum) + " bytes for embedding.num_shards " +
          Str(config.num_shards) + " and dim " + Str(config.dim) +
          " (empty index and 4 rows per shard); raise it or lower embedding.num_shards");
    }
  }
  return std::unique_ptr<EmbeddingTable>(
      std::make_unique<ShardedEmbeddingTable>(config, std::move(*optimizer), *init));
}

}  // namespace rectrain::embedding
