// rectrain/train/checkpoint.h: saving and restoring the complete training state (format:
// docs/formats/checkpoint.md).
//
// A checkpoint is a directory:
//   meta.json          step, epoch, rows consumed in the epoch, early-stopping state, config hash
//   dense.bin          every dense parameter (by name) + the dense optimizer's state, checksummed
//   tables/<name>.bin  one per embedding table, written by EmbeddingTable::Save
// It is written into "<dir>.tmp" and renamed onto <dir> only when complete, so a crash never
// leaves a half-written checkpoint under its final name. The final model (RUN_DIR/model/) has
// the same layout.
//
// Thread safety: functions are reentrant; the model, optimizer and tables passed in must not be
// used concurrently (the trainer calls these between steps).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/optim/optimizer.h"

namespace rectrain::train {

inline constexpr int kCheckpointVersion = 1;

struct CheckpointMeta {
  int64_t step = 0;                 // steps completed (the next step is `step`, 0-based)
  int64_t epoch = 0;                // epoch in progress, 0-based
  int64_t rows_in_epoch = 0;        // rows of that epoch already consumed (reader skip_rows)
  int64_t rows_read_total = 0;      // training rows consumed over all epochs
  int64_t rows_rejected_total = 0;
  double train_seconds = 0;         // training wall time over all sessions
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // early-stopping metric
  int64_t best_step = -1;
  int64_t evals_without_improvement = 0;
  int64_t last_eval_step = -1;
  uint64_t config_hash = 0;
  std::string model_type;
  std::vector<std::string> tables;  // table names, in model order
};

// dense.bin: params (names and sizes must match on read) then optimizer state spans.
[[nodiscard]] Status WriteDenseFile(const std::string& path,
                                    std::span<const optim::ParamRef> params,
                                    std::span<const std::span<float>> optimizer_state);
// Fills params (and the optimizer state unless `optimizer_state` is empty). Errors: NotFound;
// DataLoss (bad magic, checksum mismatch, truncation); InvalidArgument (a parameter's name or
// size differs from the model's, naming both).
[[nodiscard]] Status ReadDenseFile(const std::string& path, std::span<const optim::ParamRef> params,
                                   std::span<const std::span<float>> optimizer_state);

// Writes a checkpoint directory atomically (see top comment), replacing an existing `dir`.
// `optimizer` may be null, which writes an empty optimizer state.
[[nodiscard]] Status WriteCheckpoint(const std::string& dir, const CheckpointMeta& meta,
                                     std::span<const optim::ParamRef> params,
                                     optim::Optimizer* optimizer,
                                     std::span<embedding::EmbeddingTable* const> tables);

// Reads meta.json only. NotFound / DataLoss (unparsable) / InvalidArgument (newer version).
Result<CheckpointMeta> ReadCheckpointMeta(const std::string& dir);

// Restores params, the optimizer state (skipped when `optimizer` is null) and every table.
// The table names must match meta.tables (InvalidArgument otherwise).
Result<CheckpointMeta> ReadCheckpoint(const std::string& dir,
                                      std::span<const optim::ParamRef> params,
                                      optim::Optimizer* optimizer,
                                      std::span<embedding::EmbeddingTable* const> tables);

// Complete checkpoints ("step-<N>" directories with a meta.json) under `checkpoints_dir`,
// sorted by N ascending. A missing directory is an empty list.
std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir);

// Removes all but the newest `keep` checkpoints (and leftover "*.tmp" directories).
[[nodiscard]] Status PruneCheckpoints(const std::string& checkpoints_dir, int64_t keep);

}  // namespace rectrain::train
