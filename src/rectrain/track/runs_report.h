// rectrain/track/runs_report.h: what `rectrain runs list|show|compare|delete|export` prints:
// aligned terminal tables, or JSON (--json) with exactly the shapes of the REST API
// (docs/tracking.md), or CSV. Pure formatting over the store's query results, plus
// RunRunsCommand(), the whole subcommand (flag parsing included) as one call.
// Times in tables are local time ("2026-05-01 14:03:07"); JSON keeps Unix seconds.
// Thread safety: the Format* functions are pure; RunRunsCommand uses the store's guarantees.
//
// Example (the whole of `rectrain runs ...` in the CLI):
//   RECTRAIN_ASSIGN_OR_RETURN(auto store, track::TrackingStore::Open(ws + "/rectrain.db"));
//   RECTRAIN_ASSIGN_OR_RETURN(std::string text, track::RunRunsCommand(*store, args));
//   std::cout << text;
#pragma once

#include <span>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::track {

// Table: ID NAME STATUS STARTED DURATION TAGS and one column per final metric key (the first
// `kMaxMetricColumns` keys by name; a note names the rest), then "N of TOTAL runs".
// JSON: {"total":N,"runs":[Run...]} (Run as in GET /api/runs).
inline constexpr int kMaxMetricColumns = 8;
Result<std::string> FormatRunList(const RunList& list, bool json);

// Table: the summary fields, then sections tags, final metrics, metrics (key, points, steps,
// last value), params, data files, artifacts. JSON: as GET /api/runs/{id}.
Result<std::string> FormatRunDetail(const RunDetail& run, bool json);

// Table with one column per run: name, status, start, final metrics (union), then only the
// params that differ ("-" = absent). JSON: as GET /api/compare.
Result<std::string> FormatComparison(const RunComparison& cmp, bool json);

// "deleted run 3\n" per id, or {"deleted":[3,4]}.
std::string FormatDeleted(std::span<const RunId> ids, bool json);

// Runs one `rectrain runs` subcommand; args[0] is the verb. Returns the text to print.
//   list    [FILTER] [--sort KEY] [--asc] [--limit N] [--offset N] [--json]
//   show    ID [--json]
//   compare ID ID... [--json]          (2..10 ids)
//   delete  ID...   [--json]
//   export  [FILTER] [--sort KEY] [--asc] [--limit N]   runs as CSV
//   export  --metrics ID                                one run's series as CSV
// FILTER: --status S  --tag T (repeatable)  --name SUBSTR  --group G  --parent ID
//         --param KEY=VALUE (repeatable)  --metric 'auc>=0.8' (repeatable).
// Flags also take the --flag=value form. Errors are InvalidArgument naming the bad flag or
// value (and "unknown verb ..."), or the store's errors (NotFound "run 42 not found").
Result<std::string> RunRunsCommand(TrackingStore& store, std::span<const std::string> args);

// The usage text of RunRunsCommand (for --help).
std::string RunsCommandUsage();

}  // namespace rectrain::track
