// `rectrain train`: trains (or resumes) a run from a YAML config.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/dist/launch.h"
#include "rectrain/track/workspace.h"
#include "rectrain/train/session.h"

namespace rectrain::cli {
namespace fs = std::filesystem;
namespace {

// "rank R: ...": an error another rank hit, relayed to this one by dist::AgreeOk.
bool IsRelayedFromAnotherRank(const Status& s) {
  const std::string& m = s.message();
  size_t i = 5;
  if (m.compare(0, i, "rank ") != 0) return false;
  while (i < m.size() && m[i] >= '0' && m[i] <= '9') ++i;
  return i > 5 && m.compare(i, 2, ": ") == 0;
}

// $RECTRAIN_TEST_HANG_AT=RANK:PHASE stops rank RANK with SIGSTOP (a hung process, as its peers
// see it) when it enters a collective whose phase starts with PHASE: the trainer's phase names,
// "step 25", "the start of step 25", "the checkpoint at step 20", "the publication of the
// model". For the tests of the job's deadlines (tests/mpi_hang_test.sh) only.
void InstallTestHang(dist::Communicator& comm) {
  const char* spec = std::getenv("RECTRAIN_TEST_HANG_AT");
  if (spec == nullptr) return;
  const std::string s = spec;
  const size_t colon = s.find(':');
  if (colon == std::string::npos || s.substr(0, colon) != std::to_string(comm.rank())) return;
  comm.set_round_hook([phase = s.substr(colon + 1)](dist::CommOp, const std::string& context) {
    if (context.rfind(phase, 0) == 0) raise(SIGSTOP);
  });
}

// A failed run: rank 0 reports the job's error, another rank only an error of its own (a
// deadline naming the silent rank included), before EndRank ends a job out of step.
int ReportFailure(const char* cmd, const Status& error, dist::Communicator& comm, const std::string& used_run_dir) {
  const bool lead = comm.rank() == 0;
  if (!lead && comm.status().ok() && IsRelayedFromAnotherRank(error)) {
    const int code = ExitInfoFor(error.code()).exit_code;
    return code == 0 ? 1 : code;
  }
  const std::string who =
      comm.distributed() ? " (rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.world()) + ")" : "";
  const int code = ReportError(std::string(cmd) + who, error);
  if (lead && !used_run_dir.empty()) std::fprintf(stderr, "run directory: %s (train.log, summary.json)\n", used_run_dir.c_str());
  return dist::EndRank(comm, code);
}

// A run stopped by SIGINT/SIGTERM: what was kept and how to continue (rank 0); the exit status.
int ReportInterrupted(const train::SessionResult& r, bool lead) {
  const train::TrainSummary& s = r.summary;
  if (lead) {
    const char* name = s.interrupted_by == SIGTERM ? "SIGTERM" : s.interrupted_by == SIGINT ? "SIGINT" : "a signal";
    if (s.last_checkpoint.empty()) {
      std::fprintf(stderr,
                   "rectrain train: stopped by %s before the first step: nothing trained, no checkpoint written\n",
                   name);
    } else {
      std::fprintf(stderr,
                   "rectrain train: interrupted by %s at step %lld; checkpoint saved in %s\n"
                   "resume with: rectrain train --resume %s\n",
                   name, static_cast<long long>(s.steps), s.last_checkpoint.c_str(), r.run_dir.c_str());
    }
  }
  return SignalExitCode(s.interrupted_by > 0 ? s.interrupted_by : SIGINT);
}

// The finished run's lines on stdout (rank 0): the run, the validation metrics, the oracle's.
void PrintResult(const train::SessionResult& r) {
  const train::TrainSummary& s = r.summary;
  std::printf("run: %s (%s, %lld steps, %.0f samples/s%s)\n", r.run_dir.c_str(), train::RunOutcomeName(s.status),
              static_cast<long long>(s.steps), s.samples_per_sec,
              s.world > 1 ? (", " + std::to_string(s.world) + " ranks").c_str() : "");
  if (s.has_valid && !std::isnan(s.valid.accuracy)) {
    std::printf("valid: accuracy %.5f  top5 %.5f  logloss %.5f  (%lld rows)\n", s.valid.accuracy, s.valid.top5_accuracy,
                s.valid.logloss, static_cast<long long>(s.valid.rows));
  } else if (s.has_valid) {
    std::printf("valid: auc %.5f  logloss %.5f", s.valid.auc, s.valid.logloss);
    if (!std::isnan(s.valid.gauc)) std::printf("  gauc %.5f", s.valid.gauc);
    std::printf("  calibration %.4f  ne %.4f  (%lld rows)\n", s.valid.calibration, s.valid.ne,
                static_cast<long long>(s.valid.rows));
    for (const train::EvalMetrics::Task& t : s.valid.tasks) {
      std::printf("valid task %s: auc %.5f  logloss %.5f  (%lld positive)\n", t.name.c_str(), t.auc, t.logloss,
                  static_cast<long long>(t.positives));
    }
  }
  if (s.has_oracle) std::printf("oracle: auc %.5f  logloss %.5f\n", s.oracle.auc, s.oracle.logloss);
}

// --until as a time point ({} when not given).
Result<std::chrono::system_clock::time_point> UntilTime(const std::string& until) {
  if (until.empty()) return std::chrono::system_clock::time_point{};
  return ParseUntil(until, std::chrono::system_clock::now());
}

}  // namespace

