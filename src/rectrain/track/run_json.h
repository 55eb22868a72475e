// rectrain/track/run_json.h: the JSON shapes of runs, run details and comparisons — one
// definition shared by the REST API (webui/tracking_api.cc) and `rectrain runs ... --json`
// (runs_report.cc), so the two can never drift apart. Shapes are documented in docs/tracking.md.
// Include only from .cc files: nlohmann/json is costly to compile (ENVIRONMENT.md).
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "rectrain/track/tracking_store.h"

namespace rectrain::track {

// A Run object: id, name, status, times, host, pid, group/parent, git commit, tags, final
// metrics (NaN dumps as null).
nlohmann::json RunSummaryJson(const RunSummary& run);
// A Run object plus config_yaml, params, data_files, artifacts and metric_keys.
nlohmann::json RunDetailJson(const RunDetail& detail);
// {"runs": [Run...], "differing_params": [{key, values}], "final_metrics": [{key, values}]}.
nlohmann::json RunComparisonJson(const RunComparison& comparison);

}  // namespace rectrain::track
