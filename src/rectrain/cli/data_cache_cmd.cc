// `rectrain data cache CONFIG` (build the keyed sample cache of a config's splits, which train,
// eval and tune trials then read with data.cache: auto) and `rectrain data convert INPUT...
// --to cache|tsv|parquet --out PATH` (any supported input format to one cache file, readable as
// input with a *.rtc path; to a TSV of transformed rows; or to Parquet of the raw columns, one
// file or parts of a target size; TSV and Parquet read back into the same batches with the
// config snippet it prints). The work is data::BuildCache (data/cache.h), data::ExportTsv
// (data/tsv_export.h) and data::ExportParquet (data/parquet_export.h); this file only maps flags.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/config/train_config.h"
#include "rectrain/config/binder.h"
#include "rectrain/data/cache.h"
#include "rectrain/data/parquet_export.h"
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
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
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

namespace {

// The flags of `data convert` and what they say.
struct ConvertArgs {
  std::vector<std::string> inputs;
  std::string to, out, config_path, delimiter, label = "label", columns, dense, sparse, codec;
  std::string target_size, numbers = "auto";
  std::optional<data::DataFormat> format;  // without --config; unset: auto
  std::vector<std::string> sets;
  bool header = false;
  int64_t block_rows = data::CacheWriteOptions{}.block_rows, threads = 1;
  int64_t row_group_rows = data::kDefaultParquetRowGroupRows;
};

// Parses the flags; INPUTs are every argument that is not a flag or a flag's value. Returns
// false after printing the help.
Result<bool> ParseConvertArgs(const std::vector<std::string>& args, ConvertArgs* a) {
  static const std::vector<std::string> kBoolFlags = {"--header", "--force", "--help", "-h"};
  std::vector<std::string> flag_args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("-", 0) == 0 && arg != "-") {
      flag_args.push_back(arg);
      const bool boolean = arg.find('=') != std::string::npos ||
                           std::find(kBoolFlags.begin(), kBoolFlags.end(), arg) != kBoolFlags.end();
      if (!boolean && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      a->inputs.push_back(arg);
    }
  }
  FlagParser flags("rectrain data convert",
                   "INPUT... --to cache|tsv|parquet --out PATH [--config CONFIG [--set KEY=VALUE]...] [schema flags]",
                   "Converts sample files of any supported format (criteo, csv/tsv, parquet, libsvm,\n"
                   "libffm, .rtc) into one binary sample cache file (--to cache, docs/formats/cache.md),\n"
                   "one TSV of transformed rows (--to tsv, docs/data.md \"TSV export\"), or Parquet of the\n"
                   "raw input columns (--to parquet, docs/data.md \"Parquet export\"): one file, or parts\n"
                   "of about --target-size in a directory. A cache is read as input wherever its path ends\n"
                   "in .rtc; for TSV and Parquet the command prints the config snippet that reads the\n"
                   "output back into the same batches.");
  flags.String("to", &a->to, "cache | tsv | parquet (see docs/cli.md)");
  flags.String("out", &a->out, "the output (PATH.rtc, PATH.tsv, PATH.parquet, or a directory with --target-size)");
  flags.String("config", &a->config_path, "take schema and transforms from this training config");
  flags.Repeated("set", &a->sets, "override a config key (with --config)");
  flags.Enum("format", &a->format, data::kConfigDataFormats, "without --config: the input format");
  flags.Bool("header", &a->header, "csv/tsv: the first line names the columns");
  flags.String("delimiter", &a->delimiter, "csv delimiter (default ,)");
  flags.String("columns", &a->columns, "csv/tsv without header: comma-separated column names");
  flags.String("label", &a->label, "the label column (default label)");
  flags.String("dense", &a->dense, "csv/tsv/parquet: comma-separated dense feature columns");
  flags.String("sparse", &a->sparse, "csv/tsv/parquet: comma-separated categorical feature columns");
  flags.String("codec", &a->codec, "cache: lz4 (default) | zstd | none; parquet: zstd (default) | snappy | none");
  flags.Int("block-rows", &a->block_rows, "cache: rows per block (default 16384)");
  flags.Int("row-group-rows", &a->row_group_rows, "parquet: rows per row group (default 131072)");
  flags.String("target-size", &a->target_size, "parquet: write parts of about this size into --out (e.g. 512MiB)");
  flags.String("numbers", &a->numbers, "parquet: auto (INT64 when the first row group holds only integers) | double");
  flags.Int("threads", &a->threads, "parse threads (default 1)");
  RECTRAIN_RETURN_IF_ERROR(flags.Parse(flag_args));
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return false;
  }
  return true;
}

