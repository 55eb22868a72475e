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
// to the caller's ReaderBufferPool (ReadOptions::buffer_pool) when a reader is destroyed, and the
// next reader given that pool (the next epoch, eval) starts with them. A fresh buffer costs a zero-fill and a page fault
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
#include "rectrain/data/internal/opener.h"
#include "rectrain/data/internal/cache_format.h"
#include "rectrain/data/internal/pass_assembler.h"
#include "rectrain/data/internal/prefetch_queue.h"
#include "rectrain/data/internal/stats_pass.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/data/transform.h"
#include "rectrain/io/file.h"

namespace rectrain::data {

using internal::CacheFile;
using internal::CacheSchema;

namespace {

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

using internal::ShuffleSlots;

}  // namespace

// Free buffers for the next reader given the same pool (see the top comment). Bounded: what one or
// two readers use at once; the shuffle buffer keeps the pages of the largest pass. Thread-safe.
class ReaderBufferPool {
 public:
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

std::shared_ptr<ReaderBufferPool> MakeReaderBufferPool() { return std::make_shared<ReaderBufferPool>(); }

namespace {

class CacheBatchReader final : public BatchReader {
 public:
  CacheBatchReader(std::vector<std::unique_ptr<CacheFile>> files, const ReadOptions& options,
                   std::vector<BlockRef> order, std::string note)
      : pool_(options.buffer_pool != nullptr ? options.buffer_pool : MakeReaderBufferPool()),
        files_(std::move(files)),
        options_(options),
        order_(std::move(order)),
        note_(std::move(note)),
        layout_(MakeLayout(files_[0]->footer().schema)),
        window_(static_cast<int64_t>(order_.size()), options_.num_threads + 2),
        recycler_(options_.batch_size, &layout_, static_cast<size_t>(options_.prefetch_batches + 2)),
        assembler_(layout_, options_, &queue_, &recycler_,
                   options.shuffle && options.shuffle_buffer_rows > 0 ? pool_->TakeShuffle() : nullptr,
                   PassRows()) {
    const CacheSchema& s = files_[0]->footer().schema;
    dense_names_ = s.dense_names;
    sparse_names_ = s.sparse_names;
    stats_.files = static_cast<int64_t>(files_.size());
    ReaderBufferPool& pool = *pool_;
    for (int64_t i = 0; i < options_.num_threads + 2; ++i) {
      std::unique_ptr<Decoded> d = pool.TakeBlock();
      if (d == nullptr) break;
      window_.AddFree(std::move(d));
    }
    for (int i = 0; i < options_.prefetch_batches + 2; ++i) {
      std::optional<Batch> b = pool.TakeBatch();
      if (!b) break;
      recycler_.Stock(std::move(*b));
    }
    assembler_thread_ = std::thread([this] { AssemblerLoop(); });
    for (int i = 0; i < options_.num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~CacheBatchReader() override {
    window_.Stop();
    queue_.Stop();
    for (std::thread& t : workers_) t.join();
    assembler_thread_.join();
    ReaderBufferPool& pool = *pool_;
    for (auto& d : window_.TakeBlocks()) pool.Give(std::move(d));
    for (Batch& b : recycler_.TakeAll()) pool.Give(std::move(b));
    for (internal::PrefetchQueue::Item& item : queue_.TakeAll()) {
      if (!item.end && item.status.ok() && item.batch.size > 0) pool.Give(std::move(item.batch));
    }
    pool.Give(assembler_.TakeSlots());
  }

  Result<std::optional<Batch>> Next() override {
    return internal::NextFromQueue(queue_, &latched_, &finished_, &stats_, stats_mu_);
  }

  void Recycle(Batch&& batch) override { recycler_.Give(std::move(batch)); }

  ReaderStats Stats() const override {
    ReaderStats stats;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats = stats_;
    }
    stats.rows_skipped = assembler_.rows_skipped();
    stats.queue_depth = queue_.size();
    return stats;
  }
  const std::vector<std::string>& dense_names() const override { return dense_names_; }
  const std::vector<std::string>& sparse_names() const override { return sparse_names_; }
  std::string cache_note() const override { return note_; }

 private:
  static internal::RowLayout MakeLayout(const CacheSchema& s) {
    return internal::RowLayout::Make(static_cast<int>(s.dense_names.size()), s.multi, s.has_group);
  }
  int64_t PassRows() const {
    int64_t rows = 0;
    for (const BlockRef& ref : order_) {
      rows += files_[static_cast<size_t>(ref.file)]->footer().blocks[static_cast<size_t>(ref.block)].rows;
    }
    return rows;
  }

  void WorkerLoop() {
    std::unique_ptr<internal::CacheReadScratch> scratch_owner = pool_->TakeScratch();
    if (scratch_owner == nullptr) scratch_owner = std::make_unique<internal::CacheReadScratch>();
    internal::CacheReadScratch& scratch = *scratch_owner;
    struct GiveBack {
      ReaderBufferPool* pool;
      std::unique_ptr<internal::CacheReadScratch>* s;
      ~GiveBack() { pool->Give(std::move(*s)); }
    } give_back{pool_.get(), &scratch_owner};
    while (std::optional<internal::OrderedWindow<Decoded>::Claim> claim = window_.ClaimNext()) {
      std::unique_ptr<Decoded> d = window_.FreeBlock();
      Stopwatch sw;
      const BlockRef& ref = order_[static_cast<size_t>(claim->seq)];
      const CacheFile& file = *files_[static_cast<size_t>(ref.file)];
      d->seq = claim->seq;
      d->status = file.ReadBlock(ref.block, &scratch, &d->batch);
      d->bytes = file.footer().blocks[static_cast<size_t>(ref.block)].bytes;
      d->seconds = sw.Seconds();
      window_.Complete(claim->seq, std::move(d));
    }
  }

  void AssemblerLoop() {
    const int64_t n = static_cast<int64_t>(order_.size());
    for (int64_t seq = 0; seq < n; ++seq) {
      std::unique_ptr<Decoded> d = window_.Await(seq);
      if (d == nullptr) return;  // stopped
      if (!d->status.ok()) {
        window_.Stop();
        assembler_.PushError(d->status);
        return;
      }
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.bytes_read += d->bytes;
        stats_.parse_seconds += d->seconds;
      }
      const BlockRef& ref = order_[static_cast<size_t>(seq)];
      const std::string* source = options_.shuffle ? nullptr : &files_[static_cast<size_t>(ref.file)]->path();
      if (!assembler_.AddRows(d->batch, 0, d->batch.size, source, ref.first_row + 1)) return;
      window_.Release(std::move(d));
    }
    if (!assembler_.Flush()) return;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      for (const auto& f : files_) {
        stats_.rows_rejected += f->footer().counts.rows_rejected;
        stats_.rows_filtered += f->footer().counts.rows_filtered;
        stats_.rows_downsampled += f->footer().counts.rows_downsampled;
      }
    }
    assembler_.PushEnd();
  }

