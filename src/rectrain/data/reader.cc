// Text BatchReader: chunked, parallel parsing with ordered (or deterministically shuffled)
// delivery through a bounded prefetch queue.
//
// Pipeline (all threads owned by the reader, none from the OpenMP compute pool):
//   workers (num_threads)  claim chunk sequence numbers, pread the chunk, parse its lines into a
//                          RowBlock; at most `window` chunks are in flight (memory bound).
//   assembler (1 thread)   takes parsed chunks strictly in sequence order (so results never
//                          depend on thread timing), resolves bad rows to file:line, applies
//                          max_bad_rows / rejects file, feeds rows through the shuffle buffer and
//                          skip_rows, and builds Batches into the prefetch queue.
//   consumer               Next() pops the queue (time blocked -> wait_seconds).
//
// Chunk ownership: chunk k of a file nominally covers bytes [begin_k, end_k) of the data region;
// it owns every line that *starts* in that range (a line starts at the data start or right after
// a '\n'), reading past end_k to finish its last line. So chunks can be parsed independently and
// every line is parsed exactly once.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "rectrain/base/random.h"
#include "rectrain/base/stopwatch.h"
#include "rectrain/data/errors.h"
#include "rectrain/data/internal/opener.h"
#include "rectrain/data/internal/parquet_source.h"
#include "rectrain/data/internal/pass_assembler.h"
#include "rectrain/data/internal/prefetch_queue.h"
#include "rectrain/data/internal/read_ahead.h"
#include "rectrain/data/internal/stats_pass.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/data/pass_plan.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/io/parquet/parquet_file.h"

namespace rectrain::data {

uint64_t FeatureId(int field_index, std::string_view token, uint64_t hash_seed) {
  return HashBytes(token, DeriveSeed(hash_seed, static_cast<uint64_t>(field_index)));
}

namespace {

using internal::BadRow;
using internal::LineParser;
using internal::ParsePlan;
using internal::RowBlock;
using internal::RowGroupDecoder;

constexpr int64_t kMaxLineBytes = int64_t{64} << 20;
constexpr int64_t kReadSlack = 64 << 10;  // read this much past a chunk to finish its last line

struct FileInfo {
  std::string path;
  std::unique_ptr<io::RandomAccessFile> file;
  int64_t data_start = 0;  // after the header line, if any
  int64_t size = 0;
  int header_lines = 0;
  int64_t first_chunk = 0;  // index of its first chunk in the global chunk list
  int64_t num_chunks = 0;
  // Parquet: the file, the leaf column of each plan slot, rows before each row group (+ total),
  // and a key identifying the file (downsampling decisions). A chunk is a row group.
  std::unique_ptr<io::parquet::ParquetFile> pq;
  std::vector<int> pq_columns;
  std::vector<int64_t> rows_before;
  uint64_t key = 0;
};

struct ChunkRef {
  int file = 0;
  int64_t index = 0;  // within the file
  int64_t begin = 0;  // nominal byte range
  int64_t end = 0;
  // Parquet: a slice of rows [row_begin, row_end) of row group `row_group`. The slices of one
  // row group are adjacent in the chunk order and claimed together by one worker (which decodes
  // the row group once); `group_size` is their number, set on the first slice.
  int row_group = -1;
  int64_t row_begin = 0;
  int64_t row_end = 0;
  int64_t group_size = 1;
};

// Rows per Parquet slice: chunk_bytes / 256 (8192 for the default 2 MiB), so that parsed blocks
// stay small and are reused from the heap (see ReadOptions::chunk_bytes).
int64_t ParquetSliceRows(const ReadOptions& o) { return std::max<int64_t>(1, o.chunk_bytes / 256); }

struct ParsedChunk {
  ChunkRef ref;
  RowBlock block;
  int64_t lines = 0;       // lines owned (valid when complete)
  bool complete = false;   // every owned line was parsed
  Status fatal;            // I/O error
  bool line_too_long = false;  // line `lines` of the chunk exceeds kMaxLineBytes
  double seconds = 0;
};

// A growable byte buffer whose contents are not zero-initialised (memory is reused per worker).
class ByteBuffer {
 public:
  char* data() { return data_.get(); }
  int64_t size() const { return size_; }
  // Keeps the first `keep` bytes and makes room for `n` bytes in total.
  void Resize(int64_t n, int64_t keep) {
    if (n + 16 > capacity_) {
      int64_t cap = std::max(n + 16, capacity_ * 2);
      std::unique_ptr<char[]> d(new char[static_cast<size_t>(cap)]);
      if (keep > 0) std::memcpy(d.get(), data_.get(), static_cast<size_t>(keep));
      data_ = std::move(d);
      capacity_ = cap;
    }
    size_ = n;
  }

