// `rectrain tune`: runs a hyperparameter study (docs/tune.md). The study loop is
// tune::RunStudy (tune/tuner.h); this file maps flags, loads training configs for the checks,
// opens the tracking store and the /metrics endpoint, and prints the table and leaderboard.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/config/train_config.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/track/workspace.h"
#include "rectrain/tune/study.h"
#include "rectrain/tune/tuner.h"

namespace rectrain::cli {
namespace fs = std::filesystem;
namespace {

std::string SelfExe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "rectrain" : p.string();
}

// The training config of a trial: the study's base with `sets`, as `rectrain train` loads it.
tune::ConfigChecker MakeChecker(const tune::StudySpec& spec, const std::string& study_dir) {
  return [spec_base = spec.base_path, inline_base = spec.base_yaml, study_dir, env_store = EnvString(track::kStoreEnv)](
             const std::vector<std::string>& sets) -> Result<tune::TrialConfigInfo> {
    Result<config::LoadedConfig> loaded =
        spec_base.empty() ? config::LoadTrainConfigFromString(inline_base, study_dir + "/base.yaml", sets)
                          : config::LoadTrainConfig(spec_base, sets);
    if (!loaded.ok()) return loaded.status();
    const config::TrainConfig& c = loaded->config;
    tune::TrialConfigInfo info;
    info.resolved_yaml = loaded->resolved_yaml;
    info.has_valid = !c.valid_files.empty();
    info.classifier = c.model.num_classes >= 2;
    info.gauc = c.eval.gauc;
    info.eval_every_steps = c.train.eval_every_steps;
    info.epochs = c.train.epochs;
    info.tracking = c.tracking.enabled;
    info.store_path = track::ResolveStorePath(c.tracking.store, env_store, c.tracking.workspace);
    return info;
  };
}

// Redraws the table in place on a terminal: cursor up over the last drawing, clear, print.
class LiveTable {
 public:
  void Draw(const std::string& table) {
    Clear();
    std::fputs(table.c_str(), stderr);
    lines_ = static_cast<int>(std::count(table.begin(), table.end(), '\n'));
    std::fflush(stderr);
  }
  void Line(const std::string& line) {
    Clear();
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }

