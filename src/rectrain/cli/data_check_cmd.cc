// `rectrain data check CONFIG` and `rectrain data stats FILES...`: the data-quality profile of
// data/profile.h (per-column null ratio, min/max/mean, approximate distinct count, label rate,
// rows per file) as a table or JSON; `check` also applies the config's `checks:` thresholds and
// fails (exit 6) with one report listing every violation.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <optional>

#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/profile.h"

namespace rectrain::cli {
namespace {

// Progress on stderr ("\rprofiled 3/1000 files") when it is a terminal or --progress.
std::function<void(int64_t, int64_t)> Progress(bool force) {
  if (!force && isatty(STDERR_FILENO) == 0) return {};
  return [](int64_t done, int64_t total) {
    std::fprintf(stderr, "\rprofiled %lld/%lld files", static_cast<long long>(done),
                 static_cast<long long>(total));
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

}  // namespace

int RunDataCheck(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data check";
  std::string config_path, split = "train";
  std::vector<std::string> sets;
  bool json = false, progress = false;
  int64_t threads = 0;
  FlagParser flags(kCmd, "CONFIG [--set KEY=VALUE]... [--split train|valid] [--json] [--threads N]",
                   "Profiles the config's data files (data.train, or data.valid with --split valid)\n"
                   "and checks them against its `checks:` thresholds (docs/data.md). Prints the\n"
                   "profile; on violations prints every one of them and exits 6.");
  flags.Positional("CONFIG", &config_path, /*required=*/true, "the training config (YAML)");
  flags.Repeated("set", &sets, "override a config key, e.g. --set checks.min_rows=1000");
  flags.String("split", &split, "train (default) | valid");
  flags.Bool("json", &json, "print the profile and the violations as JSON");
  flags.Bool("progress", &progress, "show progress on stderr even when it is not a terminal");
  flags.Int("threads", &threads, "files profiled in parallel (default: the config's threads)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (split != "train" && split != "valid") {
    return ReportError(kCmd, InvalidArgumentError("--split must be train or valid, got \"" + split + "\""));
  }
  auto loaded = config::LoadTrainConfig(config_path, sets);
  if (!loaded.ok()) return ReportError(kCmd, loaded.status());
  const config::TrainConfig& c = loaded->config;
  const std::vector<std::string>& files = split == "train" ? c.train_files : c.valid_files;
  if (files.empty()) return ReportError(kCmd, InvalidArgumentError("data.valid is empty"));
  const int n = static_cast<int>(threads > 0 ? threads : c.threads);
  auto profile = data::ProfileFiles(files, c.data.schema, c.data.transforms, n, Progress(progress),
                                    c.checks.max_rows);
  if (!profile.ok()) return ReportError(kCmd, profile.status().WithContext("data." + split));
  const std::vector<std::string> violations = data::CheckProfile(*profile, c.checks);
  if (json) {
    std::fputs(data::FormatProfileJson(*profile, &violations).c_str(), stdout);
  } else {
    std::fputs(data::FormatProfileTable(*profile).c_str(), stdout);
  }
  if (violations.empty()) {
    if (!json) std::printf("data check passed (%s)\n", split.c_str());
    return 0;
  }
  std::string msg = "data check failed (data." + split + "): " + std::to_string(violations.size()) +
                    (violations.size() == 1 ? " violation" : " violations");
  for (const auto& v : violations) msg += "\n  " + v;
  return ReportError(kCmd, FailedPreconditionError(msg));
}

int RunDataStats(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data stats";
  // FILES are every argument that is not a flag or a flag's value.
  static const std::vector<std::string> kValueFlags = {"--format", "--delimiter", "--label",
                                                        "--columns", "--threads", "--transform",
                                                        "--dense", "--sparse"};
  std::vector<std::string> files, flag_args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("-", 0) == 0 && a != "-") {
      flag_args.push_back(a);
      const bool takes_value = std::find(kValueFlags.begin(), kValueFlags.end(), a) != kValueFlags.end();
      if (takes_value && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      files.push_back(a);
    }
  }
  std::string delimiter, label = "label", columns, dense_keys, sparse_keys;
  std::vector<std::string> transforms;
  bool header = false, json = false, progress = false;
  int64_t threads = 2;
  FlagParser flags(kCmd, "FILES... [--format auto|criteo|csv|tsv|parquet|libsvm|libffm|idx] [--header] [--json] ...",
                   "Profiles sample files: rows per file, per column the non-null ratio, min, max,\n"
                   "mean and approximate distinct count, and the label rate (docs/data.md).");
  data::SchemaConfig schema;
  schema.format = data::DataFormat::kAuto;
  flags.Enum("format", &schema.format, data::kConfigDataFormats, "the input format; auto: parquet for *.parquet, else criteo");
  flags.String("dense", &dense_keys, "libsvm/libffm: comma-separated dense indices/fields, e.g. 1..13");
  flags.String("sparse", &sparse_keys, "libffm: comma-separated categorical fields, e.g. 0..38 (libsvm: the bag's name)");
  flags.Bool("header", &header, "csv/tsv: the first line names the columns");
  flags.String("delimiter", &delimiter, "csv delimiter (default ,)");
  flags.String("columns", &columns, "csv/tsv without header: comma-separated column names");
  flags.String("label", &label, "the label column (default label)");
  flags.Repeated("transform", &transforms, "the label's transform, COL=SPEC, e.g. rating='binarize(8)'");
  flags.Bool("json", &json, "print JSON instead of a table");
  flags.Bool("progress", &progress, "show progress on stderr even when it is not a terminal");
  flags.Int("threads", &threads, "files profiled in parallel (default 2)");
  if (std::optional<int> exit = ParseOrExit(flags, flag_args, kCmd)) return *exit;
  if (files.empty()) return ReportError(kCmd, InvalidArgumentError("no FILES given"));
  if (threads < 1) return ReportError(kCmd, InvalidArgumentError("--threads must be >= 1"));
  schema.header = header;
  schema.label = label;
  if (!delimiter.empty()) {
    if (delimiter == "tab" || delimiter == "\\t") delimiter = "\t";
    if (delimiter.size() != 1) return ReportError(kCmd, InvalidArgumentError("--delimiter must be one character"));
    schema.delimiter = delimiter[0];
  } else if (schema.format == data::DataFormat::kCsv) {
    schema.delimiter = ',';
  }
  auto split_list = [](const std::string& text, std::vector<std::string>* out) {
    for (size_t b = 0; !text.empty() && b <= text.size();) {
      const size_t e = std::min(text.find(',', b), text.size());
      out->push_back(text.substr(b, e - b));
      b = e + 1;
    }
  };
  split_list(dense_keys, &schema.dense);
  split_list(sparse_keys, &schema.sparse);
  for (size_t b = 0; !columns.empty() && b <= columns.size();) {
    const size_t e = std::min(columns.find(',', b), columns.size());
    schema.columns.push_back(columns.substr(b, e - b));
    b = e + 1;
  }
  std::map<std::string, std::string> tmap;
  for (const auto& t : transforms) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos) return ReportError(kCmd, InvalidArgumentError("--transform expects COL=SPEC, got \"" + t + "\""));
    tmap[t.substr(0, eq)] = t.substr(eq + 1);
  }
  auto profile = data::ProfileFiles(files, schema, tmap, static_cast<int>(threads), Progress(progress));
  if (!profile.ok()) return ReportError(kCmd, profile.status());
  std::fputs((json ? data::FormatProfileJson(*profile) : data::FormatProfileTable(*profile)).c_str(), stdout);
  return 0;
}

}  // namespace rectrain::cli
