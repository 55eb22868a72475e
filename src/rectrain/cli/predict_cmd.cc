// `rectrain predict`: offline scoring of files with a serving model, through the same
// Predictor as `rectrain serve` (docs/serving.md).
#include <algorithm>
#include <cstdio>
#include <optional>

#include "rectrain/base/stopwatch.h"
#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/data/reader.h"
#include "rectrain/io/file.h"
#include "rectrain/serve/predictor.h"
#include "rectrain/serve/publish.h"

namespace rectrain::cli {

int RunPredict(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain predict";
  std::string model_dir, out_path;
  std::vector<std::string> files;
  int64_t threads = 2, readers = 1, batch = 4096;
  std::optional<nn::GemmPrecision> precision;
  FlagParser flags(kCmd, "MODEL_DIR --data FILE [--data FILE ...] --out FILE",
                   "Scores every row of the files (the training data's layout, label column included:\n"
                   "its value is ignored) and writes one line per row: the probability, or for\n"
                   "multi-task and multi-class models the tab-separated outputs. Rows are scored in\n"
                   "file order, by the same code path as `rectrain serve`.");
  flags.Positional("MODEL_DIR", &model_dir, true, "a model written by rectrain export");
  flags.Repeated("data", &files, "data file or glob");
  flags.String("out", &out_path, "output file (one line per row)");
  flags.Int("threads", &threads, "compute threads (default 2)");
  flags.Int("readers", &readers, "parse threads (default 1)");
  flags.Int("batch-size", &batch, "rows per scored batch (default 4096)");
  flags.Enum("precision", &precision, nn::kGemmPrecisions, "GEMM precision (default: the model's)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (files.empty() || out_path.empty()) return ReportError(kCmd, InvalidArgumentError("--data FILE and --out FILE are required"));
  if (threads < 1 || readers < 1 || batch < 1) return ReportError(kCmd, InvalidArgumentError("--threads, --readers and --batch-size must be >= 1"));
  Stopwatch sw;
  auto predictor = serve::LoadModelDir(model_dir, {.threads = static_cast<int>(threads), .verify_checksums = true, .precision = precision});
  if (!predictor.ok()) return ReportError(kCmd, predictor.status());
  data::DataConfig dc = (*predictor)->data_config();
  dc.files = files;
  dc.cache = data::CacheMode::kOff;
  dc.filters.clear();  // every row gets a score, in order
  dc.negative_downsampling = 1.0;
  data::ReadOptions ro;
  ro.batch_size = batch;
  ro.num_threads = static_cast<int>(readers);
  auto reader = data::OpenBatchReader(dc, ro);
  if (!reader.ok()) return ReportError(kCmd, reader.status().WithContext("--data"));
  auto out = io::AtomicFileWriter::Create(out_path);
  if (!out.ok()) return ReportError(kCmd, out.status());
  std::vector<float> probs;
  std::string text;
  int64_t rows = 0;
  const int per_row = (*predictor)->outputs_per_row();
  while (true) {
    auto b = (*reader)->Next();
    if (!b.ok()) return ReportError(kCmd, b.status());
    if (!b->has_value()) break;
    const data::Batch& batch_rows = **b;
    if (Status s = (*predictor)->Predict(batch_rows, &probs); !s.ok()) return ReportError(kCmd, s);
    text.clear();
    for (int64_t r = 0; r < batch_rows.size; ++r) {
      for (int k = 0; k < per_row; ++k) {
        serve::AppendProbability(probs[static_cast<size_t>(r * per_row + k)], &text);
        text += k + 1 < per_row ? '\t' : '\n';
      }
    }
    if (Status s = (*out)->Append(text); !s.ok()) return ReportError(kCmd, s);
    rows += batch_rows.size;
    (*reader)->Recycle(std::move(**b));
  }
  if (Status s = (*out)->Commit(); !s.ok()) return ReportError(kCmd, s);
  const double secs = sw.Seconds();
  std::fprintf(stderr, "rectrain predict: %lld rows scored with model version %lld in %.2f s (%.0f rows/s); %s\n",
               static_cast<long long>(rows), static_cast<long long>((*predictor)->manifest().version), secs,
               static_cast<double>(rows) / std::max(secs, 1e-9), out_path.c_str());
  return 0;
}

}  // namespace rectrain::cli
