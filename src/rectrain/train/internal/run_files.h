// rectrain/train/internal/run_files.h (internal to train/): the files a run writes beside its
// checkpoints: summary.json (trainer.h SummaryJson, docs/formats/summary.md), one evals.jsonl line
// per evaluation, and the final model directory published from the last checkpoint.
// Thread safety: pure functions; the files of one run are written by its rank 0 only.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/base/status.h"
#include "rectrain/train/metrics.h"
#include "rectrain/train/trainer.h"

namespace rectrain::train::internal {

// Hard-links (or copies) every file of checkpoint `src` into a fresh `dst`, atomically (through
// `dst`.tmp): the final model is the last checkpoint, without writing large tables twice.
Status PublishModelDir(const std::string& src, const std::string& dst);

// One evals.jsonl line (without the newline) for the evaluation at `step` of `epoch`, taken at
// `unix_seconds` (docs/formats/summary.md).
std::string EvalRecordLine(int64_t step, int64_t epoch, double unix_seconds, const EvalMetrics& m);

// train.log's line for an evaluation: "eval (WHY) @ step N: auc A logloss L ... (R rows, S s)";
// a classifier's accuracy, top-5 and logloss; `gauc` adds the GAUC; a multi-task model its tasks.
std::string EvalLogLine(const std::string& why, int64_t step, const EvalMetrics& m, bool classifier, bool gauc,
                        double seconds);

// train.log's last line: "done: STATUS, N steps, S samples/s, valid auc A logloss L (oracle ...)".
std::string DoneLine(const TrainSummary& s, bool classifier);

// Appends `line` and a newline to `path` and flushes at once, so a process watching the file (a
// tune study) sees every line as it lands. Best effort: a run does not fail on it.
void AppendLine(const std::string& path, const std::string& line);

// Writes summary.json atomically; the error, if any, is returned for the caller to log.
Status WriteSummaryFile(const std::string& path, const TrainSummary& summary);

}  // namespace rectrain::train::internal