// The data config of the inputs: the config file's, or the schema flags'.
Status ConvertConfig(const ConvertArgs& a, data::DataConfig* d, data::ReadOptions* ro) {
  if (!a.config_path.empty()) {
    if (a.header || !a.delimiter.empty() || !a.columns.empty() || !a.dense.empty() || !a.sparse.empty() ||
        a.format) {
      return InvalidArgumentError("schema flags and --config exclude each other; "
                                  "change the config with --set data.KEY=VALUE instead");
    }
    RECTRAIN_ASSIGN_OR_RETURN(auto loaded, config::LoadTrainConfig(a.config_path, a.sets));
    *d = loaded.config.data;
    *ro = loaded.config.read;
  } else {
    if (!a.sets.empty()) return InvalidArgumentError("--set needs --config");
    d->schema.format = a.format.value_or(data::DataFormat::kAuto);
    d->schema.header = a.header;
    if (!a.delimiter.empty()) d->schema.delimiter = a.delimiter == "\\t" || a.delimiter == "tab" ? '\t' : a.delimiter[0];
    if (d->schema.format == data::DataFormat::kCsv && a.delimiter.empty()) d->schema.delimiter = ',';
    d->schema.label = a.label;
    d->schema.columns = SplitList(a.columns);
    d->schema.dense = SplitList(a.dense);
    d->schema.sparse = SplitList(a.sparse);
  }
  d->files = a.inputs;  // standardize/quantiles statistics: the config's data.train, else the inputs
  d->cache = data::CacheMode::kOff;
  ro->num_threads = static_cast<int>(a.threads);
  return OkStatus();
}

void PrintDropped(int64_t rejected, int64_t filtered, int64_t downsampled) {
  if (rejected + filtered + downsampled == 0) return;
  std::printf("; rows rejected %lld, filtered %lld, downsampled %lld", static_cast<long long>(rejected),
              static_cast<long long>(filtered), static_cast<long long>(downsampled));
}

Status ConvertToTsv(const ConvertArgs& a, const data::DataConfig& d, data::ReadOptions ro) {
  // In file order, as the cache is built: the TSV's rows are the input's, transformed.
  ro.shuffle = false;
  ro.skip_rows = 0;
  RECTRAIN_ASSIGN_OR_RETURN(auto reader, data::OpenBatchReader(d, ro));
  RECTRAIN_ASSIGN_OR_RETURN(data::TsvExportInfo tsv, data::ExportTsv(reader.get(), a.out));
  const data::ReaderStats st = reader->Stats();
  std::printf("convert: wrote %s: %lld rows, %zu dense, %zu sparse (%d multi-valued)%s, %.1f MB", tsv.path.c_str(),
              static_cast<long long>(tsv.rows), reader->dense_names().size(), reader->sparse_names().size(),
              tsv.multi_valued, tsv.has_group ? ", group key" : "", static_cast<double>(tsv.bytes) / 1e6);
  PrintDropped(st.rows_rejected, st.rows_filtered, st.rows_downsampled);
  std::printf("\n# Read it back into the same batches with this config (docs/data.md \"TSV export\"):\n%s",
              tsv.yaml.c_str());
  return OkStatus();
}