 private:
  std::unique_ptr<char[]> data_;
  int64_t capacity_ = 0;
  int64_t size_ = 0;
};

// Reads [offset, offset + n) fully or fails: the file must not shrink while it is read.
Status ReadExact(const FileInfo& f, int64_t offset, int64_t n, char* dst) {
  RECTRAIN_ASSIGN_OR_RETURN(int64_t got, f.file->ReadAt(offset, n, dst));
  if (got != n) {
    return DataLossError(f.path + " changed while it was read: expected " + std::to_string(f.size) +
                         " bytes, got end of file at byte " + std::to_string(offset + got));
  }
  return OkStatus();
}

// The bytes ParseChunk reads first for a text chunk: from just before its nominal range (to see
// whether a line starts at its first byte) to a little past it (to finish its last line).
std::pair<int64_t, int64_t> ChunkReadRange(const FileInfo& f, const ChunkRef& ref) {
  const bool first = ref.begin == f.data_start;
  const int64_t read_from = first ? ref.begin : ref.begin - 1;
  const int64_t read_to =
      std::min(f.size, ref.end + std::min(kReadSlack, std::max<int64_t>(ref.end - ref.begin, 256)));
  return {read_from, read_to};
}

// Parses the lines owned by `ref` into `out`. Stops early (complete = false) in strict mode at
// the first bad row, after more than `max_bad_rows` bad rows, or when `stop` is set.
void ParseChunk(const FileInfo& f, const ChunkRef& ref, int64_t max_bad_rows, bool keep_raw,
                const std::atomic<bool>& stop, ByteBuffer* buf, LineParser* parser,
                ParsedChunk* out) {
  out->ref = ref;
  out->block.Reset();
  out->lines = 0;
  out->complete = false;
  out->fatal = OkStatus();
  out->line_too_long = false;
  const bool first = ref.begin == f.data_start;
  const auto [read_from, read_to] = ChunkReadRange(f, ref);
  buf->Resize(read_to - read_from, 0);
  if (Status s = ReadExact(f, read_from, read_to - read_from, buf->data()); !s.ok()) {
    out->fatal = s;
    return;
  }
  // First owned line: the data start, or just after the first '\n' in [begin - 1, end - 1).
  int64_t pos = 0;
  if (!first) {
    const void* nl = std::memchr(buf->data(), '\n', static_cast<size_t>(ref.end - ref.begin));
    if (nl == nullptr) {  // no line starts in this chunk
      out->complete = true;
      return;
    }
    pos = static_cast<const char*>(nl) - buf->data() + 1;
  }
  const int64_t limit = ref.end - read_from;  // owned lines start before this buffer offset
  const int64_t first_pos = pos;
  int64_t rel_line = 0;
  int64_t bad_count = 0;
  while (pos < limit) {
    const char* base = buf->data();
    int64_t len = buf->size();
    const void* nl = std::memchr(base + pos, '\n', static_cast<size_t>(len - pos));
    int64_t searched = pos;
    while (nl == nullptr && read_from + len < f.size) {
      // The line continues past what was read: read more.
      if (len - pos > kMaxLineBytes) break;
      searched = len;
      const int64_t more = std::min(f.size - (read_from + len), std::max<int64_t>(kReadSlack, len));
      buf->Resize(len + more, len);
      if (Status s = ReadExact(f, read_from + len, more, buf->data() + len); !s.ok()) {
        out->fatal = s;
        return;
      }
      base = buf->data();
      len = buf->size();
      nl = std::memchr(base + searched, '\n', static_cast<size_t>(len - searched));
    }
    const int64_t line_end = nl ? static_cast<const char*>(nl) - base : len;
    ++rel_line;
    if (line_end - pos > kMaxLineBytes) {
      out->lines = rel_line;  // the line number is resolved by the assembler
      out->line_too_long = true;
      return;
    }
    if (!parser->ParseLine(std::string_view(base + pos, static_cast<size_t>(line_end - pos)),
                           rel_line, keep_raw, &out->block)) {
      ++bad_count;
      if (bad_count > max_bad_rows) {
        out->lines = rel_line;
        return;  // incomplete: the pass fails at this row
      }
    }
    pos = line_end + 1;
    if (rel_line == 64) {
      // Size the row block once from the average line so far, instead of growing it by doubling
      // (each growth copies and touches fresh memory).
      const double avg = static_cast<double>(pos - first_pos) / 64.0;
      out->block.Reserve(*parser->plan(),
                         static_cast<int64_t>(static_cast<double>(limit - first_pos) / avg * 1.1) + 64);
    }
    if ((rel_line & 1023) == 0 && stop.load(std::memory_order_relaxed)) return;
  }
  out->lines = rel_line;
  out->complete = true;
}

// Absolute line numbers of chunk starts, learnt from parsed chunks in order and, when a chunk
// before the one asked about has not been parsed (shuffled passes, errors), by counting
// newlines. Used by the assembler thread only.
class LineIndex {
 public:
  void Init(const std::vector<FileInfo>* files, int64_t chunk_bytes) {
    files_ = files;
    chunk_bytes_ = chunk_bytes;
    lines_before_.resize(files->size());
    lines_owned_.resize(files->size());
    for (size_t i = 0; i < files->size(); ++i) {
      lines_before_[i].assign((*files)[i].num_chunks + 1, -1);
      lines_owned_[i].assign((*files)[i].num_chunks, -1);
      lines_before_[i][0] = (*files)[i].header_lines;
    }
  }
  void Record(int file, int64_t chunk, int64_t lines_owned) { lines_owned_[file][chunk] = lines_owned; }
  // Parquet: rows before each row group are known from the footer.
  void SetKnown(int file, const std::vector<int64_t>& rows_before) {
    lines_before_[file].assign(rows_before.begin(), rows_before.end());
  }

