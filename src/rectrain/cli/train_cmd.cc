// `rectrain train`: trains (or resumes) a run from a YAML config.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/workspace.h"
#include "rectrain/config/train_config.h"
#include "rectrain/http/prometheus.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/train/data_gate.h"
#include "rectrain/train/run_recorder.h"
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

// The tracking store of the run (tracking.*), created with its directory if absent.
Result<std::unique_ptr<track::TrackingStore>> OpenStore(const config::TrackingSettings& t) {
  const std::string path = ResolveStorePath(t.store, t.workspace);
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  auto store = track::TrackingStore::Open(path);
  if (!store.ok()) {
    return store.status().WithContext("cannot open the tracking store " + path +
                                      " (tracking.store; disable with --set tracking.enabled=false)");
  }
  return store;
}

// The /metrics endpoint (monitoring.*). A non-loopback host needs $RECTRAIN_METRICS_TOKEN.
Result<std::unique_ptr<http::Server>> StartMetricsServer(const config::MonitoringSettings& m,
                                                         http::MetricsRegistry* registry) {
  http::ServerOptions so;
  so.host = m.host;
  so.port = m.port;
  so.num_threads = 1;
  if (const char* token = std::getenv("RECTRAIN_METRICS_TOKEN"); token != nullptr) so.token = token;
  auto server = http::Server::Start(so, registry, nullptr);
  if (!server.ok()) {
    return server.status().WithContext("cannot serve /metrics on " + m.host + ":" + std::to_string(m.port) +
                                       " (monitoring.host/port; disable with --set monitoring.enabled=false)");
  }
  return server;
}

}  // namespace

int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain train";
  std::string config_path, run_dir, resume;
  std::vector<std::string> sets, tags;
  bool no_progress = false, quiet = false, skip_data_check = false;
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
  flags.Repeated("tag", &tags, "tag the run in the tracking store (repeatable; adds to tracking.tags)");
  flags.Bool("skip-data-check", &skip_data_check,
             "do not profile and check the data before training (checks.before_train: false)");
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

  for (const auto& tag : tags) {
    if (tag.empty()) return ReportError(kCmd, InvalidArgumentError("--tag must not be empty"));
  }

  options.run_dir = run_dir;
  options.stop_signal = InstallStopHandlers();
  options.progress = no_progress ? 0 : -1;
  options.echo = !quiet;

  // Tracking store and /metrics (docs/tracking.md). Declared in this order so that the
  // recorder ends before the server stops and the server before the registry goes.
  const config::TrainConfig& c = loaded->config;
  http::MetricsRegistry registry;
  std::unique_ptr<track::TrackingStore> store;
  std::unique_ptr<http::Server> metrics_server;
  std::unique_ptr<train::RunRecorder> recorder;
  if (c.tracking.enabled) {
    auto opened = OpenStore(c.tracking);
    if (!opened.ok()) return ReportError(kCmd, opened.status());
    store = std::move(opened).value();
  }
  if (c.monitoring.enabled) {
    auto started = StartMetricsServer(c.monitoring, &registry);
    if (!started.ok()) return ReportError(kCmd, started.status());
    metrics_server = std::move(started).value();
  }
  if (store || metrics_server) {
    track::RunInfo info;
    info.name = c.tracking.run_name;
    if (info.name.empty()) info.name = fs::path(run_dir).lexically_normal().filename().string();
    info.tags = c.tracking.tags;
    info.tags.insert(info.tags.end(), tags.begin(), tags.end());
    info.group_id = c.tracking.group;
    if (c.tracking.parent_id > 0) info.parent_id = c.tracking.parent_id;
    std::error_code ec;
    const fs::path config_dir = fs::absolute(config_path, ec).parent_path();
    info.git_commit = train::GitCommitOf(config_dir.string());
    info.config_yaml = loaded->resolved_yaml;
    train::RunRecorder::Options ro;
    ro.store = store.get();
    ro.registry = metrics_server ? &registry : nullptr;
    ro.run_dir = run_dir;
    std::vector<std::string> data = c.train_files;
    data.insert(data.end(), c.valid_files.begin(), c.valid_files.end());
    auto started = train::RunRecorder::Start(ro, info, data);
    if (!started.ok()) {
      return ReportError(kCmd, started.status().WithContext("cannot record the run in the tracking store"));
    }
    recorder = std::move(started).value();
    options.observer = recorder.get();
    if (!quiet) {
      if (recorder->run_id()) {
        std::fprintf(stderr, "tracking: run %lld in %s\n", static_cast<long long>(*recorder->run_id()),
                     ResolveStorePath(c.tracking.store, c.tracking.workspace).c_str());
      }
      if (metrics_server) std::fprintf(stderr, "metrics: %s/metrics\n", metrics_server->url().c_str());
      std::fflush(stderr);
    }
  }

  // The data check before the first step (docs/data.md "Data quality"): every violation of
  // `checks:` in data.train and data.valid stops here, in one report (exit 6). Not on --resume:
  // the run's data was checked when it started.
  if (c.checks.before_train && !skip_data_check && !options.resume) {
    auto gate = train::RunDataGate(c, run_dir, std::max(c.threads, c.read.num_threads));
    Status failed = gate.ok() ? train::DataGateError(*gate) : gate.status();
    if (gate.ok() && recorder) recorder->RecordDataCheck(*gate);
    if (!failed.ok()) {
      if (recorder) recorder->Fail(failed);
      return ReportError(kCmd, failed);
    }
    if (!quiet) {
      std::fprintf(stderr, "%s\n", train::DataGateSummary(*gate).c_str());
      std::fflush(stderr);
    }
  }

  auto summary = train::Train(*loaded, options);
  if (recorder) {
    if (summary.ok()) {
      recorder->Finish(*summary);
    } else {
      recorder->Fail(summary.status());
    }
  }
  if (!summary.ok()) {
    int code = ReportError(kCmd, summary.status());
    std::fprintf(stderr, "run directory: %s (train.log, summary.json)\n", run_dir.c_str());
    return code;
  }
  const train::TrainSummary& s = *summary;
  if (s.status == train::RunOutcome::kInterrupted) {
    const char* name = s.interrupted_by == SIGTERM ? "SIGTERM" : s.interrupted_by == SIGINT ? "SIGINT" : "a signal";
    std::fprintf(stderr,
                 "rectrain train: interrupted by %s at step %lld; checkpoint saved in %s\n"
                 "resume with: rectrain train --resume %s\n",
                 name, static_cast<long long>(s.steps), s.last_checkpoint.c_str(), run_dir.c_str());
    return SignalExitCode(s.interrupted_by > 0 ? s.interrupted_by : SIGINT);
  }
  std::printf("run: %s (%s, %lld steps, %.0f samples/s)\n", run_dir.c_str(), train::RunOutcomeName(s.status),
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
