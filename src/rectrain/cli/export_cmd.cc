// `rectrain export`: a run's final model as a serving model (serve/export.h, docs/serving.md);
// `rectrain publish`: the same model into a served versions directory as a delta (serve/publish.h).
#include <cstdio>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/serve/export.h"
#include "rectrain/serve/publish.h"
#include "rectrain/train/trained_model.h"

namespace rectrain::cli {
namespace {

// The serving model's description and parameters from a run's trained model (which must outlive
// the source: it holds the parameters and tables).
serve::ModelSource SourceOf(const train::TrainedModel& t, const std::string& run_dir, std::vector<optim::ParamRef>* params) {
  serve::ModelSource src;
  serve::Manifest& d = src.description;
  d.model_type = t.config.config.model.type;
  d.trained_steps = t.meta.step;
  d.source_run = run_dir;
  d.layout = t.layout;
  d.dense_names = t.dense_names;
  d.sparse_names = t.sparse_names;
  d.task_names = t.task_names;
  d.feature_columns = t.feature_columns;
  d.negative_downsampling = t.config.config.data.negative_downsampling;
  src.config_yaml = t.config_yaml;
  *params = t.model->Params();
  src.params = *params;
  for (const auto& table : t.tables) src.tables.push_back(table.get());
  return src;
}

}  // namespace

int RunExport(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain export";
  serve::ExportOptions o;
  std::string run_dir;
  std::string row_type = "fp32";
  int64_t threads = 0;
  FlagParser flags(kCmd, "RUN_DIR --out MODEL_DIR [--version N] [--min-count N] [--rows fp32|fp16|int8] [--force]",
                   "Writes RUN_DIR's final model as a self-contained serving model: dense parameters,\n"
                   "embedding rows without optimizer state, the data layout with its frozen feature\n"
                   "statistics, the config, a manifest with checksums. Export into MODELS/N to add\n"
                   "version N to a directory that `rectrain serve MODELS` watches.");
  flags.Positional("RUN_DIR", &run_dir, true, "a run directory written by rectrain train");
  flags.String("out", &o.out_dir, "the model directory to create (MODELS/7: version 7)");
  flags.Int("version", &o.version, "model version (default: the directory's name when it is a number, else 1)");
  flags.Int("min-count", &o.min_count, "keep only rows updated at least N times in training (others read the OOV row)");
  flags.String("rows", &row_type, "row storage: fp32 (exact), fp16 or int8 (4x smaller; see docs/serving.md for the AUC cost)");
  flags.Bool("force", &o.overwrite, "replace MODEL_DIR if it exists");
  flags.Int("threads", &threads, "threads for loading (default: the run's)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  auto type = serve::ParseRowType(row_type);
  if (!type.ok()) return ReportError(kCmd, type.status().WithContext("--rows"));
  o.row_type = *type;
  if (Status s = serve::CheckExportOptions(o); !s.ok()) return ReportError(kCmd, s);  // before the slow load
  auto trained = train::LoadTrainedModel(run_dir, static_cast<int>(threads));
  if (!trained.ok()) return ReportError(kCmd, trained.status());
  std::vector<optim::ParamRef> params;
  auto report = serve::ExportModel(SourceOf(*trained, run_dir, &params), o);
  if (!report.ok()) return ReportError(kCmd, report.status());
  for (const std::string& dir : report->removed_stale) {
    std::fprintf(stderr, "rectrain export: removed %s, left by an export that no longer runs\n", dir.c_str());
  }
  std::printf("exported %s (%s, trained %lld steps) to %s: version %lld, %lld rows (%s)%s, %.1f MB in %.2f s\n",
              run_dir.c_str(), report->manifest.model_type.c_str(), static_cast<long long>(report->manifest.trained_steps),
              o.out_dir.c_str(), static_cast<long long>(report->manifest.version), static_cast<long long>(report->rows_kept),
              row_type.c_str(),
              report->rows_dropped > 0 ? (", " + std::to_string(report->rows_dropped) + " rows below --min-count left out").c_str() : "",
              static_cast<double>(report->bytes) / 1e6, report->seconds);
  return 0;
}

int RunPublish(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain publish";
  serve::PublishOptions o;
  std::string run_dir;
  std::string row_type = "fp32";
  int64_t full_every = o.full_every, threads = 0;
  FlagParser flags(kCmd, "RUN_DIR --to MODELS [--full] [--full-every N] [--rows fp32|fp16|int8] [--min-count N]",
                   "Publishes RUN_DIR's final model into MODELS, the versions directory `rectrain serve` watches,\n"
                   "as version newest+1: a serving delta of the newest version (the rows that differ from it\n"
                   "as served, the ids gone, the dense parameters), or a full export when MODELS has none\n"
                   "or --full-every deltas were published since the last. The online trainer publishes the\n"
                   "same way from memory (docs/online.md).");
  flags.Positional("RUN_DIR", &run_dir, true, "a run directory written by rectrain train");
  flags.String("to", &o.versions_dir, "the versions directory (created if missing), or an s3://bucket/prefix");
  flags.Int("full-every", &full_every, "a full export after N deltas in a row (0: deltas only, after the first)");
  flags.Bool("full", &o.full_first, "write a full export now (another model, or to restart a chain)");
  flags.String("rows", &row_type, "row storage of full exports (deltas take their base's)");
  flags.Int("min-count", &o.min_count, "of full exports: keep rows updated at least N times (deltas take their base's)");
  flags.Int("threads", &threads, "threads for loading (default: the run's)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  auto type = serve::ParseRowType(row_type);
  if (!type.ok()) return ReportError(kCmd, type.status().WithContext("--rows"));
  o.row_type = *type;
  o.full_every = static_cast<int>(full_every);
  auto publisher = serve::Publisher::Open(o);
  if (!publisher.ok()) return ReportError(kCmd, publisher.status());
  auto trained = train::LoadTrainedModel(run_dir, static_cast<int>(threads));
  if (!trained.ok()) return ReportError(kCmd, trained.status());
  std::vector<optim::ParamRef> params;
  auto report = (*publisher)->Publish(SourceOf(*trained, run_dir, &params));
  if (!report.ok()) return ReportError(kCmd, report.status());
  const serve::PublishReport& r = *report;
  if (r.full) {
    std::printf("published %s to %s: version %lld, a full export, %lld rows, %.3f MB in %.3f s\n", run_dir.c_str(),
                o.versions_dir.c_str(), static_cast<long long>(r.version), static_cast<long long>(r.rows),
                static_cast<double>(r.bytes) / 1e6, r.seconds);
  } else {
    std::printf("published %s to %s: version %lld, a delta of version %lld, %lld rows changed, %lld ids removed, "
                "%lld rows, %.3f MB in %.3f s\n",
                run_dir.c_str(), o.versions_dir.c_str(), static_cast<long long>(r.version),
                static_cast<long long>(r.base_version), static_cast<long long>(r.changed_rows),
                static_cast<long long>(r.removed_ids), static_cast<long long>(r.rows),
                static_cast<double>(r.bytes) / 1e6, r.seconds);
  }
  return 0;
}

}  // namespace rectrain::cli