  // Lines before chunk `chunk` when known without counting (every earlier chunk was parsed), else -1.
  int64_t KnownLinesBefore(int file, int64_t chunk) {
    std::vector<int64_t>& before = lines_before_[file];
    if (before[chunk] >= 0) return before[chunk];
    int64_t j = chunk;
    while (before[j] < 0) --j;  // before[0] is always known
    for (; j < chunk; ++j) {
      if (lines_owned_[file][j] < 0) return -1;
      before[j + 1] = before[j] + lines_owned_[file][j];
    }
    return before[chunk];
  }

  // Number of lines in the file before the first line chunk `chunk` owns.
  Result<int64_t> LinesBefore(int file, int64_t chunk) {
    std::vector<int64_t>& before = lines_before_[file];
    if (before[chunk] >= 0) return before[chunk];
    int64_t j = chunk;
    while (before[j] < 0) --j;  // before[0] is always known
    for (; j < chunk; ++j) {
      int64_t owned = lines_owned_[file][j];
      if (owned < 0) {
        RECTRAIN_ASSIGN_OR_RETURN(owned, CountOwned(file, j));
        lines_owned_[file][j] = owned;
      }
      before[j + 1] = before[j] + owned;
    }
    return before[chunk];
  }

 private:
  // Line starts in [a, b): (a == data_start) + newlines in [max(a - 1, data_start), b - 1).
  Result<int64_t> CountOwned(int file, int64_t chunk) {
    const FileInfo& f = (*files_)[file];
    const int64_t a = f.data_start + chunk * chunk_bytes_;
    const int64_t b = std::min(f.size, a + chunk_bytes_);
    int64_t count = a == f.data_start ? 1 : 0;
    int64_t from = a == f.data_start ? a : a - 1;
    const int64_t to = b - 1;
    std::vector<char> buf(1 << 20);
    while (from < to) {
      const int64_t n = std::min<int64_t>(to - from, static_cast<int64_t>(buf.size()));
      RECTRAIN_RETURN_IF_ERROR(ReadExact(f, from, n, buf.data()));
      count += std::count(buf.data(), buf.data() + n, '\n');
      from += n;
    }
    return count;
  }