Status ConvertToParquet(const ConvertArgs& a, const data::DataConfig& d) {
  data::ParquetExportOptions o;
  RECTRAIN_ASSIGN_OR_RETURN(o.write.compression, io::parquet::ParseCompression(a.codec.empty() ? "zstd" : a.codec));
  o.row_group_rows = a.row_group_rows;
  if (!a.target_size.empty()) {
    Result<int64_t> size = config::ParseByteSize(a.target_size);
    if (!size.ok() || *size <= 0) {
      return InvalidArgumentError("--target-size \"" + a.target_size + "\" is not a positive size such as 512MiB or 1GB");
    }
    o.target_part_bytes = *size;
  }
  if (a.numbers != "auto" && a.numbers != "double") {
    return InvalidArgumentError("--numbers must be auto or double, got \"" + a.numbers + "\"");
  }
  o.double_numbers = a.numbers == "double";
  RECTRAIN_ASSIGN_OR_RETURN(data::ParquetExportInfo info, data::ExportParquet(d, o, a.out));
  const std::string where = o.target_part_bytes > 0 ? a.out + " (" + std::to_string(info.files.size()) + " parts)" : a.out;
  std::printf("convert: wrote %s: %lld rows in %lld row groups, %zu columns, %.1f MB (%.1f MB of input) in %.1f s",
              where.c_str(), static_cast<long long>(info.rows), static_cast<long long>(info.row_groups),
              info.columns.size(), static_cast<double>(info.bytes) / 1e6, static_cast<double>(info.input_bytes) / 1e6,
              info.seconds);
  PrintDropped(info.rows_rejected, 0, 0);
  std::printf("\n");
  for (const std::string& c : info.columns) std::printf("  %s\n", c.c_str());
  for (const std::string& n : info.notes) std::printf("  note: %s\n", n.c_str());
  std::printf("# Read it back into the same batches with this config; the rest of the config (features.transforms,\n"
              "# filters, ...) applies unchanged (docs/data.md \"Parquet export\"):\n%s",
              info.yaml.c_str());
  return OkStatus();
}

Status RunConvert(const ConvertArgs& a) {
  if (a.inputs.empty()) return InvalidArgumentError("no INPUT files given");
  if (a.to != "cache" && a.to != "tsv" && a.to != "parquet") {
    return InvalidArgumentError(a.to.empty() ? std::string("--to is required: --to cache, tsv or parquet")
                                             : "--to " + a.to + " is not supported; use --to cache, tsv or parquet");
  }
  if (a.out.empty()) return InvalidArgumentError("--out PATH is required");
  const bool cache_flags = !a.codec.empty() && a.to != "parquet";
  if (a.to == "tsv" && (cache_flags || a.block_rows != data::CacheWriteOptions{}.block_rows)) {
    return InvalidArgumentError("--codec and --block-rows apply to --to cache or parquet, not --to tsv");
  }
  if (a.to != "parquet" && (!a.target_size.empty() || a.numbers != "auto" ||
                            a.row_group_rows != data::kDefaultParquetRowGroupRows)) {
    return InvalidArgumentError("--target-size, --row-group-rows and --numbers apply to --to parquet");
  }
  data::DataConfig d;
  data::ReadOptions ro;
  RECTRAIN_RETURN_IF_ERROR(ConvertConfig(a, &d, &ro));
  if (a.to == "tsv") return ConvertToTsv(a, d, ro);
  if (a.to == "parquet") return ConvertToParquet(a, d);
  data::CacheWriteOptions w;
  w.codec = a.codec.empty() ? "lz4" : a.codec;
  w.block_rows = a.block_rows;
  RECTRAIN_ASSIGN_OR_RETURN(data::CacheInfo info, data::BuildCache(d, ro, w, a.out));
  PrintInfo("convert", info);
  return OkStatus();
}

}  // namespace

int RunDataConvert(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data convert";
  ConvertArgs a;
  Result<bool> parsed = ParseConvertArgs(args, &a);
  if (!parsed.ok()) return ReportError(kCmd, parsed.status());
  if (!*parsed) return 0;
  if (Status s = RunConvert(a); !s.ok()) return ReportError(kCmd, s);
  return 0;
}

}  // namespace rectrain::cli
