// `rectrain train`: trains (or resumes) a run from a YAML config.
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/config/train_config.h"
#include "rectrain/train/trainer.h"

namespace rectrain::cli {
namespace fs = std::filesystem;

namespace {

std::string DefaultRunDir(const std::string& config_path) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + fs::path(config_path).stem().string() + "-" + stamp;
}

}  // namespace

int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain train";
  std::string config_path, run_dir, resume;
  std::vector<std::string> sets;
  bool no_progress = false, quiet = false;
  FlagParser flags(kCmd, "CONFIG.yaml [--set KEY=VALUE ...] [--run-dir DIR] | --resume RUN_DIR",
                   "Trains a model as configured (every key: docs/config.md). The run directory gets\n"
                   "config.yaml (resolved), train.log, checkpoints/, model/ and summary.json.\n"
                   "SIGINT/SIGTERM stop after the current step with a checkpoint (exit 130/143);\n"
                   "continue with --resume RUN_DIR.");
  flags.Positional("CONFIG.yaml", &config_path, false,
                   "config file (with --resume, defaults to RUN_DIR/config.yaml)");
  flags.Repeated("set", &sets, "override a key, e.g. --set model.hidden=[256,128]");
  flags.String("run-dir", &run_dir, "run directory (default runs/<config name>-<time>)");
  flags.String("resume", &resume, "continue the run in RUN_DIR from its newest checkpoint");
  flags.Bool("no-progress", &no_progress, "log lines instead of a progress bar on a terminal");
  flags.Bool("quiet", &quiet, "print only the result (train.log still gets everything)");
  if (Status s = flags.Parse(args); !s.ok()) return ReportError(kCmd, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  train::TrainerOptions options;
  if (!resume.empty()) {
    if (!run_dir.empty() && fs::path(run_dir) != fs::path(resume)) {
      return ReportError(kCmd, InvalidArgumentError("--run-dir " + run_dir + " and --resume " + resume +
                                                    " name different directories; pass only --resume"));
    }
    run_dir = resume;
    options.resume = true;
    if (config_path.empty()) config_path = resume + "/config.yaml";
  } else {
    if (config_path.empty()) {
      return ReportError(kCmd, InvalidArgumentError("rectrain train needs CONFIG.yaml (or --resume RUN_DIR)"));
    }
    if (run_dir.empty()) run_dir = DefaultRunDir(config_path);
    std::error_code ec;
    if (fs::exists(fs::path(run_dir) / "summary.json", ec) || fs::exists(fs::path(run_dir) / "checkpoints", ec)) {
      return ReportError(kCmd, AlreadyExistsError("run directory " + run_dir +
                                                  " already holds a run; continue it with --resume " +
                                                  run_dir + " or choose another --run-dir"));
    }
  }
  auto loaded = config::LoadTrainConfig(config_path, sets);
  if (!loaded.ok()) return ReportError(kCmd, loaded.status());

  options.run_dir = run_dir;
  options.stop_signal = InstallStopHandlers();
  options.progress = no_progress ? 0 : -1;
  options.echo = !quiet;
  auto summary = train::Train(*loaded, options);
  if (!summary.ok()) {
    int code = ReportError(kCmd, summary.status());
    std::fprintf(stderr, "run directory: %s (train.log, summary.json)\n", run_dir.c_str());
    return code;
  }
  const train::TrainSummary& s = *summary;
  if (s.status == "interrupted") {
    const char* name = s.interrupted_by == SIGTERM ? "SIGTERM" : s.interrupted_by == SIGINT ? "SIGINT" : "a signal";
    std::fprintf(stderr,
                 "rectrain train: interrupted by %s at step %lld; checkpoint saved in %s\n"
                 "resume with: rectrain train --resume %s\n",
                 name, static_cast<long long>(s.steps), s.last_checkpoint.c_str(), run_dir.c_str());
    return SignalExitCode(s.interrupted_by > 0 ? s.interrupted_by : SIGINT);
  }
  std::printf("run: %s (%s, %lld steps, %.0f samples/s)\n", run_dir.c_str(), s.status.c_str(),
              static_cast<long long>(s.steps), s.samples_per_sec);
  if (s.has_valid) {
    std::printf("valid: auc %.5f  logloss %.5f", s.valid.auc, s.valid.logloss);
    if (!std::isnan(s.valid.gauc)) std::printf("  gauc %.5f", s.valid.gauc);
    std::printf("  calibration %.4f  ne %.4f  (%lld rows)\n", s.valid.calibration, s.valid.ne,
                static_cast<long long>(s.valid.rows));
  }
  if (s.has_oracle) std::printf("oracle: auc %.5f  logloss %.5f\n", s.oracle.auc, s.oracle.logloss);
  return 0;
}

}  // namespace rectrain::cli