  const std::vector<FileInfo>* files_ = nullptr;
  int64_t chunk_bytes_ = 0;
  std::vector<std::vector<int64_t>> lines_before_;
  std::vector<std::vector<int64_t>> lines_owned_;
};

// Read-ahead over the pass's units when some file is on an object store (null otherwise: a
// local pass runs exactly as before). A text chunk's unit is the range ParseChunk reads first; a
// Parquet row group's (on its first slice) the projected column chunks.
std::unique_ptr<internal::ReadAhead> MakeReadAhead(const std::vector<FileInfo>& files,
                                                   const std::vector<ChunkRef>& order, const ReadOptions& options) {
  const bool remote = std::any_of(files.begin(), files.end(), [](const FileInfo& f) {
    return f.pq ? f.pq->remote() : f.file->remote();
  });
  if (!remote) return nullptr;
  std::vector<std::vector<int>> columns(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    columns[i] = files[i].pq_columns;
    std::sort(columns[i].begin(), columns[i].end());
    columns[i].erase(std::unique(columns[i].begin(), columns[i].end()), columns[i].end());
  }
  std::vector<internal::ReadAhead::Unit> units(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const ChunkRef& c = order[i];
    const FileInfo& f = files[c.file];
    units[i].file = c.file;
    if (!f.pq) {
      const auto [from, to] = ChunkReadRange(f, c);
      units[i].ranges.emplace_back(from, to - from);
    } else if (c.row_begin == 0) {
      for (int col : columns[c.file]) units[i].ranges.push_back(f.pq->ColumnChunkRange(c.row_group, col));
    }
  }
  // `files` is the reader's own vector, which outlives the ReadAhead.
  auto hint = [&files](int file, int64_t offset, int64_t n) {
    const FileInfo& f = files[file];
    if (f.pq) {
      f.pq->Prefetch(offset, n);
    } else {
      f.file->Prefetch(offset, n);
    }
  };
  auto waits = [&files](int file) { return files[file].pq ? files[file].pq->waits() : files[file].file->waits(); };
  return std::make_unique<internal::ReadAhead>(std::move(units), static_cast<int>(files.size()),
                                               4 * options.chunk_bytes, options.read_ahead_bytes, hint, waits);
}

internal::RowLayout MakeLayout(const ParsePlan& plan) {
  std::vector<bool> multi(static_cast<size_t>(plan.num_sparse()));
  for (int f = 0; f < plan.num_sparse(); ++f) multi[static_cast<size_t>(f)] = plan.sparse[f].multi;
  return internal::RowLayout::Make(plan.num_dense(), std::move(multi), plan.has_group);
}

class TextBatchReader final : public BatchReader {
 public:
  TextBatchReader(const DataConfig& config, const ReadOptions& options, ParsePlan plan,
                  std::vector<FileInfo> files, std::vector<ChunkRef> order, std::FILE* rejects)
      : config_(config),
        options_(options),
        plan_(std::move(plan)),
        layout_(MakeLayout(plan_)),
        files_(std::move(files)),
        order_(std::move(order)),
        rejects_(rejects),
        window_(static_cast<int64_t>(order_.size()), options_.num_threads + 2, GroupSizes(order_)),
        recycler_(options_.batch_size, &layout_, static_cast<size_t>(options_.prefetch_batches + 2)),
        assembler_(layout_, options_, &queue_, &recycler_, nullptr, -1) {
    read_ahead_ = MakeReadAhead(files_, order_, options_);
    line_index_.Init(&files_, options_.chunk_bytes);
    for (size_t i = 0; i < files_.size(); ++i) {
      if (files_[i].pq) line_index_.SetKnown(static_cast<int>(i), files_[i].rows_before);
    }
    stats_.files = static_cast<int64_t>(files_.size());
    assembler_thread_ = std::thread([this] { AssemblerLoop(); });
    for (int i = 0; i < options_.num_threads; ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
  }

  ~TextBatchReader() override {
    stop_flag_.store(true);
    window_.Stop();
    queue_.Stop();
    for (std::thread& t : workers_) t.join();
    assembler_thread_.join();
    if (rejects_ != nullptr) std::fclose(rejects_);
  }

  Result<RowLayout> row_layout() const override {
    RowLayout layout{.format = plan_.format};
    if (plan_.header || plan_.format == DataFormat::kParquet) {
      for (const auto& c : plan_.columns) layout.header.push_back(c.name);
    }
    for (const auto* features : {&plan_.dense, &plan_.sparse}) {
      for (const internal::FeaturePlan& f : *features) {
        if (f.stats_step >= 0) layout.stats.push_back(f.stats);
      }
    }
    return layout;
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
  const std::vector<std::string>& dense_names() const override { return plan_.dense_names; }
  const std::vector<std::string>& sparse_names() const override { return plan_.sparse_names; }

 private:
  static std::vector<int64_t> GroupSizes(const std::vector<ChunkRef>& order) {
    std::vector<int64_t> sizes(order.size(), 1);
    for (size_t i = 0; i < order.size(); ++i) sizes[i] = order[i].group_size;
    return sizes;
  }

  void WorkerLoop() {
    LineParser parser(&plan_);
    std::unique_ptr<RowGroupDecoder> decoder;
    ByteBuffer buf;
    const bool keep_raw = rejects_ != nullptr;
    while (std::optional<Window::Claim> claim = window_.ClaimNext()) {
      if (read_ahead_) read_ahead_->OnClaim(claim->seq);
      const ChunkRef& ref = order_[static_cast<size_t>(claim->seq)];
      const FileInfo& f = files_[ref.file];
      if (!f.pq) {
        std::unique_ptr<ParsedChunk> chunk = window_.FreeBlock();
        Stopwatch sw;
        ParseChunk(f, ref, config_.max_bad_rows, keep_raw, stop_flag_, &buf, &parser, chunk.get());
        chunk->seconds = sw.Seconds();
        window_.Complete(claim->seq, std::move(chunk));
        continue;
      }
      // A Parquet row group: decoded once, delivered as its slices.
      Stopwatch sw;
      if (!decoder) decoder = std::make_unique<RowGroupDecoder>(&plan_);
      const Status decoded = decoder->DecodeRowGroup(*f.pq, f.pq_columns, ref.row_group);
      for (int64_t k = 0; k < claim->count; ++k) {
        if (k > 0) sw = Stopwatch();
        std::unique_ptr<ParsedChunk> out = window_.FreeBlock();
        const ChunkRef& slice = order_[static_cast<size_t>(claim->seq + k)];
        out->ref = slice;
        out->block.Reset();
        out->line_too_long = false;
        out->complete = false;
        out->fatal = decoded;
        if (decoded.ok()) {
          out->complete = decoder->EvalRows(slice.row_begin, slice.row_end, f.key, f.rows_before[slice.index],
                                            config_.max_bad_rows, keep_raw, &out->block);
        }
        out->lines = slice.row_end - slice.row_begin;
        out->seconds = sw.Seconds();
        window_.Complete(claim->seq + k, std::move(out));
        if (!decoded.ok() || stop_flag_.load(std::memory_order_relaxed)) break;
      }
    }
  }

  void Fail(Status s) {
    stop_flag_.store(true);  // no point parsing further
    window_.Stop();
    assembler_.PushError(std::move(s));
  }

  // Records bad rows of a chunk; returns a non-OK Status when the pass must fail.
  Status HandleBadRows(const ParsedChunk& c) {
    const FileInfo& f = files_[c.ref.file];
    for (const BadRow& bad : c.block.bad) {
      RECTRAIN_ASSIGN_OR_RETURN(int64_t before, line_index_.LinesBefore(c.ref.file, c.ref.index));
      const int64_t line = before + bad.rel_line;
      std::string msg = internal::FormatBadRow(plan_, bad, f.path, line);
      if (config_.max_bad_rows <= 0) {
        return InvalidArgumentError(errors::StrictBadRow(msg));
      }
      ++rejected_;
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.rows_rejected = rejected_;
      }
      if (rejects_ != nullptr) {
        std::string rec = f.path + "\t" + std::to_string(line) + "\t" + msg + "\t" + bad.raw_line + "\n";
        if (std::fwrite(rec.data(), 1, rec.size(), rejects_) != rec.size() ||
            std::fflush(rejects_) != 0) {
          return UnavailableError("cannot write the rejects file " + config_.rejects_file);
        }
      }
      if (rejected_ > config_.max_bad_rows) {
        return InvalidArgumentError(
            errors::TooManyBadRows(rejected_, config_.max_bad_rows, config_.rejects_file, msg));
      }
    }
    return OkStatus();
  }

  void AssemblerLoop() {
    const int64_t n = static_cast<int64_t>(order_.size());
    const int nd = plan_.num_dense();
    const int ns = plan_.num_sparse();
    const int nm = plan_.num_multi();
    std::vector<internal::MultiList> multi(static_cast<size_t>(nm));
    for (int64_t seq = 0; seq < n; ++seq) {
      std::unique_ptr<ParsedChunk> c = window_.Await(seq);
      if (c == nullptr) return;  // stopped
      const FileInfo& f = files_[c->ref.file];
      if (!c->fatal.ok()) {
        Fail(c->fatal.WithContext("while reading " + f.path));
        return;
      }
      if (Status s = HandleBadRows(*c); !s.ok()) {
        Fail(s);
        return;
      }
      if (c->line_too_long) {  // after the chunk's earlier bad rows, which come first
        auto before = line_index_.LinesBefore(c->ref.file, c->ref.index);
        const int64_t line = (before.ok() ? *before : 0) + c->lines;
        Fail(DataLossError(errors::LineTooLong(f.path, line, kMaxLineBytes)));
        return;
      }
      if (!c->complete) return;  // stopped by the stop flag: the reader is closing
      line_index_.Record(c->ref.file, c->ref.index, c->lines);
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.bytes_read += c->ref.end - c->ref.begin;
        stats_.parse_seconds += c->seconds;
        stats_.rows_filtered += c->block.filtered;
        stats_.rows_downsampled += c->block.downsampled;
      }
      const RowBlock& b = c->block;
      // Line numbers are known for free in file order (a rank's share starting mid-file learns
      // them only by counting, which error messages do; batches then carry none); a shuffled
      // pass reports none.
      const std::string* source = options_.shuffle ? nullptr : &f.path;
      int64_t before = -1;
      if (source != nullptr && b.rows > 0) before = line_index_.KnownLinesBefore(c->ref.file, c->ref.index);
      for (int64_t r = 0; r < b.rows; ++r) {
        for (int m = 0; m < nm; ++m) {
          const internal::MultiColumn& mc = b.multi[static_cast<size_t>(m)];
          multi[static_cast<size_t>(m)] = {mc.ids.data() + mc.offsets[r], mc.offsets[r + 1] - mc.offsets[r]};
        }
        const internal::RowView row{b.labels[r], b.dense.data() + r * nd, b.ids.data() + r * ns, multi.data(),
                                    plan_.has_group ? b.group[r] : 0};
        if (!assembler_.AddRow(row, before >= 0 ? source : nullptr, before >= 0 ? before + b.rel_line[r] : 0)) return;
      }
      window_.Release(std::move(c));
    }
    if (!assembler_.Flush()) return;
    assembler_.PushEnd();
  }

