// `rectrain export`: a run's final model as a serving model (serve/export.h, docs/serving.md).
#include <cstdio>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/serve/export.h"

namespace rectrain::cli {

int RunExport(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain export";
  serve::ExportOptions o;
  std::string row_type = "fp32";
  int64_t threads = 0;
  FlagParser flags(kCmd, "RUN_DIR --out MODEL_DIR [--version N] [--min-count N] [--rows fp32|fp16|int8] [--force]",
                   "Writes RUN_DIR's final model as a self-contained serving model: dense parameters,\n"
                   "embedding rows without optimizer state, the data layout with its frozen feature\n"
                   "statistics, the config, a manifest with checksums. Export into MODELS/N to add\n"
                   "version N to a directory that `rectrain serve MODELS` watches.");
  flags.Positional("RUN_DIR", &o.run_dir, true, "a run directory written by rectrain train");
  flags.String("out", &o.out_dir, "the model directory to create (MODELS/7: version 7)");
  flags.Int("version", &o.version, "model version (default: the directory's name when it is a number, else 1)");
  flags.Int("min-count", &o.min_count, "keep only rows updated at least N times in training (others read the OOV row)");
  flags.String("rows", &row_type, "row storage: fp32 (exact), fp16 or int8 (4x smaller; see docs/serving.md for the AUC cost)");
  flags.Bool("force", &o.overwrite, "replace MODEL_DIR if it exists");
  flags.Int("threads", &threads, "threads for loading (default: the run's)");
  if (Status s = flags.Parse(args); !s.ok()) return ReportError(kCmd, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  auto type = serve::ParseRowType(row_type);
  if (!type.ok()) return ReportError(kCmd, type.status().WithContext("--rows"));
  o.row_type = *type;
  o.threads = static_cast<int>(threads);
  auto report = serve::ExportRun(o);
  if (!report.ok()) return ReportError(kCmd, report.status());
  for (const std::string& dir : report->removed_stale) {
    std::fprintf(stderr, "rectrain export: removed %s, left by an export that no longer runs\n", dir.c_str());
  }
  std::printf("exported %s (%s, trained %lld steps) to %s: version %lld, %lld rows (%s)%s, %.1f MB in %.2f s\n",
              o.run_dir.c_str(), report->manifest.model_type.c_str(), static_cast<long long>(report->manifest.trained_steps),
              o.out_dir.c_str(), static_cast<long long>(report->manifest.version), static_cast<long long>(report->rows_kept),
              row_type.c_str(),
              report->rows_dropped > 0 ? (", " + std::to_string(report->rows_dropped) + " rows below --min-count left out").c_str() : "",
              static_cast<double>(report->bytes) / 1e6, report->seconds);
  return 0;
}

}  // namespace rectrain::cli
