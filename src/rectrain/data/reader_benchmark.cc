// Reader and generator throughput in MB/s of Criteo-format text.
//   BM_ParseLines      the parse + transform core on one thread, file already in memory
//   BM_ReadCriteo/T/C  a full BatchReader pass (pread, T parse workers, C MiB chunks, batches of 4096)
//   BM_ReadCriteoShuffled/T  the same, shuffled (1M-row shuffle buffer, a new epoch each pass)
//   BM_Generate/T      GenerateDataset with T threads (criteo shape)
//   BM_ReadCache/T/S   the same rows from the binary sample cache (built once from the input;
//                      T decode workers, S = 1: shuffled blocks + 1M-row shuffle buffer), batches
//                      of 4096; compare rows_per_cpu_s with BM_ReadCriteo's
// The input (criteo shape, 200k rows, ~45 MB) is generated once into $TMPDIR, or taken from
// $RECTRAIN_BENCH_INPUT (a criteo-format file that is left in place).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include "rectrain/data/cache.h"
#include "rectrain/data/generator.h"
#include "rectrain/data/internal/text_parser.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

// CPU seconds of the whole process (all threads): the machines are shared, so MB per CPU-second
// ("per core") is steadier than wall-clock MB/s.
double ProcessCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Reads one pass to its end (or first error), recycling every batch; the reader's stats after it.
ReaderStats DrainPass(BatchReader& reader) {
  while (true) {
    auto b = reader.Next();
    if (!b.ok() || !b->has_value()) break;
    benchmark::DoNotOptimize((*b)->labels.data());
    reader.Recycle(std::move(**b));
  }
  return reader.Stats();
}

const std::string& InputFile() {
  // Leaked on purpose: the atexit hook below runs after static destructors would have.
  static const std::string& path = *new std::string([] {
    if (const char* given = std::getenv("RECTRAIN_BENCH_INPUT")) return std::string(given);
    const char* tmp = std::getenv("TMPDIR");
    std::string p = std::string(tmp ? tmp : "/tmp") + "/rectrain_reader_bench_" + std::to_string(::getpid()) + ".tsv";
    GenerateConfig c;
    c.out = p;
    c.rows = 200000;
    c.seed = 1;
    c.num_threads = 2;
    auto r = GenerateDataset(c);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::abort();
    }
    std::atexit([] {
      if (std::getenv("RECTRAIN_BENCH_INPUT")) return;
      std::filesystem::remove(InputFile());
      std::filesystem::remove(InputFile() + ".prob");
    });
    return p;
  }());
  return path;
}

void BM_ParseLines(benchmark::State& state) {
  const std::string text = io::ReadFileToString(InputFile()).value();
  DataConfig config;
  auto plan = internal::BuildParsePlan(config, {});
  internal::LineParser parser(&plan.value());
  internal::RowBlock block;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    block.Reset();
    size_t pos = 0;
    int64_t line = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      if (block.rows == 8192) block.Reset();
      parser.ParseLine(std::string_view(text.data() + pos, nl - pos), ++line, false, &block);
      pos = nl + 1;
    }
    benchmark::DoNotOptimize(block.ids.data());
  }
  state.counters["MB_per_cpu_s"] = static_cast<double>(state.iterations()) *
                                   static_cast<double>(text.size()) / 1e6 / (ProcessCpuSeconds() - cpu0);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseLines)->Unit(benchmark::kMillisecond)->UseRealTime();