  using Window = internal::OrderedWindow<ParsedChunk>;

  const DataConfig config_;
  const ReadOptions options_;
  const ParsePlan plan_;
  const internal::RowLayout layout_;
  const std::vector<FileInfo> files_;
  const std::vector<ChunkRef> order_;
  std::FILE* rejects_;

  std::atomic<bool> stop_flag_{false};  // read inside parsing loops, without a lock
  Window window_;
  internal::PrefetchQueue queue_{options_.prefetch_batches};
  internal::BatchRecycler recycler_;

  mutable std::mutex stats_mu_;
  ReaderStats stats_;  // guarded by stats_mu_

  // Assembler-thread state.
  internal::BatchAssembler assembler_;
  LineIndex line_index_;
  std::unique_ptr<internal::ReadAhead> read_ahead_;  // files on an object store only
  int64_t rejected_ = 0;

  // Consumer-thread state.
  Status latched_;
  bool finished_ = false;

  std::vector<std::thread> workers_;
  std::thread assembler_thread_;
};

// Reads the first line of a file (the header), without its newline. Sets *data_start.
Result<std::string> ReadHeaderLine(const FileInfo& f, int64_t* data_start) {
  std::string line;
  int64_t offset = 0;
  std::vector<char> buf(64 << 10);
  while (offset < f.size) {
    const int64_t n = std::min<int64_t>(f.size - offset, static_cast<int64_t>(buf.size()));
    RECTRAIN_RETURN_IF_ERROR(ReadExact(f, offset, n, buf.data()));
    const void* nl = std::memchr(buf.data(), '\n', static_cast<size_t>(n));
    if (nl != nullptr) {
      const int64_t k = static_cast<const char*>(nl) - buf.data();
      line.append(buf.data(), static_cast<size_t>(k));
      *data_start = offset + k + 1;
      return line;
    }
    line.append(buf.data(), static_cast<size_t>(n));
    offset += n;
    if (static_cast<int64_t>(line.size()) > kMaxLineBytes) {
      return DataLossError(errors::LineTooLong(f.path, 1, kMaxLineBytes));
    }
  }
  *data_start = f.size;
  return line;
}

Status ValidateOptions(const ReadOptions& o) {
  if (o.batch_size <= 0) return InvalidArgumentError("batch_size must be > 0, got " + std::to_string(o.batch_size));
  if (o.num_threads < 1 || o.num_threads > 256) {
    return InvalidArgumentError("data.num_threads must be in 1..256, got " + std::to_string(o.num_threads));
  }
  if (o.prefetch_batches < 1) {
    return InvalidArgumentError("data.prefetch_batches must be >= 1, got " + std::to_string(o.prefetch_batches));
  }
  if (o.shuffle_buffer_rows < 0) {
    return InvalidArgumentError("data.shuffle_buffer_rows must be >= 0, got " +
                                std::to_string(o.shuffle_buffer_rows));
  }
  if (o.skip_rows < 0) return InvalidArgumentError("skip_rows must be >= 0, got " + std::to_string(o.skip_rows));
  if (o.chunk_bytes < 1 || o.chunk_bytes > (int64_t{1} << 30)) {
    return InvalidArgumentError("data.chunk_bytes must be in 1..1073741824, got " + std::to_string(o.chunk_bytes));
  }
  return ValidateRankShare(o);
}

Status ValidateConfig(const DataConfig& c) {
  if (c.max_bad_rows < 0) {
    return InvalidArgumentError("data.max_bad_rows must be >= 0, got " + std::to_string(c.max_bad_rows));
  }
  if (!(c.negative_downsampling > 0 && c.negative_downsampling <= 1)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", c.negative_downsampling);
    return InvalidArgumentError(std::string("data.negative_downsampling must be in (0, 1], got ") + buf);
  }
  return OkStatus();
}

// The input files, opened, with the columns the first one names (a csv/tsv header or a Parquet
// schema; empty for formats that fix their columns).
struct OpenedInput {
  std::vector<FileInfo> files;
  std::vector<std::string> header_columns;
  std::vector<bool> list_columns;  // Parquet: which columns are lists
  bool files_name_columns = false;  // a header or a Parquet schema names them
};

// Objects in a store are opened 16 at a time (each open is a round trip); local files later, in turn.
Result<std::vector<FileInfo>> OpenRemoteFiles(const std::vector<std::string>& paths, bool parquet) {
  std::vector<FileInfo> opened(paths.size());
  if (std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return io::IsRemotePath(p); })) {
    RECTRAIN_RETURN_IF_ERROR(io::ParallelIo(static_cast<int64_t>(paths.size()), 16, [&](int64_t i) -> Status {
      if (parquet) {
        RECTRAIN_ASSIGN_OR_RETURN(opened[i].pq, io::parquet::ParquetFile::Open(paths[i]));
      } else {
        RECTRAIN_ASSIGN_OR_RETURN(opened[i].file, io::RandomAccessFile::Open(paths[i]));
      }
      return OkStatus();
    }));
  }
  return opened;
}

