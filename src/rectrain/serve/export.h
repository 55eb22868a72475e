// rectrain/serve/export.h: a trained model written as a serving model (model_package.h): dense
// parameters and embedding rows without optimizer state, optionally only the rows updated at
// least min_count times, optionally as fp16 or int8. `rectrain export` loads a finished run's
// model (train/trained_model.h) and calls ExportModel; it needs nothing of the trainer itself.
// Thread safety: reentrant; the source's tables must not change while an export reads them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/embedding/embedding_table.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/serve/model_package.h"

namespace rectrain::serve {

// What a serving model is written from. `description` gives the fields that describe the model
// (model_type, trained_steps, source_run, layout, dense/sparse/task names, feature_columns,
// negative_downsampling); the writer fills the rest (version, created, min_count, files, tables).
struct ModelSource {
  Manifest description;
  std::string config_yaml;                            // the run's resolved config
  std::span<const optim::ParamRef> params;            // the dense parameters, Model::Params() order
  std::vector<const embedding::EmbeddingTable*> tables;  // in model order
};

struct ExportOptions {
  std::string out_dir;          // created; must not exist (unless overwrite)
  int64_t version = 0;          // 0: the out directory's name when it is a number, else 1
  int64_t min_count = 0;        // keep rows updated at least this many times (0, 1: every row)
  RowType row_type = RowType::kFp32;
  bool overwrite = false;
};

struct ExportReport {
  Manifest manifest;
  int64_t rows_kept = 0, rows_dropped = 0;
  int64_t bytes = 0;            // of the package's files
  double seconds = 0;
  // Temporary directories of earlier exports that died (kill -9, a crash) before renaming them,
  // removed before this one started (RemoveStaleExportDirs).
  std::vector<std::string> removed_stale;
};

// AlreadyExists when out_dir exists (and !overwrite), InvalidArgument for bad options: what
// ExportModel checks first, for callers to check before they load a model.
Status CheckExportOptions(const ExportOptions& options);

// Writes `source` into options.out_dir (through ExportTempDir, renamed when complete).
// Errors: CheckExportOptions's, the file system's.
Result<ExportReport> ExportModel(const ModelSource& source, const ExportOptions& options);

// The directory `out` is written in (ExportTempDir, with a tables/ subdirectory), made after
// removing the temporary directories of dead exports beside it (their paths in *removed_stale).
Result<std::string> BeginExportDir(const std::filesystem::path& out, std::vector<std::string>* removed_stale);
// Renames a complete `tmp` onto `out` (which must not exist).
Status CommitExportDir(const std::string& tmp, const std::filesystem::path& out);
// The current time, UTC, ISO 8601 (a manifest's "created").
std::string UtcNow();

// The directory an export to `out_dir` writes before renaming it onto `out_dir`:
// "<out_dir>.tmp-<hostname>-<pid>" (the server ignores names that are not numbers).
std::string ExportTempDir(const std::string& out_dir);

// Removes the temporary export directories in `parent` ("*.tmp-<hostname>-<pid>", and
// "*.tmp-<pid>" of earlier builds) whose process ran on this host and no longer runs; returns
// their paths. Those of other hosts (a shared file system) and of running exports are left.
std::vector<std::string> RemoveStaleExportDirs(const std::string& parent);

}  // namespace rectrain::serve
