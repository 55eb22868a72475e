// `rectrain eval`: evaluates a run's final model on data files.
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/io/file.h"
#include "rectrain/serve/predictor.h"
#include "rectrain/train/trainer.h"

namespace rectrain::cli {

namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// --predictions: each row's probability, one a line, as `rectrain predict` and `rectrain serve`
// write them.
Status WritePredictions(const std::string& path, const std::vector<float>& probs) {
  std::string text;
  for (float p : probs) {
    serve::AppendProbability(p, &text);
    text += '\n';
  }
  return io::WriteFileAtomically(path, text);
}

// --json: the metrics as one object (null where a metric is not finite).
nlohmann::json ReportJson(const train::EvalReport& r) {
  const train::EvalMetrics& m = r.metrics;
  nlohmann::json j = {{"rows", m.rows},      {"positives", m.positives}, {"auc", Num(m.auc)},
                      {"logloss", Num(m.logloss)}, {"calibration", Num(m.calibration)},
                      {"ne", Num(m.ne)},     {"seconds", r.seconds}};
  if (r.gauc_requested) {
    j["gauc"] = Num(m.gauc);
    j["gauc_groups"] = m.gauc_groups;
  }
  if (!std::isnan(m.accuracy)) {
    j["accuracy"] = m.accuracy;
    j["top5_accuracy"] = Num(m.top5_accuracy);
  }
  if (!m.tasks.empty()) {
    nlohmann::json tasks = nlohmann::json::object();
    for (const auto& t : m.tasks) tasks[t.name] = {{"auc", Num(t.auc)}, {"logloss", Num(t.logloss)}, {"positives", t.positives}};
    j["tasks"] = tasks;
  }
  if (!r.data_source.empty()) j["data_source"] = r.data_source;
  if (r.has_oracle) j["oracle"] = {{"auc", Num(r.oracle.auc)}, {"logloss", Num(r.oracle.logloss)}};
  return j;
}

// The metrics as text, one a line: a classifier's accuracy, or AUC, logloss and the rest.
void PrintReport(const train::EvalReport& r) {
  const train::EvalMetrics& m = r.metrics;
  if (!r.data_source.empty()) std::printf("data         %s\n", r.data_source.c_str());
  if (!std::isnan(m.accuracy)) {  // a classifier (model.num_classes >= 2)
    std::printf("rows         %lld\naccuracy     %.5f\ntop5         %.5f\nlogloss      %.5f\n",
                static_cast<long long>(m.rows), m.accuracy, m.top5_accuracy, m.logloss);
    return;
  }
  std::printf("rows         %lld (%lld positive)\n", static_cast<long long>(m.rows),
              static_cast<long long>(m.positives));
  std::printf("auc          %.5f\n", m.auc);
  std::printf("logloss      %.5f\n", m.logloss);
  if (r.gauc_requested) {
    std::printf("gauc         %.5f (%lld groups with both classes)\n", m.gauc,
                static_cast<long long>(m.gauc_groups));
  }
  std::printf("calibration  %.4f\n", m.calibration);
  std::printf("ne           %.4f\n", m.ne);
  for (const auto& t : m.tasks) std::printf("task %s: auc %.5f logloss %.5f\n", t.name.c_str(), t.auc, t.logloss);
  if (r.has_oracle) {
    std::printf("oracle auc   %.5f\noracle logloss %.5f\n", r.oracle.auc, r.oracle.logloss);
  } else if (!r.oracle_note.empty()) {
    std::printf("(%s)\n", r.oracle_note.c_str());
  }
}

}  // namespace

int RunEval(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain eval";
  train::EvalOptions options;
  bool json = false;
  int64_t threads = 0;
  std::string predictions_path;
  FlagParser flags(kCmd, "RUN_DIR --data FILE [--data FILE ...] [--group-key COL] [--json]",
                   "Loads RUN_DIR/model (with RUN_DIR/config.yaml) and prints AUC, logloss, GAUC (with\n"
                   "a group key), calibration and NE on the data; when every FILE has a FILE.prob\n"
                   "side file (rectrain data gen), also the oracle AUC/logloss of the true probabilities.");
  flags.Positional("RUN_DIR", &options.run_dir, true, "a run directory written by rectrain train");
  flags.Repeated("data", &options.files, "data file or glob, same schema as training");
  flags.String("group-key", &options.group_key, "column for GAUC (e.g. a user id)");
  flags.Int("threads", &threads, "compute threads (default: the run's)");
  flags.Bool("json", &json, "print JSON instead of text");
  flags.String("predictions", &predictions_path, "also write each row's probability (file order, one per line)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (options.files.empty()) return ReportError(kCmd, InvalidArgumentError("--data FILE is required"));
  if (threads < 0) return ReportError(kCmd, InvalidArgumentError("--threads must be >= 1"));
  options.threads = static_cast<int>(threads);
  options.size_compute_pool = SetComputePoolThreads;
  auto report = train::EvaluateRun(options);
  if (!report.ok()) return ReportError(kCmd, report.status());
  if (!predictions_path.empty()) {
    if (Status st = WritePredictions(predictions_path, report->probs); !st.ok()) {
      return ReportError(kCmd, st.WithContext("--predictions"));
    }
  }
  if (json) {
    std::printf("%s\n", ReportJson(*report).dump(2).c_str());
  } else {
    PrintReport(*report);
  }
  return 0;
}

}  // namespace rectrain::cli