Status AddParquetFile(FileInfo f, OpenedInput& in) {
  if (!f.pq) {
    RECTRAIN_ASSIGN_OR_RETURN(f.pq, io::parquet::ParquetFile::Open(f.path));
  }
  if (f.pq->num_rows() == 0) return InvalidArgumentError(errors::EmptyFile(f.path, false));
  f.size = f.pq->file_size();
  f.key = HashBytes(f.path, 0x70716b6579ULL);
  if (in.files.empty()) {
    for (const io::parquet::ColumnSchema& c : f.pq->schema()) {
      if (!in.header_columns.empty() && in.header_columns.back() == c.name) continue;  // struct leaves
      in.header_columns.push_back(c.name);
      in.list_columns.push_back(c.is_list);
    }
  }
  in.files.push_back(std::move(f));
  return OkStatus();
}

// A binary file read as text would fail on its first "row" with a confusing field-count error;
// say what it is instead.
Status CheckNotBinary(const FileInfo& f, DataFormat format) {
  char magic[8] = {};
  RECTRAIN_ASSIGN_OR_RETURN(int64_t got, f.file->ReadAt(0, std::min<int64_t>(8, f.size), magic));
  if (got >= 4 && std::memcmp(magic, "PAR1", 4) == 0) {
    return InvalidArgumentError(errors::BinaryFileAsText(f.path, "Parquet file", "PAR1", format, "parquet"));
  }
  if (got == 8 && std::memcmp(magic, "RTCACHE\0", 8) == 0) {
    return InvalidArgumentError(errors::BinaryFileAsText(f.path, "rectrain sample cache", "RTCACHE", format, "cache"));
  }
  return OkStatus();
}