// A TSV pass (file order, or shuffled with the default 1M-row shuffle buffer, as training reads).
void ReadCriteo(benchmark::State& state, int threads, int64_t chunk_mib, bool shuffle) {
  DataConfig config;
  config.files = {InputFile()};
  config.cache = CacheMode::kOff;
  ReadOptions opt;
  opt.num_threads = threads;
  opt.batch_size = 4096;
  opt.shuffle = shuffle;
  if (chunk_mib > 0) opt.chunk_bytes = chunk_mib << 20;
  int64_t bytes = 0, rows = 0;
  double wait = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    const ReaderStats st = DrainPass(*OpenBatchReader(config, opt).value());
    bytes += st.bytes_read;
    rows += st.rows_read;
    wait += st.wait_seconds;
    ++opt.epoch;
  }
  const double cpu = ProcessCpuSeconds() - cpu0;
  state.SetBytesProcessed(bytes);
  state.counters["MB_per_cpu_s"] = static_cast<double>(bytes) / 1e6 / cpu;
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["rows_per_cpu_s"] = static_cast<double>(rows) / cpu;
  state.counters["wait_s"] = wait / static_cast<double>(state.iterations());
}
void BM_ReadCriteo(benchmark::State& state) {
  ReadCriteo(state, static_cast<int>(state.range(0)), state.range(1), false);
}
// Args: parse threads, chunk MiB (0 = the default).
BENCHMARK(BM_ReadCriteo)
    ->Args({1, 0})->Args({2, 0})->Args({1, 1})->Args({1, 8})->Args({1, 16})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The same rows as Parquet (RECTRAIN_BENCH_PARQUET; tests/parquet_fixtures/make_criteo_parquet.mjs
// writes it from the criteo TSV: snappy, dictionary-encoded categoricals) into the same Batches.
void BM_ReadParquet(benchmark::State& state) {
  const char* path = std::getenv("RECTRAIN_BENCH_PARQUET");
  if (path == nullptr) {
    state.SkipWithError("set RECTRAIN_BENCH_PARQUET to a criteo-shape Parquet file");
    return;
  }
  DataConfig config;
  config.files = {path};
  config.schema.format = DataFormat::kParquet;
  for (int i = 1; i <= 13; ++i) config.schema.dense.push_back("I" + std::to_string(i));
  for (int i = 1; i <= 26; ++i) config.schema.sparse.push_back("C" + std::to_string(i));
  ReadOptions opt;
  opt.num_threads = static_cast<int>(state.range(0));
  opt.batch_size = 4096;
  int64_t rows = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    rows += DrainPass(*OpenBatchReader(config, opt).value()).rows_read;
  }
  const double cpu = ProcessCpuSeconds() - cpu0;
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["rows_per_cpu_s"] = static_cast<double>(rows) / cpu;
}
BENCHMARK(BM_ReadParquet)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Arg: parse threads. Compare with BM_ReadCache/T/1.
void BM_ReadCriteoShuffled(benchmark::State& state) {
  ReadCriteo(state, static_cast<int>(state.range(0)), 0, true);
}
BENCHMARK(BM_ReadCriteoShuffled)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The cache of InputFile(), built once (removed at exit).
const std::string& CacheFile() {
  static const std::string& path = *new std::string([] {
    DataConfig config;
    config.files = {InputFile()};
    config.cache = CacheMode::kOff;
    ReadOptions ro;
    ro.num_threads = 2;
    const std::string p = InputFile() + ".rtc";
    auto info = BuildCache(config, ro, CacheWriteOptions{}, p);
    if (!info.ok()) {
      std::fprintf(stderr, "%s\n", info.status().ToString().c_str());
      std::abort();
    }
    std::atexit([] { std::filesystem::remove(InputFile() + ".rtc"); });
    return p;
  }());
  return path;
}

void BM_ReadCache(benchmark::State& state) {
  const std::string& path = CacheFile();
  ReadOptions opt;
  opt.num_threads = static_cast<int>(state.range(0));
  opt.shuffle = state.range(1) != 0;
  opt.batch_size = 4096;
  opt.buffer_pool = MakeReaderBufferPool();  // as a training run: each pass reuses the last one's pages
  int64_t rows = 0;
  double wait = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    const ReaderStats st = DrainPass(*OpenCacheReader({path}, opt).value());
    rows += st.rows_read;
    wait += st.wait_seconds;
    ++opt.epoch;
  }
  const double cpu = ProcessCpuSeconds() - cpu0;
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["rows_per_cpu_s"] = static_cast<double>(rows) / cpu;
  state.counters["wait_s"] = wait / static_cast<double>(state.iterations());
}
// Args: decode threads, shuffle.
BENCHMARK(BM_ReadCache)
    ->Args({1, 0})->Args({2, 0})->Args({1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_Generate(benchmark::State& state) {
  const std::string out = InputFile() + ".gen.tsv";
  GenerateConfig c;
  c.out = out;
  c.rows = 100000;
  c.num_threads = static_cast<int>(state.range(0));
  int64_t bytes = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) bytes += GenerateDataset(c).value().bytes;
  state.counters["MB_per_cpu_s"] = static_cast<double>(bytes) / 1e6 / (ProcessCpuSeconds() - cpu0);
  state.SetBytesProcessed(bytes);
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".prob");
}
BENCHMARK(BM_Generate)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rectrain::data
