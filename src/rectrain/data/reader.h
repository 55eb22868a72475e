// rectrain/data/reader.h: turns sample files into Batches. This is the contract between data/
// and train/: the trainer opens a BatchReader per pass over a split and calls Next() until it
// returns an empty optional.
//
// Strict by default: the first malformed row (wrong column count, non-numeric dense value,
// label not 0/1) fails Next() with InvalidArgument/DataLoss naming file:line:column, the
// offending text, what was expected, and how to relax it (data.max_bad_rows). With
// max_bad_rows > 0 bad rows are counted (ReaderStats::rows_rejected), optionally written to
// the rejects file, and the run fails once the count exceeds the limit. Nothing is dropped
// silently. An empty or missing file, or a glob matching nothing, is NotFound/InvalidArgument.
//
// Parsing is chunked and parallel (data.num_threads workers) and runs ahead of the consumer
// through a bounded prefetch queue; errors from workers are latched and returned by the next
// Next() call. With shuffle the order of rows depends only on (seed, epoch), so runs are
// deterministic regardless of thread timing; the validation split is read in file order.
//
// Formats (docs/formats/criteo.md, docs/data.md): criteo = TSV label, I1..I<n>, C1..C<m>;
// csv / tsv = delimited text with the columns named by a header line or schema.columns
// ("quoted" fields allowed); libsvm / libffm = "label index:value ..." / "label
// field:index:value ..." (docs/formats/libsvm.md). Batch::source / first_line give the first row's file and line in
// file order; in a shuffled pass rows come from many places, so source is "" and first_line 0.
//
// Thread safety: a BatchReader is used by one consumer thread; it owns its worker threads and
// joins them in its destructor (cancellation is prompt even when the queue is full).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/data/batch.h"
#include "rectrain/data/format.h"
#include "rectrain/data/transform.h"