// Reads f's header line: the columns when it is the first file, else it must equal the first's.
Status ReadHeader(const SchemaConfig& schema, FileInfo& f, OpenedInput& in, std::string& header_line0) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string line, ReadHeaderLine(f, &f.data_start));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  f.header_lines = 1;
  if (in.files.empty()) {
    header_line0 = line;
    const char delim = schema.format == DataFormat::kTsv ? '\t' : (schema.delimiter == '\t' ? ',' : schema.delimiter);
    in.header_columns = internal::SplitHeader(line, delim, true);
  } else if (line != header_line0) {
    return InvalidArgumentError("the header of " + f.path + " (\"" + errors::Snippet(line) +
                                "\") differs from the header of " + in.files[0].path + " (\"" +
                                errors::Snippet(header_line0) + "\"); all files must share one header");
  }
  if (f.data_start >= f.size) return InvalidArgumentError(errors::EmptyFile(f.path, true));
  return OkStatus();
}

Result<OpenedInput> OpenInput(const SchemaConfig& schema, const std::vector<std::string>& paths) {
  const bool parquet = schema.format == DataFormat::kParquet;
  const bool header = (schema.format == DataFormat::kCsv || schema.format == DataFormat::kTsv) && schema.header;
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<FileInfo> opened, OpenRemoteFiles(paths, parquet));
  OpenedInput in;
  in.files_name_columns = parquet || header;
  std::string header_line0;
  for (size_t i = 0; i < paths.size(); ++i) {
    FileInfo f = std::move(opened[i]);
    f.path = paths[i];
    if (parquet) {
      RECTRAIN_RETURN_IF_ERROR(AddParquetFile(std::move(f), in));
      continue;
    }
    if (!f.file) {
      RECTRAIN_ASSIGN_OR_RETURN(f.file, io::RandomAccessFile::Open(f.path));
    }
    f.size = f.file->size();
    if (f.size == 0) return InvalidArgumentError(errors::EmptyFile(f.path, false));
    RECTRAIN_RETURN_IF_ERROR(CheckNotBinary(f, schema.format));
    if (header) {
      RECTRAIN_RETURN_IF_ERROR(ReadHeader(schema, f, in, header_line0));
    }
    in.files.push_back(std::move(f));
  }
  return in;
}

// The plan of the columns, with the standardize / quantiles statistics filled in (frozen ones, or
// from a stats pass over the files).
Result<ParsePlan> PlanInput(const DataConfig& config, const ReadOptions& options, const OpenedInput& in,
                            bool stats_pass) {
  Result<ParsePlan> plan = internal::BuildParsePlan(config, in.header_columns, in.list_columns, stats_pass);
  if (!plan.ok()) {
    if (in.files_name_columns) return plan.status().WithContext("schema of " + in.files[0].path);
    return plan.status();
  }
  if (!stats_pass && plan->NeedsStats()) {
    Result<std::vector<FeatureStats>> stats = config.feature_stats.has_value()
                                                  ? internal::CheckFrozenStats(*plan, *config.feature_stats)
                                                  : internal::ComputeFeatureStats(config, options, *plan);
    if (!stats.ok()) return stats.status().WithContext("while computing feature statistics (standardize, quantiles)");
    internal::FillStats(&plan.value(), *stats);
  }
  return plan;
}

// A Parquet file's chunks: each row group in slices of ParquetSliceRows rows.
Status AddParquetChunks(const ParsePlan& plan, const ReadOptions& options, int file_index, FileInfo& f,
                        std::vector<ChunkRef>& order) {
  RECTRAIN_ASSIGN_OR_RETURN(f.pq_columns, internal::MapParquetColumns(plan, *f.pq));
  f.rows_before.assign(1, 0);
  int64_t file_row = 0;
  for (int rg = 0; rg < f.pq->num_row_groups(); ++rg) {
    const int64_t rg_rows = f.pq->row_group_num_rows(rg);
    const size_t group_start = order.size();
    for (int64_t a = 0; a < rg_rows || (a == 0 && rg_rows == 0); a += ParquetSliceRows(options)) {
      ChunkRef c;
      c.file = file_index;
      c.index = static_cast<int64_t>(f.rows_before.size()) - 1;
      c.row_group = rg;
      c.row_begin = a;
      c.row_end = std::min(rg_rows, a + ParquetSliceRows(options));
      // Nominal bytes (for ReaderStats::bytes_read): the file's share of these rows.
      c.begin = f.size * (file_row + c.row_begin) / f.pq->num_rows();
      c.end = f.size * (file_row + c.row_end) / f.pq->num_rows();
      f.rows_before.push_back(file_row + c.row_end);
      order.push_back(c);
      if (rg_rows == 0) break;
    }
    order[group_start].group_size = static_cast<int64_t>(order.size() - group_start);
    file_row += rg_rows;
  }
  f.num_chunks = static_cast<int64_t>(f.rows_before.size()) - 1;
  return OkStatus();
}

