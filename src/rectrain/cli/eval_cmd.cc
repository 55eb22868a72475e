// `rectrain eval`: evaluates a run's final model on data files.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/io/file.h"
#include "rectrain/serve/predictor.h"
#include "rectrain/train/trainer.h"

namespace rectrain::cli {

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
  if (Status s = flags.Parse(args); !s.ok()) return ReportError(kCmd, s);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  if (options.files.empty()) return ReportError(kCmd, InvalidArgumentError("--data FILE is required"));
  if (threads < 0) return ReportError(kCmd, InvalidArgumentError("--threads must be >= 1"));
  options.threads = static_cast<int>(threads);
  options.size_compute_pool = SetComputePoolThreads;
  auto report = train::EvaluateRun(options);
  if (!report.ok()) return ReportError(kCmd, report.status());
  const train::EvalMetrics& m = report->metrics;
  if (!predictions_path.empty()) {
    std::string text;  // as `rectrain predict` and `rectrain serve` write them
    for (float p : report->probs) {
      serve::AppendProbability(p, &text);
      text += '\n';
    }
    if (Status st = io::WriteFileAtomically(predictions_path, text); !st.ok()) {
      return ReportError(kCmd, st.WithContext("--predictions"));
    }
  }
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  if (json) {
    nlohmann::json j = {{"rows", m.rows},      {"positives", m.positives}, {"auc", num(m.auc)},
                        {"logloss", num(m.logloss)}, {"calibration", num(m.calibration)},
                        {"ne", num(m.ne)},     {"seconds", report->seconds}};
    if (report->gauc_requested) {
      j["gauc"] = num(m.gauc);
      j["gauc_groups"] = m.gauc_groups;
    }
    if (!std::isnan(m.accuracy)) {
      j["accuracy"] = m.accuracy;
      j["top5_accuracy"] = num(m.top5_accuracy);
    }
    if (!m.tasks.empty()) {
      nlohmann::json tasks = nlohmann::json::object();
      for (const auto& t : m.tasks) tasks[t.name] = {{"auc", num(t.auc)}, {"logloss", num(t.logloss)}, {"positives", t.positives}};
      j["tasks"] = tasks;
    }
    if (!report->data_source.empty()) j["data_source"] = report->data_source;
    if (report->has_oracle) j["oracle"] = {{"auc", num(report->oracle.auc)}, {"logloss", num(report->oracle.logloss)}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (!report->data_source.empty()) std::printf("data         %s\n", report->data_source.c_str());
  if (!std::isnan(m.accuracy)) {  // a classifier (model.num_classes >= 2)
    std::printf("rows         %lld\naccuracy     %.5f\ntop5         %.5f\nlogloss      %.5f\n",
                static_cast<long long>(m.rows), m.accuracy, m.top5_accuracy, m.logloss);
    return 0;
  }
  std::printf("rows         %lld (%lld positive)\n", static_cast<long long>(m.rows),
              static_cast<long long>(m.positives));
  std::printf("auc          %.5f\n", m.auc);
  std::printf("logloss      %.5f\n", m.logloss);
  if (report->gauc_requested) {
    std::printf("gauc         %.5f (%lld groups with both classes)\n", m.gauc,
                static_cast<long long>(m.gauc_groups));
  }
  std::printf("calibration  %.4f\n", m.calibration);
  std::printf("ne           %.4f\n", m.ne);
  for (const auto& t : m.tasks) std::printf("task %s: auc %.5f logloss %.5f\n", t.name.c_str(), t.auc, t.logloss);
  if (report->has_oracle) {
    std::printf("oracle auc   %.5f\noracle logloss %.5f\n", report->oracle.auc, report->oracle.logloss);
  } else if (!report->oracle_note.empty()) {
    std::printf("(%s)\n", report->oracle_note.c_str());
  }
  return 0;
}

}  // namespace rectrain::cli
