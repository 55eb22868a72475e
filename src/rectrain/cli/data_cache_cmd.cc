// `rectrain data cache CONFIG` (build the keyed sample cache of a config's splits, which train,
// eval and tune trials then read with data.cache: auto) and `rectrain data convert INPUT...
// --to cache|tsv --out PATH` (any supported input format to one cache file, readable as input
// with a *.rtc path, or to a TSV that reads back into the same batches with the config snippet
// it prints). The work is data::BuildCache (data/cache.h) and data::ExportTsv
// (data/tsv_export.h); this file only maps flags.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/tsv_export.h"

namespace rectrain::cli {
namespace {

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (!s.empty() && pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    out.push_back(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

void PrintInfo(const std::string& what, const data::CacheInfo& info) {
  const double mb = static_cast<double>(info.file_bytes) / 1e6;
  if (!info.built) {
    std::printf("%s: up to date: %s (%lld rows, %.1f MB)\n", what.c_str(), info.path.c_str(),
                static_cast<long long>(info.rows), mb);
    return;
  }
  std::printf("%s: wrote %s: %lld rows in %lld blocks, %.1f MB (%.1f MB of batches, %.1f MB of input) in %.1f s",
              what.c_str(), info.path.c_str(), static_cast<long long>(info.rows), static_cast<long long>(info.blocks),
              mb, static_cast<double>(info.raw_bytes) / 1e6, static_cast<double>(info.source_bytes) / 1e6,
              info.seconds);
  if (info.rows_rejected + info.rows_filtered + info.rows_downsampled > 0) {
    std::printf("; rows rejected %lld, filtered %lld, downsampled %lld", static_cast<long long>(info.rows_rejected),
                static_cast<long long>(info.rows_filtered), static_cast<long long>(info.rows_downsampled));
  }
  std::printf("\n");
}

}  // namespace

int RunDataCache(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data cache";
  std::string config_path, split = "all", codec = "lz4";
  std::vector<std::string> sets;
  int64_t block_rows = data::CacheWriteOptions{}.block_rows, threads = 0;
  bool force = false;
  FlagParser flags(kCmd, "CONFIG [--split train|valid|all] [--set KEY=VALUE]... [--codec lz4|zstd|none] [--force]",
                   "Transforms the config's data once into the binary sample cache (docs/data.md\n"
                   "\"Sample cache\") in data.cache_dir, keyed by the files' fingerprints and every\n"
                   "setting that changes rows. train, eval and tune trials then read it (data.cache: auto).");
  flags.Positional("CONFIG", &config_path, /*required=*/true, "the training config (YAML)");
  flags.Repeated("set", &sets, "override a config key, e.g. --set data.cache_dir=/fast/disk");
  flags.String("split", &split, "train | valid | all (default: all splits the config names)");
  flags.String("codec", &codec, "lz4 (default) | zstd | none");
  flags.Int("block-rows", &block_rows, "rows per block (default 16384)");
  flags.Bool("force", &force, "rebuild even when a matching cache exists");
  flags.Int("threads", &threads, "parse threads (default: data.reader_threads)");
  if (Status s = flags.Parse(args); !s.ok()) return ReportError(kCmd, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  if (split != "train" && split != "valid" && split != "all") {
    return ReportError(kCmd, InvalidArgumentError("--split must be train, valid or all, got \"" + split + "\""));
  }
  auto loaded = config::LoadTrainConfig(config_path, sets);
  if (!loaded.ok()) return ReportError(kCmd, loaded.status());
  const config::TrainConfig& c = loaded->config;
  if (split == "valid" && c.valid_files.empty()) return ReportError(kCmd, InvalidArgumentError("data.valid is empty"));
  data::CacheWriteOptions w;
  w.codec = codec;
  w.block_rows = block_rows;
  w.force = force;
  data::ReadOptions ro = c.read;
  if (threads > 0) ro.num_threads = static_cast<int>(threads);
  // The splits exactly as the trainer reads them (trainer.cc): validation rows are never
  // downsampled, so its key differs from the training split's.
  for (const std::string s : {"train", "valid"}) {
    if (split != "all" && split != s) continue;
    data::DataConfig d = c.data;
    d.files = s == "train" ? c.train_files : c.valid_files;
    if (d.files.empty()) continue;
    if (s == "valid") d.negative_downsampling = 1.0;
    auto info = data::BuildCache(d, ro, w);
    if (!info.ok()) return ReportError(kCmd, info.status().WithContext("data." + s));
    PrintInfo("data." + s, *info);
  }
  return 0;
}

int RunDataConvert(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data convert";
  // INPUTs are every argument that is not a flag or a flag's value.
  static const std::vector<std::string> kBoolFlags = {"--header", "--force", "--help", "-h"};
  std::vector<std::string> inputs, flag_args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("-", 0) == 0 && a != "-") {
      flag_args.push_back(a);
      const bool boolean = a.find('=') != std::string::npos ||
                           std::find(kBoolFlags.begin(), kBoolFlags.end(), a) != kBoolFlags.end();
      if (!boolean && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      inputs.push_back(a);
    }
  }
  std::string to, out, config_path, format = "auto", delimiter, label = "label", columns, dense, sparse,
                                    codec = "lz4";
  std::vector<std::string> sets;
  bool header = false;
  int64_t block_rows = data::CacheWriteOptions{}.block_rows, threads = 1;
  FlagParser flags(kCmd, "INPUT... --to cache|tsv --out PATH [--config CONFIG [--set KEY=VALUE]...] [schema flags]",
                   "Converts sample files of any supported format (criteo, csv/tsv, parquet, libsvm,\n"
                   "libffm, .rtc) into one binary sample cache file (--to cache, docs/formats/cache.md)\n"
                   "or one TSV of transformed rows (--to tsv, docs/data.md \"TSV export\"), transformed\n"
                   "as the config says (or with the schema flags and the default transforms). A cache is\n"
                   "read as input wherever its path ends in .rtc (data.train: out.rtc); for a TSV the\n"
                   "command prints the config snippet that reads it back into the same batches.");
  flags.String("to", &to, "cache | tsv (see docs/cli.md)");
  flags.String("out", &out, "the output file (PATH.rtc or PATH.tsv)");
  flags.String("config", &config_path, "take schema and transforms from this training config");
  flags.Repeated("set", &sets, "override a config key (with --config)");
  flags.String("format", &format, "without --config: auto | criteo | csv | tsv | parquet");
  flags.Bool("header", &header, "csv/tsv: the first line names the columns");
  flags.String("delimiter", &delimiter, "csv delimiter (default ,)");
  flags.String("columns", &columns, "csv/tsv without header: comma-separated column names");
  flags.String("label", &label, "the label column (default label)");
  flags.String("dense", &dense, "csv/tsv/parquet: comma-separated dense feature columns");
  flags.String("sparse", &sparse, "csv/tsv/parquet: comma-separated categorical feature columns");
  flags.String("codec", &codec, "lz4 (default) | zstd | none");
  flags.Int("block-rows", &block_rows, "rows per block (default 16384)");
  flags.Int("threads", &threads, "parse threads (default 1)");
  if (Status s = flags.Parse(flag_args); !s.ok()) return ReportError(kCmd, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  if (inputs.empty()) return ReportError(kCmd, InvalidArgumentError("no INPUT files given"));
  if (to != "cache" && to != "tsv") {
    return ReportError(kCmd, InvalidArgumentError(to.empty() ? std::string("--to is required: --to cache or --to tsv")
                                                             : "--to " + to + " is not supported; use --to cache or --to tsv"));
  }
  if (out.empty()) return ReportError(kCmd, InvalidArgumentError("--out PATH is required"));
  if (to == "tsv" && (codec != "lz4" || block_rows != data::CacheWriteOptions{}.block_rows)) {
    return ReportError(kCmd, InvalidArgumentError("--codec and --block-rows apply to --to cache, not --to tsv"));
  }
  data::DataConfig d;
  data::ReadOptions ro;
  if (!config_path.empty()) {
    if (header || !delimiter.empty() || !columns.empty() || !dense.empty() || !sparse.empty() || format != "auto") {
      return ReportError(kCmd, InvalidArgumentError("schema flags and --config exclude each other; "
                                                    "change the config with --set data.KEY=VALUE instead"));
    }
    auto loaded = config::LoadTrainConfig(config_path, sets);
    if (!loaded.ok()) return ReportError(kCmd, loaded.status());
    d = loaded->config.data;
    ro = loaded->config.read;
  } else {
    if (!sets.empty()) return ReportError(kCmd, InvalidArgumentError("--set needs --config"));
    d.schema.format = format;
    d.schema.header = header;
    if (!delimiter.empty()) d.schema.delimiter = delimiter == "\\t" || delimiter == "tab" ? '\t' : delimiter[0];
    if (format == "csv" && delimiter.empty()) d.schema.delimiter = ',';
    d.schema.label = label;
    d.schema.columns = SplitList(columns);
    d.schema.dense = SplitList(dense);
    d.schema.sparse = SplitList(sparse);
  }
  d.files = inputs;  // standardize/quantiles statistics: the config's data.train, else the inputs
  d.cache = "off";
  ro.num_threads = static_cast<int>(threads);
  if (to == "tsv") {
    // In file order, as the cache is built: the TSV's rows are the input's, transformed.
    ro.shuffle = false;
    ro.skip_rows = 0;
    auto reader = data::OpenBatchReader(d, ro);
    if (!reader.ok()) return ReportError(kCmd, reader.status());
    auto tsv = data::ExportTsv(reader->get(), out);
    if (!tsv.ok()) return ReportError(kCmd, tsv.status());
    const data::ReaderStats st = (*reader)->Stats();
    std::printf("convert: wrote %s: %lld rows, %zu dense, %zu sparse (%d multi-valued)%s, %.1f MB",
                tsv->path.c_str(), static_cast<long long>(tsv->rows), (*reader)->dense_names().size(),
                (*reader)->sparse_names().size(), tsv->multi_valued, tsv->has_group ? ", group key" : "",
                static_cast<double>(tsv->bytes) / 1e6);
    if (st.rows_rejected + st.rows_filtered + st.rows_downsampled > 0) {
      std::printf("; rows rejected %lld, filtered %lld, downsampled %lld", static_cast<long long>(st.rows_rejected),
                  static_cast<long long>(st.rows_filtered), static_cast<long long>(st.rows_downsampled));
    }
    std::printf("\n# Read it back into the same batches with this config (docs/data.md \"TSV export\"):\n%s",
                tsv->yaml.c_str());
    return 0;
  }
  data::CacheWriteOptions w;
  w.codec = codec;
  w.block_rows = block_rows;
  auto info = data::BuildCache(d, ro, w, out);
  if (!info.ok()) return ReportError(kCmd, info.status());
  PrintInfo("convert", *info);
  return 0;
}

}  // namespace rectrain::cli