int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain train";
  std::string config_path, run_dir, resume, until;
  std::vector<std::string> sets, tags;
  bool no_progress = false, quiet = false, skip_data_check = false;
  FlagParser flags(kCmd, "CONFIG.yaml [--set KEY=VALUE ...] [--run-dir DIR] | --resume RUN_DIR",
                   "Trains a model as configured (every key: docs/config.md). The run directory gets\n"
                   "config.yaml (resolved), train.log, checkpoints/, model/ and summary.json.\n"
                   "SIGINT/SIGTERM stop after the current step with a checkpoint (exit 130/143);\n"
                   "with data.stream it trains online until --until, train.max_rows or a signal;\n"
                   "continue with --resume RUN_DIR. Under mpirun/srun every rank runs this same\n"
                   "command and they train one model together (docs/scaling.md).");
  flags.Positional("CONFIG.yaml", &config_path, false,
                   "config file (with --resume, defaults to RUN_DIR/config.yaml)");
  flags.Repeated("set", &sets, "override a key, e.g. --set model.hidden=[256,128]");
  flags.String("run-dir", &run_dir, "run directory (default runs/<config name>-<time>)");
  flags.String("resume", &resume, "continue the run in RUN_DIR from its newest checkpoint");
  flags.Bool("no-progress", &no_progress, "log lines instead of a progress bar on a terminal");
  flags.Bool("quiet", &quiet, "print only the result (train.log still gets everything)");
  flags.Repeated("tag", &tags, "tag the run in the tracking store (adds to tracking.tags)");
  flags.String("until", &until,
               "end the run (checkpoint, final model) at this time: 30m, 2h, 2026-12-05T10:00, 18:30 (an online "
               "run never ends by itself otherwise)");
  flags.Bool("skip-data-check", &skip_data_check,
             "do not profile and check the data before training (checks.before_train: false)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (!resume.empty() && !run_dir.empty() && fs::path(run_dir) != fs::path(resume)) {
    return ReportError(kCmd, InvalidArgumentError("--run-dir " + run_dir + " and --resume " + resume +
                                                  " name different directories; pass only --resume"));
  }
  const auto until_time = UntilTime(until);
  if (!until_time.ok()) return ReportError(kCmd, until_time.status());
  // One process, or one rank of a job started by mpirun/srun (dist/launch.h).
  auto connected = dist::Connect();
  if (!connected.ok()) return ReportError(kCmd, connected.status());
  std::unique_ptr<dist::Communicator> comm = std::move(connected).value();
  const bool lead = comm->rank() == 0;
  InstallTestHang(*comm);
  // Before the config sets dist.timeout_s: a rank that cannot even load it fails the job soon.
  comm->set_timeout(std::chrono::seconds(120));

  train::SessionOptions o;
  o.config_path = config_path;
  o.sets = sets;
  o.run_dir = resume.empty() ? run_dir : resume;
  o.resume = !resume.empty();
  o.tags = tags;
  o.skip_data_check = skip_data_check;
  o.progress = no_progress ? 0 : -1;
  o.echo = !quiet && lead;
  // A rank of a job says nothing when the signal arrives: the ranks act on it only once they
  // agree on a step (rank 0 logs it then), and a survivor of a dead peer gets SIGTERM from
  // mpirun right before SIGKILL, when "writing a checkpoint" would be false.
  o.stop_signal = EnableGracefulStop(comm->distributed() ? "" : kCheckpointStopNote);
  o.comm = comm.get();
  o.size_compute_pool = SetComputePoolThreads;
  o.metrics_token = EnvString("RECTRAIN_METRICS_TOKEN");
  o.tracking_store_env = EnvString(track::kStoreEnv);
  o.until = *until_time;
  o.note = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  std::string used_run_dir;
  auto result = train::RunTrainingSession(o, &used_run_dir);
  if (!result.ok()) return ReportFailure(kCmd, result.status(), *comm, used_run_dir);
  if (result->summary.status == train::RunOutcome::kInterrupted) return ReportInterrupted(*result, lead);
  if (lead) PrintResult(*result);
  return 0;
}

}  // namespace rectrain::cli