// Every file's chunks in file order (text: chunk_bytes pieces; Parquet: row-group slices).
Result<std::vector<ChunkRef>> PlanChunks(const ParsePlan& plan, const ReadOptions& options, std::vector<FileInfo>& files) {
  std::vector<ChunkRef> order;
  for (size_t i = 0; i < files.size(); ++i) {
    FileInfo& f = files[i];
    f.first_chunk = static_cast<int64_t>(order.size());
    if (f.pq) {
      RECTRAIN_RETURN_IF_ERROR(AddParquetChunks(plan, options, static_cast<int>(i), f, order));
      continue;
    }
    const int64_t data = f.size - f.data_start;
    f.num_chunks = (data + options.chunk_bytes - 1) / options.chunk_bytes;
    for (int64_t k = 0; k < f.num_chunks; ++k) {
      ChunkRef c;
      c.file = static_cast<int>(i);
      c.index = k;
      c.begin = f.data_start + k * options.chunk_bytes;
      c.end = std::min(f.size, c.begin + options.chunk_bytes);
      order.push_back(c);
    }
  }
  return order;
}

// The pass's units (a text chunk, or the slices of one Parquet row group, kept together and in
// order) weighted by bytes (text) or rows (Parquet), ordered and shared out by the planner.
std::vector<ChunkRef> OrderPass(std::vector<ChunkRef> order, const std::vector<FileInfo>& files, const ReadOptions& options) {
  if (!options.shuffle && options.world <= 1) return order;
  std::vector<std::pair<int64_t, int64_t>> groups;  // [first, first + size)
  std::vector<int64_t> weights;
  for (int64_t i = 0; i < static_cast<int64_t>(order.size()); i += order[i].group_size) {
    groups.emplace_back(i, order[i].group_size);
    const ChunkRef& c = order[i];
    weights.push_back(c.row_group >= 0 ? files[c.file].pq->row_group_num_rows(c.row_group) : c.end - c.begin);
  }
  std::vector<ChunkRef> planned;
  planned.reserve(order.size());
  for (int64_t g : PlanPassUnits(weights, options.shuffle, options.seed, options.epoch, options.rank, options.world)) {
    const auto& [first, size] = groups[static_cast<size_t>(g)];
    planned.insert(planned.end(), order.begin() + first, order.begin() + first + size);
  }
  return planned;
}

Result<std::unique_ptr<BatchReader>> OpenImpl(const DataConfig& config_in, const ReadOptions& options,
                                              bool stats_pass) {
  RECTRAIN_RETURN_IF_ERROR(ValidateOptions(options));
  RECTRAIN_RETURN_IF_ERROR(ValidateConfig(config_in));
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> paths, io::ExpandPaths(config_in.files));
  DataConfig config = config_in;
  RECTRAIN_ASSIGN_OR_RETURN(config.schema.format, internal::ResolveFormat(config_in.schema.format, paths));
  RECTRAIN_ASSIGN_OR_RETURN(OpenedInput in, OpenInput(config.schema, paths));
  RECTRAIN_ASSIGN_OR_RETURN(ParsePlan plan, PlanInput(config, options, in, stats_pass));
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<ChunkRef> order, PlanChunks(plan, options, in.files));
  order = OrderPass(std::move(order), in.files, options);
  RECTRAIN_RETURN_IF_ERROR(internal::CheckReaderBuffersFit(options, MakeLayout(plan), -1));
  std::FILE* rejects = nullptr;
  if (!config.rejects_file.empty() && !stats_pass) {
    rejects = std::fopen(config.rejects_file.c_str(), "w");
    if (rejects == nullptr) {
      return ErrnoToStatus(errno, "cannot create data.rejects_file " + config.rejects_file);
    }
  }
  return std::unique_ptr<BatchReader>(new TextBatchReader(
      config, options, std::move(plan), std::move(in.files), std::move(order), rejects));
}

}  // namespace

Result<RowLayout> BatchReader::row_layout() const {
  return FailedPreconditionError("this reader does not parse files (a sample cache); open the data files with data.cache: off");
}

namespace internal {
Result<DataFormat> ResolveFormat(DataFormat format, const std::vector<std::string>& paths) {
  int parquet = 0;
  for (const std::string& p : paths) {
    if (p.size() >= 8 && p.compare(p.size() - 8, 8, ".parquet") == 0) ++parquet;
  }
  if (format != DataFormat::kAuto) return format;
  if (parquet == 0) return DataFormat::kCriteo;
  if (parquet == static_cast<int>(paths.size())) return DataFormat::kParquet;
  return InvalidArgumentError("data.format auto: " + std::to_string(parquet) + " of " +
                              std::to_string(paths.size()) +
                              " files end in .parquet; read Parquet and text files in separate runs");
}

Result<std::unique_ptr<BatchReader>> OpenParsingReader(const DataConfig& config,
                                                       const ReadOptions& options) {
  return OpenImpl(config, options, /*stats_pass=*/false);
}
Result<std::unique_ptr<BatchReader>> OpenStatsPassReader(const DataConfig& config,
                                                         const ReadOptions& options) {
  return OpenImpl(config, options, /*stats_pass=*/true);
}
}  // namespace internal

}  // namespace rectrain::data