namespace rectrain::data {

class ReaderBufferPool;  // data/cache.h

// Column layout of text input.
struct SchemaConfig {
  DataFormat format = DataFormat::kCriteo;  // data/format.h
  int criteo_dense = 13;           // criteo: number of integer columns (seed shape: 50)
  int criteo_sparse = 26;          // criteo: number of categorical columns
  char delimiter = '\t';           // csv: ',' unless set
  bool header = false;             // csv: first line names the columns
  std::string label = "label";     // csv/parquet: label column name
  std::vector<std::string> dense;  // csv/parquet: dense feature names, in order
  std::vector<std::string> sparse; // csv/parquet: categorical feature names, in order
  std::string group_key;           // optional column for GAUC (its raw text is hashed)
  std::vector<std::string> columns;  // csv without header: every column's name, in order
};

struct DenseTransformConfig {
  float fill = 0.0f;         // value for a missing dense field (before log1p)
  bool log1p = true;         // x -> log(1 + max(x, 0))
  float clip_min = 0.0f;     // applied before log1p; clip_max <= clip_min disables the max
  float clip_max = 0.0f;
};

struct DataConfig {
  std::vector<std::string> files;  // paths or globs, expanded and sorted
  SchemaConfig schema;
  DenseTransformConfig dense;
  uint64_t hash_seed = 0;          // field-aware hashing: id = Hash(field index, token, seed)
  int64_t max_bad_rows = 0;        // 0 = strict
  std::string rejects_file;        // optional: every rejected row with its reason
  // Transforms (data/transform.h, docs/data.md): feature (or label column) -> transform spec,
  // e.g. {"age": "fill(30) | log1p"}. A feature with a spec ignores `dense` (the global default
  // transform) except dense.fill.
  std::map<std::string, std::string> transforms;
  std::vector<std::string> filters;   // row filters: "COL not null", "COL in [a, b]", ...
  double negative_downsampling = 1.0; // keep a negative row with this probability, in (0, 1]
  // Files the stats pass (standardize, quantiles) reads; empty = `files`. The trainer sets it
  // to data.train so that validation rows are transformed with the training statistics.
  std::vector<std::string> stats_files;
  // Where computed statistics (and the binary cache) are kept; "" = $TMPDIR/rectrain-cache.
  std::string cache_dir;
  // The sample cache (data/cache.h; data/format.h). Format kCache reads cache files as input.
  CacheMode cache = CacheMode::kAuto;
  // Frozen statistics (an exported serving model's, data/row_parser.h): when set, the
  // standardize / quantiles steps use these, in FeatureStatistics() order, instead of a stats pass.
  std::optional<std::vector<FeatureStats>> feature_stats;
};

struct ReadOptions {
  int64_t batch_size = 4096;
  bool shuffle = false;
  int64_t shuffle_buffer_rows = 1 << 20;
  uint64_t seed = 0;
  int64_t epoch = 0;               // shuffle order depends on (seed, epoch)
  int num_threads = 1;             // parse workers
  int prefetch_batches = 4;        // bounded queue depth
  int64_t skip_rows = 0;           // resume: rows of this pass already consumed
  // Files are read and parsed in chunks of about this many bytes (split at
  // newlines); the unit of parallelism and of chunk-order shuffling. 1 .. 1 GiB. 2 MiB measured
  // 3x faster than 8-16 MiB (smaller parsed blocks are reused from the heap instead of
  // touching fresh pages; see docs/data.md).
  int64_t chunk_bytes = 2 << 20;
  // Distributed jobs (data/pass_plan.h): this process reads the units of the pass that
  // PlanPassUnits gives rank `rank` of `world`. world 1 reads everything.
  int rank = 0;
  int world = 1;
  // Buffers kept between readers (the sample cache's decoded blocks, scratch, batches, shuffle
  // slots): a reader given a pool starts with the pages the previous reader of that pool gave back,
  // instead of a zero-fill and a page fault per 4 KiB (a third of a cached file-order pass). One
  // pool per run (train/session.cc makes it); null = the reader allocates its own. See
  // MakeReaderBufferPool (data/cache.h).
  std::shared_ptr<ReaderBufferPool> buffer_pool;
  // Files on an object store: at most this many bytes are fetched ahead of the parser (the
  // window starts at 4 chunks and doubles while reads wait on the network; docs/storage.md).
  int64_t read_ahead_bytes = int64_t{64} << 20;
};

struct ReaderStats {
  int64_t rows_read = 0;           // rows parsed successfully and delivered
  int64_t rows_rejected = 0;
  int64_t bytes_read = 0;
  int64_t files = 0;
  double parse_seconds = 0;        // summed over workers (CPU time in parsing)
  double wait_seconds = 0;         // consumer time blocked in Next()
  int64_t rows_skipped = 0;        // rows dropped by ReadOptions::skip_rows
  int64_t rows_filtered = 0;       // rows dropped by DataConfig::filters
  int64_t rows_downsampled = 0;    // negatives dropped by negative_downsampling
  int64_t queue_depth = 0;         // batches ready in the prefetch queue when Stats() was called
};

// What parsing a single row as a reader does needs beyond the config (data/row_parser.h): the
// input's column names when the files give them (a csv/tsv header; a Parquet schema), and the
// statistics of the standardize / quantiles steps (dense features first, then sparse, in schema
// order), as computed from data.train.
struct RowLayout {
  DataFormat format = DataFormat::kCriteo;  // resolved: never kAuto
  std::vector<std::string> header;  // empty when the format fixes the columns (criteo, libsvm)
  std::vector<FeatureStats> stats;
};

class BatchReader {
 public:
  virtual ~BatchReader() = default;
  // Next batch, or std::nullopt at the end of the pass, or an error (see top comment).
  // The last batch may be smaller than batch_size.
  virtual Result<std::optional<Batch>> Next() = 0;
  virtual ReaderStats Stats() const = 0;
  // Optional: hands a consumed Batch back so its buffers are reused for a later batch instead
  // of allocating fresh memory. The caller must not use `batch` afterwards.
  virtual void Recycle(Batch&& batch) { (void)batch; }
  // "sample cache PATH (...)" when this reader reads one, else "".
  virtual std::string cache_note() const { return {}; }
  // Names of the dense and sparse fields in Batch order.
  virtual const std::vector<std::string>& dense_names() const = 0;
  virtual const std::vector<std::string>& sparse_names() const = 0;
  // The row layout of a reader that parses files; a sample-cache reader has none
  // (FailedPrecondition: open the files with data.cache: off).
  virtual Result<RowLayout> row_layout() const;
};

// Opens the files and checks them up front (missing/empty file, glob matching nothing, directory,
// csv header vs schema); parsing starts at once on background threads. Row errors surface in
// Next(). Errors name the file or the option at fault.
Result<std::unique_ptr<BatchReader>> OpenBatchReader(const DataConfig& config,
                                                     const ReadOptions& options);

// Field-aware id of a categorical token; stable (checkpoints store these ids):
// HashBytes(token, DeriveSeed(hash_seed, field_index)). A missing (empty) token is
// FeatureId(field_index, "", hash_seed).
uint64_t FeatureId(int field_index, std::string_view token, uint64_t hash_seed);

}  // namespace rectrain::data
