// rectrain/serve/export.h: `rectrain export`: a finished run's final model written as a serving
// model (model_package.h): dense parameters and embedding rows without optimizer state,
// optionally only the rows updated at least min_count times, optionally as fp16 or int8.
// Thread safety: one export per process at a time (it sets the OpenMP thread count).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/serve/model_package.h"

namespace rectrain::serve {

struct ExportOptions {
  std::string run_dir;
  std::string out_dir;          // created; must not exist (unless overwrite)
  int64_t version = 0;          // 0: the out directory's name when it is a number, else 1
  int64_t min_count = 0;        // keep rows updated at least this many times (0, 1: every row)
  RowType row_type = RowType::kFp32;
  bool overwrite = false;
  int threads = 0;              // 0: the run's
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

// Errors: NotFound (no trained model in the run), AlreadyExists (out_dir exists), the loader's
// and the file system's.
Result<ExportReport> ExportRun(const ExportOptions& options);

// The directory an export to `out_dir` writes before renaming it onto `out_dir`:
// "<out_dir>.tmp-<hostname>-<pid>" (the server ignores names that are not numbers).
std::string ExportTempDir(const std::string& out_dir);

// Removes the temporary export directories in `parent` ("*.tmp-<hostname>-<pid>", and
// "*.tmp-<pid>" of earlier builds) whose process ran on this host and no longer runs; returns
// their paths. Those of other hosts (a shared file system) and of running exports are left.
std::vector<std::string> RemoveStaleExportDirs(const std::string& parent);

}  // namespace rectrain::serve