  // Declared first: the members below take buffers from it, and the destructor gives them back.
  const std::shared_ptr<ReaderBufferPool> pool_;
  const std::vector<std::unique_ptr<CacheFile>> files_;
  const ReadOptions options_;
  const std::vector<BlockRef> order_;
  const std::string note_;
  const internal::RowLayout layout_;
  std::vector<std::string> dense_names_;
  std::vector<std::string> sparse_names_;

  internal::OrderedWindow<Decoded> window_;
  internal::PrefetchQueue queue_{options_.prefetch_batches};
  internal::BatchRecycler recycler_;

  mutable std::mutex stats_mu_;
  ReaderStats stats_;  // guarded by stats_mu_

  internal::BatchAssembler assembler_;  // assembler thread

  // Consumer-thread state.
  Status latched_;
  bool finished_ = false;

  std::vector<std::thread> workers_;
  std::thread assembler_thread_;
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
  return ValidateRankShare(o);
}

Result<std::unique_ptr<BatchReader>> OpenCacheFiles(const std::vector<std::string>& paths,
                                                    const ReadOptions& options, const std::string& expected_key,
                                                    const std::string& signature, std::string note) {
  RECTRAIN_RETURN_IF_ERROR(ValidateReadOptions(options));
  if (paths.empty()) return InvalidArgumentError("no sample cache files to read");
  std::vector<std::unique_ptr<CacheFile>> files;
  std::vector<BlockRef> blocks;  // file order
  std::vector<int64_t> weights;
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
      blocks.push_back(BlockRef{static_cast<int>(files.size()), static_cast<int64_t>(b), row});
      weights.push_back(footer.blocks[b].rows);
      row += footer.blocks[b].rows;
    }
    files.push_back(std::move(f));
  }
  // Blocks (weighted by rows) ordered and shared out by the planner.
  std::vector<BlockRef> order;
  int64_t pass_rows = 0;
  for (int64_t b : PlanPassUnits(weights, options.shuffle, options.seed, options.epoch, options.rank, options.world)) {
    order.push_back(blocks[static_cast<size_t>(b)]);
    pass_rows += weights[static_cast<size_t>(b)];
  }
  const CacheSchema& schema = files[0]->footer().schema;
  RECTRAIN_RETURN_IF_ERROR(internal::CheckReaderBuffersFit(
      options, internal::RowLayout::Make(static_cast<int>(schema.dense_names.size()), schema.multi, schema.has_group),
      pass_rows));
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
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<io::FileFingerprint> fps, io::FingerprintAll(paths));
  for (size_t i = 0; i < paths.size(); ++i) {
    key += "file=" + std::to_string(paths[i].size()) + ":" + paths[i] + " " + fps[i].ToString() + "\n";
  }
  if (NeedsStats(config)) {
    // Standardize/quantiles statistics come from these files: other statistics, other rows.
    const std::vector<std::string>& stats = config.stats_files.empty() ? config.files : config.stats_files;
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> spaths, io::ExpandPaths(stats));
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<io::FileFingerprint> sfps, io::FingerprintAll(spaths));
    for (size_t i = 0; i < spaths.size(); ++i) {
      key += "stats_file=" + std::to_string(spaths[i].size()) + ":" + spaths[i] + " " + sfps[i].ToString() + "\n";
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

Result<std::unique_ptr<BatchReader>> OpenCacheReader(const std::vector<std::string>& paths,
                                                     const ReadOptions& options, const std::string& expected_key,
                                                     const std::string& signature) {
  std::string note = "sample cache ";
  for (size_t i = 0; i < paths.size(); ++i) note += (i ? ", " : "") + paths[i];
  return OpenCacheFiles(paths, options, expected_key, signature, note);
}

namespace internal {

Status ValidateCacheWriteOptions(const CacheWriteOptions& options) {
  RECTRAIN_RETURN_IF_ERROR(ParseCacheCodec(options.codec).status());
  if (options.block_rows < 1 || options.block_rows > kCacheMaxBlockRows) {
    return InvalidArgumentError("cache block rows must be in 1.." + std::to_string(kCacheMaxBlockRows) +
                                ", got " + std::to_string(options.block_rows));
  }
  return OkStatus();
}

Result<CacheInfo> WriteCacheFrom(BatchReader& reader, const DataConfig& source, const std::string& key,
                                 const std::string& path, const CacheWriteOptions& options) {
  RECTRAIN_RETURN_IF_ERROR(ValidateCacheWriteOptions(options));
  RECTRAIN_ASSIGN_OR_RETURN(CacheCodec codec, ParseCacheCodec(options.codec));
  Stopwatch sw;
  CacheSchema schema;
  schema.dense_names = reader.dense_names();
  schema.sparse_names = reader.sparse_names();
  schema.multi.assign(schema.sparse_names.size(), false);
  std::unique_ptr<CacheFileWriter> writer;
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> batch, reader.Next());
    if (!batch) break;
    if (!writer) {
      for (size_t f = 0; f < schema.multi.size(); ++f) schema.multi[f] = !batch->sparse[f].single_valued();
      schema.has_group = !batch->group_keys.empty();
      RECTRAIN_ASSIGN_OR_RETURN(writer, CacheFileWriter::Create(path, schema, codec, options.block_rows));
    }
    RECTRAIN_RETURN_IF_ERROR(writer->Append(*batch));
    reader.Recycle(std::move(*batch));
  }
  if (!writer) {
    RECTRAIN_ASSIGN_OR_RETURN(writer, CacheFileWriter::Create(path, schema, codec, options.block_rows));
  }
  const ReaderStats rs = reader.Stats();
  CacheBuildCounts counts;
  counts.rows_rejected = rs.rows_rejected;
  counts.rows_filtered = rs.rows_filtered;
  counts.rows_downsampled = rs.rows_downsampled;
  counts.source_files = rs.files;
  counts.source_bytes = rs.bytes_read;
  const int64_t raw = writer->raw_bytes();
  RECTRAIN_RETURN_IF_ERROR(writer->Finish(key, DataSignature(source), FormatName(source.schema.format), counts));
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CacheFile> check, CacheFile::Open(path));
  CacheInfo info = InfoOf(*check);
  info.built = true;
  info.raw_bytes = raw;
  info.seconds = sw.Seconds();
  return info;
}

Result<std::unique_ptr<BatchReader>> OpenCacheFilesWithNote(const std::vector<std::string>& paths,
                                                            const ReadOptions& options,
                                                            const std::string& expected_key,
                                                            const std::string& signature, std::string note) {
  return OpenCacheFiles(paths, options, expected_key, signature, std::move(note));
}

std::string CacheNote(const CacheInfo& info) {
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", info.seconds);
  return "sample cache " + info.path + " (" + WithThousands(info.rows) + " rows, " +
         WithThousands(info.file_bytes) + " bytes; " +
         (info.built ? "built now in " + std::string(secs) + " s" : std::string("key matches")) + ")";
}

}  // namespace internal

}  // namespace rectrain::data
