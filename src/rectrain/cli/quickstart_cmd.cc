// `rectrain quickstart`: generates a default dataset, trains DeepFM and prints its validation
// AUC next to the oracle AUC (the AUC of the true probabilities: the best any model can do).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "rectrain/base/stopwatch.h"
#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/generator.h"
#include "rectrain/train/trainer.h"

namespace rectrain::cli {
namespace fs = std::filesystem;

namespace {

Status EnsureDataset(const std::string& path, int64_t rows, uint64_t seed, const std::string& shape,
                     int threads) {
  std::error_code ec;
  if (fs::exists(path, ec) && fs::exists(path + ".prob", ec)) {
    std::fprintf(stderr, "using existing %s\n", path.c_str());
    return OkStatus();
  }
  data::GenerateConfig g{.rows = rows, .out = path, .seed = seed, .shape = shape, .num_threads = threads};
  RECTRAIN_ASSIGN_OR_RETURN(data::GenerateReport r, data::GenerateDataset(g));
  std::fprintf(stderr, "generated %s: %lld rows in %.1fs\n", path.c_str(), static_cast<long long>(r.rows),
               r.seconds);
  return OkStatus();
}

}  // namespace

// The quickstart model: DeepFM as in bench/specs/criteo_deepfm.yaml, one epoch.
std::string QuickstartConfig(const std::string& train, const std::string& valid, int64_t threads) {
  return "# Written by `rectrain quickstart` (every key: docs/config.md).\n"
         "seed: 42\n"
         "threads: " + std::to_string(threads) + "\n"
         "data:\n"
         "  train: " + train + "\n"
         "  valid: " + valid + "\n"
         "  format: criteo\n"
         "  batch_size: 4096\n"
         "  reader_threads: 1\n"
         "model:\n"
         "  type: deepfm\n"
         "  embedding_dim: 16\n"
         "  hidden: [400, 400, 400]\n"
         "embedding:\n"
         "  optimizer: {type: adagrad, lr: 0.01}\n"
         "optimizer:\n"
         "  type: adam\n"
         "  lr: 0.001\n"
         "train:\n"
         "  epochs: 1\n"
         "  log_every_steps: 50\n";
}

int RunQuickstart(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain quickstart";
  std::string dir = "runs/quickstart", shape = "easy";
  int64_t rows = 1000000, threads = 2;
  FlagParser flags(kCmd, "[--dir DIR] [--rows N] [--shape easy|criteo] [--threads T]",
                   "Generates DIR/data/{train,valid}.tsv (N and N/5 rows, with true probabilities),\n"
                   "trains DeepFM for one epoch into DIR/run and prints the validation AUC next to\n"
                   "the oracle AUC. Existing data files are reused; DIR/run is replaced.");
  flags.String("dir", &dir, "working directory (default runs/quickstart)");
  flags.Int("rows", &rows, "training rows (default 1000000; valid gets N/5)");
  flags.String("shape", &shape, "dataset shape: easy (default) or criteo");
  flags.Int("threads", &threads, "compute threads (default 2)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (rows < 1000) return ReportError(kCmd, InvalidArgumentError("--rows must be >= 1000"));
  if (shape != "easy" && shape != "criteo") {
    return ReportError(kCmd, InvalidArgumentError("--shape must be easy or criteo, got \"" + shape + "\""));
  }
  if (threads < 1) return ReportError(kCmd, InvalidArgumentError("--threads must be >= 1"));
  Stopwatch wall;
  const std::string data_dir = dir + "/data";
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return ReportError(kCmd, ErrnoToStatus(ec.value(), "cannot create " + data_dir));
  const std::string stem = data_dir + "/" + shape + "-" + std::to_string(rows);
  const std::string train = stem + "-train.tsv", valid = stem + "-valid.tsv";
  if (Status s = EnsureDataset(train, rows, 1, shape, static_cast<int>(threads)); !s.ok()) return ReportError(kCmd, s);
  if (Status s = EnsureDataset(valid, std::max<int64_t>(rows / 5, 1000), 2, shape, static_cast<int>(threads)); !s.ok()) {
    return ReportError(kCmd, s);
  }
  const std::string config_path = dir + "/deepfm.yaml";
  {
    std::ofstream out(config_path);
    out << QuickstartConfig(fs::absolute(train).string(), fs::absolute(valid).string(), threads);
    if (!out) return ReportError(kCmd, InternalError("cannot write " + config_path));
  }
  auto loaded = config::LoadTrainConfig(config_path, {});
  if (!loaded.ok()) return ReportError(kCmd, loaded.status());
  const std::string run_dir = dir + "/run";
  fs::remove_all(run_dir, ec);
  train::TrainerOptions options;
  options.run_dir = run_dir;
  options.stop_signal = EnableGracefulStop(kCheckpointStopNote);
  options.size_compute_pool = SetComputePoolThreads;
  auto summary = train::Train(*loaded, options);
  if (!summary.ok()) return ReportError(kCmd, summary.status());
  const train::TrainSummary& s = *summary;
  if (s.status == train::RunOutcome::kInterrupted) {
    std::fprintf(stderr, "rectrain quickstart: interrupted\n");
    return SignalExitCode(s.interrupted_by);
  }
  std::printf("\nDeepFM, %lld training rows (%s shape), %.0f samples/s on %lld threads\n",
              static_cast<long long>(s.rows_read), shape.c_str(), s.samples_per_sec,
              static_cast<long long>(threads));
  std::printf("  validation AUC  %.4f   logloss %.4f\n", s.valid.auc, s.valid.logloss);
  if (s.has_oracle) {
    std::printf("  oracle AUC      %.4f   logloss %.4f   (true probabilities: the best any model can do)\n",
                s.oracle.auc, s.oracle.logloss);
    std::printf("  gap to oracle   %.4f\n", s.oracle.auc - s.valid.auc);
  }
  std::printf("run directory: %s (config %s); total %.0fs\n", run_dir.c_str(), config_path.c_str(),
              wall.Seconds());
  return 0;
}

}  // namespace rectrain::cli
