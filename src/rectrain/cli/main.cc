// rectrain: the command-line tool. Thin: parses flags and calls the library (docs/cli.md).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/config/binder.h"

#ifndef RECTRAIN_VERSION
#define RECTRAIN_VERSION "0.0.0"
#endif

namespace rectrain::cli {
namespace {

const char kUsage[] =
    "usage: rectrain <command> [args]\n"
    "\n"
    "commands:\n"
    "  data gen     generate a synthetic Criteo-format dataset with a known truth (FILE.prob)\n"
    "  train        train a model from a YAML config (docs/config.md)\n"
    "  eval         evaluate a run's final model on data files\n"
    "  export       write a run's final model as a versioned serving model (docs/serving.md)\n"
    "  publish      publish a run's final model into a served versions directory as a delta or a full export\n"
    "  serve        serve a model over HTTP/JSON: micro-batching, hot reload, /metrics\n"
    "  predict      score data files offline with a serving model\n"
    "  tune         search hyperparameters: parallel trials, ASHA / median stopping, TPE (docs/tune.md)\n"
    "  doctor       check a machine or every rank of an MPI allocation before a long job\n"
    "  runs         list, show, compare, delete and export tracked runs\n"
    "  ui           serve the web UI, REST API and /metrics over the tracking store\n"
    "  quickstart   generate data, train DeepFM and compare its AUC with the oracle (~1 min)\n"
    "  help         show this help, or `rectrain help <command>`\n"
    "\n"
    "flags: --version, --help. `rectrain <command> --help` describes a command's flags.\n"
    "docs: docs/cli.md (commands, exit codes), docs/config.md (every config key)\n";

}  // namespace

int Dispatch(const std::string& cmd, const std::vector<std::string>& rest) {
  if (cmd == "train") return RunTrain(rest);
  if (cmd == "eval") return RunEval(rest);
  if (cmd == "export") return RunExport(rest);
  if (cmd == "publish") return RunPublish(rest);
  if (cmd == "serve") return RunServe(rest);
  if (cmd == "predict") return RunPredict(rest);
  if (cmd == "tune") return RunTune(rest);
  if (cmd == "doctor") return RunDoctor(rest);
  if (cmd == "quickstart") return RunQuickstart(rest);
  if (cmd == "runs") return RunRuns(rest);
  if (cmd == "ui") return RunUi(rest);
  if (cmd == "data") {
    if (rest.empty() || rest[0] == "--help" || rest[0] == "-h") {
      std::printf("usage: rectrain data gen --rows N --out FILE [--seed S] [--shape criteo|seed|easy] [--threads T]\n"
                  "       rectrain data check CONFIG [--set KEY=VALUE]... [--split train|valid] [--json]\n"
                  "       rectrain data stats FILES... [--format F] [--header] [--json]\n"
                  "       rectrain data cache CONFIG [--split train|valid|all] [--set KEY=VALUE]... [--force]\n"
                  "       rectrain data convert INPUT... --to cache|tsv|parquet --out PATH [--config CONFIG | schema flags]\n"
                  "       rectrain data produce FILE --to kafka://HOSTS/TOPIC|redis://HOST:PORT/KEY [--rate N]\n");
      return rest.empty() ? 2 : 0;
    }
    if (rest[0] == "gen") return RunDataGen(std::vector<std::string>(rest.begin() + 1, rest.end()));
    if (rest[0] == "check") return RunDataCheck(std::vector<std::string>(rest.begin() + 1, rest.end()));
    if (rest[0] == "stats") return RunDataStats(std::vector<std::string>(rest.begin() + 1, rest.end()));
    if (rest[0] == "cache") return RunDataCache(std::vector<std::string>(rest.begin() + 1, rest.end()));
    if (rest[0] == "convert") return RunDataConvert(std::vector<std::string>(rest.begin() + 1, rest.end()));
    if (rest[0] == "produce") return RunDataProduce(std::vector<std::string>(rest.begin() + 1, rest.end()));
    return ReportError("rectrain data", InvalidArgumentError("unknown subcommand \"" + rest[0] +
                                                             "\"; available: gen, check, stats, cache, convert, produce"));
  }
  std::string msg = "unknown command \"" + cmd + "\"";
  const char* known[] = {"data", "train", "tune", "eval", "export", "publish", "serve", "predict", "doctor", "quickstart", "runs", "ui", "help"};
  for (const char* k : known) {
    if (config::EditDistance(cmd, k) <= 2) {
      msg += "; did you mean " + std::string(k) + "?";
      break;
    }
  }
  std::fprintf(stderr, "rectrain: error: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

}  // namespace rectrain::cli

int main(int argc, char** argv) {
  rectrain::cli::ReexecWithComputePoolEnv(argv);
  using rectrain::cli::Dispatch;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(rectrain::cli::kUsage, stderr);
    return 2;
  }
  const std::string& cmd = args[0];
  if (cmd == "--version" || cmd == "version") {
    std::printf("rectrain %s\n", RECTRAIN_VERSION);
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    if (args.size() >= 2) {
      std::vector<std::string> rest(args.begin() + 2, args.end());
      rest.push_back("--help");
      if (args[1] == "data") rest.insert(rest.begin(), "gen");
      return Dispatch(args[1], rest);
    }
    std::fputs(rectrain::cli::kUsage, stdout);
    return 0;
  }
  // Before the command starts any thread: SIGINT/SIGTERM go to one watcher thread (stop_signals.h).
  rectrain::cli::StartStopSignalWatcher();
  return Dispatch(cmd, std::vector<std::string>(args.begin() + 1, args.end()));
}