 private:
  void Clear() {
    if (lines_ > 0) std::fprintf(stderr, "\x1b[%dF\x1b[J", lines_);
    lines_ = 0;
  }
  int lines_ = 0;
};

// The study file. A resumed study reads DIR/study.yaml as if from where the original file was,
// so its relative base path means the same file.
Result<tune::StudySpec> LoadStudySpec(const std::string& study_path, const std::string& study_dir, bool resumed) {
  Result<tune::StudySpec> spec = tune::LoadStudy(study_path);
  if (resumed && study_path == study_dir + "/study.yaml") {
    std::ifstream src(study_dir + "/study.source");
    std::string original;
    if (std::getline(src, original) && !original.empty()) {
      std::ifstream in(study_path);
      std::stringstream text;
      text << in.rdbuf();
      spec = tune::ParseStudy(text.str(), original);
    }
  }
  return spec;
}

// The tracking store of the base config, where the study and its trials are runs; null when
// the base config turns tracking off.
Result<std::unique_ptr<track::TrackingStore>> OpenStudyStore(const tune::TrialConfigInfo& base) {
  if (!base.tracking) return std::unique_ptr<track::TrackingStore>();
  std::error_code ec;
  fs::create_directories(fs::path(base.store_path).parent_path(), ec);
  auto opened = track::TrackingStore::Open(base.store_path);
  if (!opened.ok()) {
    return opened.status().WithContext("cannot open the tracking store " + base.store_path +
                                       " (disable with --set tracking.enabled=false)");
  }
  return opened;
}

// The tuner's /metrics on `port` (0: ephemeral), with the process metrics in `registry`.
Result<std::unique_ptr<http::Server>> ServeMetrics(int port, prometheus::MetricsRegistry* registry) {
  (void)prometheus::RegisterProcessMetrics(*registry);
  http::ServerOptions so;
  so.port = port;
  so.num_threads = 1;
  auto started = http::Server::Start(so, registry);
  if (!started.ok()) return started.status().WithContext("cannot serve /metrics (--metrics-port, --no-metrics)");
  return started;
}

// The study's end. Interrupted: how to continue, and the signal's exit status. Finished: the
// leaderboard (its top 10 on stdout, all of it in DIR/leaderboard.txt), the tuner's cost and the
// best config; 1 when no trial reported the metric.
int ReportStudy(const tune::StudySpec& spec, const tune::StudyResult& result, const std::string& study_dir) {
  if (result.interrupted) {
    std::fprintf(stderr, "rectrain tune: interrupted; trials checkpointed. Continue with: rectrain tune --resume %s\n", study_dir.c_str());
    return SignalExitCode(result.signal);
  }
  const std::string board = tune::TrialTable(spec, result.trials, 10);
  std::ofstream(study_dir + "/leaderboard.txt") << tune::TrialTable(spec, result.trials, result.trials.size());
  std::printf("%s", board.c_str());
  std::printf("wall %.1f s, %lld trial processes, tuner overhead %.2f s (%.2f%%)\n", result.wall_seconds,
              static_cast<long long>(result.launches), result.overhead_seconds,
              result.wall_seconds > 0 ? 100.0 * result.overhead_seconds / result.wall_seconds : 0.0);
  if (!result.best_config_path.empty()) {
    std::printf("best config: %s (rectrain train %s)\n", result.best_config_path.c_str(), result.best_config_path.c_str());
  } else {
    std::printf("no trial reported %s; see the trials' stdout.log under %s/trials\n", spec.metric.c_str(), study_dir.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int RunTune(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain tune";
  std::string study_path, study_dir, resume;
  std::vector<std::string> sets;
  int64_t metrics_port = 0;
  bool no_metrics = false, no_table = false, quiet = false;
  FlagParser flags(kCmd, "STUDY.yaml --study-dir DIR | --resume DIR",
                   "Runs a hyperparameter study (docs/tune.md): trials as separate `rectrain train`\n"
                   "processes, several at a time, searched (random, grid, tpe) and early-stopped\n"
                   "(fifo, asha, median) as the study file says. Every event goes to DIR/journal.jsonl;\n"
                   "SIGINT/SIGTERM stop the trials with a checkpoint (exit 130/143) and --resume DIR\n"
                   "continues, also after kill -9. At the end: a leaderboard, DIR/best.yaml.");
  flags.Positional("STUDY.yaml", &study_path, false, "the study file (with --resume: DIR/study.yaml)");
  flags.String("study-dir", &study_dir, "the study directory (trials, journal, best.yaml)");
  flags.String("resume", &resume, "continue the study in DIR");
  flags.Repeated("set", &sets, "add a training-config override to every trial (after the study's sets)");
  flags.Int("metrics-port", &metrics_port, "port of the tuner's /metrics (0: ephemeral, printed)");
  flags.Bool("no-metrics", &no_metrics, "do not serve /metrics");
  flags.Bool("no-table", &no_table, "event lines only, no live table (the default when stderr is not a terminal)");
  flags.Bool("quiet", &quiet, "print only the leaderboard");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (!resume.empty()) {
    if (!study_dir.empty() && fs::path(study_dir) != fs::path(resume)) {
      return ReportError(kCmd, InvalidArgumentError("--study-dir " + study_dir + " and --resume " + resume + " name different directories; pass only --resume"));
    }
    study_dir = resume;
    if (study_path.empty()) study_path = study_dir + "/study.yaml";
  } else if (study_path.empty() || study_dir.empty()) {
    return ReportError(kCmd, InvalidArgumentError("usage: rectrain tune STUDY.yaml --study-dir DIR (or --resume DIR)"));
  }
  Result<tune::StudySpec> spec = LoadStudySpec(study_path, study_dir, !resume.empty());
  if (!spec.ok()) return ReportError(kCmd, spec.status());
  // A resumed study keeps the base it started with (an inline base lives in DIR/base.yaml).
  spec->sets.insert(spec->sets.end(), sets.begin(), sets.end());

  tune::TunerOptions o;
  o.study_dir = study_dir;
  o.resume = !resume.empty();
  o.rectrain_exe = SelfExe();
  o.check = MakeChecker(*spec, study_dir);
  o.stop_signal = EnableGracefulStop(kCheckpointStopNote);

  // The tracking store of the base config: the study and its trials are runs there.
  auto base = o.check(spec->sets);
  if (!base.ok()) return ReportError(kCmd, base.status().WithContext("the study's base config"));
  auto store = OpenStudyStore(*base);
  if (!store.ok()) return ReportError(kCmd, store.status());
  o.store = store->get();
  prometheus::MetricsRegistry registry;
  std::unique_ptr<http::Server> server;
  if (!no_metrics) {
    auto started = ServeMetrics(static_cast<int>(metrics_port), &registry);
    if (!started.ok()) return ReportError(kCmd, started.status());
    server = std::move(started).value();
    o.registry = &registry;
  }
  LiveTable table;
  const bool tty = isatty(2) != 0 && !no_table && !quiet;
  if (!quiet) {
    o.log = [&](const std::string& line) {
      if (tty) {
        table.Line(line);
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    };
    if (server) o.log("metrics: " + server->url() + "/metrics");
    if (*store) o.log("tracking: " + base->store_path + " (rectrain runs list --group " + spec->name + ", rectrain ui)");
  }
  if (tty) o.draw = [&](const std::string& t) { table.Draw(t); };

  auto result = tune::RunStudy(*spec, o);
  if (!result.ok()) return ReportError(kCmd, result.status());
  return ReportStudy(*spec, *result, study_dir);
}

}  // namespace rectrain::cli
