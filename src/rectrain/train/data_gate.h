// rectrain/train/data_gate.h: the data check that `rectrain train` runs before the first step
// (docs/data.md "Data quality", docs/cli.md): the profile of data/profile.h over data.train and
// data.valid (each at most checks.max_rows rows, shared by its files), checked against the
// config's `checks:` thresholds (the same as `rectrain data check`), every violation of both
// splits in one report, and the profiles written to RUN_DIR/data_profile.json.
//
// Example:
//   RECTRAIN_ASSIGN_OR_RETURN(DataGateResult gate, RunDataGate(config, run_dir, 2));
//   if (!gate.violations.empty()) return DataGateError(gate);   // FailedPrecondition, exit 6
//
// Thread safety: a pure function of its arguments (it starts and joins its profile workers).
#pragma once

#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/data/profile.h"

namespace rectrain::train {

struct DataGateResult {
  data::DataProfile train;
  data::DataProfile valid;   // empty when there is no data.valid
  bool has_valid = false;
  // Every violation, "data.train: <message>" then "data.valid: <message>" (CheckProfile order).
  std::vector<std::string> violations;
  std::string profile_path;  // RUN_DIR/data_profile.json
  double seconds = 0;        // wall time of the profiles
};

// Profiles data.train (and data.valid when set; a split whose paths all end in .rtc, the binary
// sample cache, is profiled from its decoded, transformed rows) with `num_threads` workers, applies
// `config.checks` to each, creates `run_dir` if needed and writes
// {"max_rows": N, "violations": [...], "train": <profile>, "valid": <profile>} to
// RUN_DIR/data_profile.json (each profile in FormatProfileJson's shape with its own
// violations). Errors: the profile's (missing file NotFound, unreadable Parquet, a bad schema:
// InvalidArgument with "data.train"/"data.valid" context), or the file cannot be written.
// Violations are not an error here; see DataGateError.
Result<DataGateResult> RunDataGate(const config::TrainConfig& config, const std::string& run_dir,
                                   int num_threads);

// The one report of every violation, as FailedPrecondition:
// "data check before training failed: N violation(s) (profile: RUN_DIR/data_profile.json; skip
//  with --skip-data-check or checks.before_train: false)\n  data.train: ...\n  data.valid: ..."
// OK when there are none.
Status DataGateError(const DataGateResult& result);

// One line for the log: "data check passed: data.train 200000 rows profiled (label rate
// 0.2543), data.valid 50000 rows (0.2511) in 0.4 s -> RUN_DIR/data_profile.json".
std::string DataGateSummary(const DataGateResult& result);

}  // namespace rectrain::train
