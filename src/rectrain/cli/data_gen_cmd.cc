// `rectrain data gen`: writes a synthetic Criteo-format dataset and its FILE.prob truth.
#include <cstdio>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/data/generator.h"

namespace rectrain::cli {

int RunDataGen(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain data gen";
  int64_t rows = 0, seed = 1, threads = 2;
  std::string out, shape = "criteo";
  FlagParser flags(kCmd, "--rows N --out FILE [--seed S] [--shape criteo|seed|easy] [--threads T]",
                   "Generates a Criteo-format TSV (label, I1..In, C1..C26) whose labels come from a\n"
                   "hidden model, and FILE.prob with each row's true click probability. Files made\n"
                   "with different seeds share one truth, so train and valid files can be made apart.");
  flags.Int("rows", &rows, "rows to generate (> 0)");
  flags.String("out", &out, "output TSV path (FILE.prob is written beside it)");
  flags.Int("seed", &seed, "sampling seed (default 1)");
  flags.String("shape", &shape, "criteo (13 dense, 26 cat; default) | seed (50 dense) | easy (small vocabularies)");
  flags.Int("threads", &threads, "generator threads (default 2)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (rows <= 0) return ReportError(kCmd, InvalidArgumentError("--rows must be > 0 (got " + std::to_string(rows) + ")"));
  if (out.empty()) return ReportError(kCmd, InvalidArgumentError("--out FILE is required"));
  if (threads < 1) return ReportError(kCmd, InvalidArgumentError("--threads must be >= 1"));
  data::GenerateConfig config;
  config.rows = rows;
  config.out = out;
  config.seed = static_cast<uint64_t>(seed);
  config.shape = shape;
  config.num_threads = static_cast<int>(threads);
  auto report = data::GenerateDataset(config);
  if (!report.ok()) return ReportError(kCmd, report.status());
  std::printf("wrote %lld rows (%d dense, %d categorical; %.1f MB) to %s and %s.prob in %.1fs\n",
              static_cast<long long>(report->rows), report->num_dense, report->num_sparse,
              static_cast<double>(report->bytes) / 1e6, out.c_str(), out.c_str(), report->seconds);
  return 0;
}

}  // namespace rectrain::cli
