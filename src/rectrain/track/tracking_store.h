// rectrain/track/tracking_store.h: the experiment tracking store, one SQLite database (WAL mode)
// per workspace. It records every run (name, status, host/pid, tags, group, parent, git commit,
// resolved config YAML and its flattened key/values), the data files it read (with
// fingerprints), metrics over steps, final metrics and artifacts; and answers the queries of
// `rectrain runs` and the web UI (filtered/sorted/paged lists, detail, downsampled series,
// comparison, groups, CSV export).
//
// Concurrency: any number of processes may open the same file and write at once (tune trials,
// several trainers, the UI). Every write is one `BEGIN IMMEDIATE` transaction; a writer that
// finds the database locked waits (SQLite busy timeout) and then retries the whole
// transaction with backoff until Options::write_retry_ms has passed, so no row is lost under
// contention; only then does it return kUnavailable. Readers never block writers (WAL).
// Thread safety: a TrackingStore is safe to use from several threads (one internal mutex
// serialises its single connection). For parallel readers in one process, open several stores.
//
// Crash detection: a run stays 'running' if its process dies. ReconcileStaleRuns() (run by
// Open() unless disabled) marks as 'failed' each running run whose process is gone on this
// host (pid not alive, or alive with a different start time: pid reuse), or, for runs of other
// hosts, whose heartbeat is older than Options::stale_heartbeat_s. LogMetrics() and Heartbeat()
// refresh the heartbeat.
//
// Example (what `rectrain train` does):
//   RECTRAIN_ASSIGN_OR_RETURN(auto store, track::TrackingStore::Open("ws/rectrain.db"));
//   track::RunInfo info;  info.name = "deepfm-lr1e-3";  info.config_yaml = resolved_yaml;
//   RECTRAIN_ASSIGN_OR_RETURN(track::RunId run, store->StartRun(info));
//   std::pair<std::string, double> m[] = {{"train/loss", 0.45}, {"train/samples_per_s", 9e5}};
//   RECTRAIN_RETURN_IF_ERROR(store->LogMetrics(run, step, m));
//   RECTRAIN_RETURN_IF_ERROR(store->SetFinal(run, finals));
//   RECTRAIN_RETURN_IF_ERROR(store->FinishRun(run, track::RunStatus::kFinished));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/track/downsample.h"

namespace rectrain::track {

namespace internal {
class Db;
}

using RunId = int64_t;
using KeyValue = std::pair<std::string, std::string>;
using MetricValue = std::pair<std::string, double>;

enum class RunStatus { kRunning, kFinished, kFailed, kStopped };
// "running" | "finished" | "failed" | "stopped" (the strings stored in the database).
std::string_view RunStatusName(RunStatus s);
// Inverse of RunStatusName; InvalidArgument naming the valid values otherwise.
Result<RunStatus> ParseRunStatus(std::string_view s);

// What StartRun records. Empty host/pid default to this process.
struct RunInfo {
  std::string name;                   // Free text; need not be unique. Empty -> "run-<id>".
  std::vector<std::string> tags;      // User tags, e.g. "baseline".
  std::string group_id;               // Groups runs (a tune study, a sweep); "" = none.
  std::optional<RunId> parent_id;     // E.g. the tune driver's run; must exist.
  std::string git_commit;             // Commit of the config directory, "" if not a git tree.
  std::string config_yaml;            // The fully resolved config.
  // Flattened config ("model.mlp.0" -> "400"). If empty and config_yaml is not, StartRun
  // flattens config_yaml itself (FlattenYaml).
  std::vector<KeyValue> params;
  std::string host;                   // "" -> gethostname().
  int64_t pid = 0;                    // 0 -> getpid().
};

struct DataFile {
  std::string path;
  int64_t size_bytes = 0;
  std::string fingerprint;  // E.g. a content hash; the store does not interpret it.
};

struct Artifact {
  std::string kind;  // "checkpoint", "export", "log", ...
  std::string path;
  double created_time = 0.0;
};

// One row of a run list (no config text, no series).
struct RunSummary {
  RunId id = 0;
  std::string name;
  RunStatus status = RunStatus::kRunning;
  std::string status_message;  // Why a run failed/stopped; "" otherwise.
  double start_time = 0.0;     // Unix seconds.
  std::optional<double> end_time;
  double heartbeat_time = 0.0;
  std::string host;
  int64_t pid = 0;
  std::string group_id;
  std::optional<RunId> parent_id;
  std::string git_commit;
  std::vector<std::string> tags;              // Sorted.
  std::vector<MetricValue> final_metrics;     // Sorted by key.
};

struct RunDetail {
  RunSummary summary;
  std::string config_yaml;
  std::vector<KeyValue> params;        // Sorted by key.
  std::vector<DataFile> data_files;    // Sorted by path.
  std::vector<Artifact> artifacts;     // Sorted by (kind, path).
  struct MetricKeyInfo {
    std::string key;
    int64_t count = 0;
    int64_t first_step = 0, last_step = 0;
    double last_value = 0.0;
  };
  std::vector<MetricKeyInfo> metric_keys;  // Sorted by key.
};

// A threshold on a final metric: `key op value`, op one of < <= > >= = !=.
struct MetricThreshold {
  std::string key;
  std::string op;
  double value = 0.0;
};
// Parses "auc>=0.8" (also "<", "<=", ">", "=", "!="); InvalidArgument otherwise.
Result<MetricThreshold> ParseMetricThreshold(std::string_view text);

struct RunFilter {
  std::optional<RunStatus> status;
  std::vector<std::string> tags;             // A run must carry all of them.
  std::string name_contains;                 // Case-insensitive (ASCII) substring of the name.
  std::optional<std::string> group_id;
  std::optional<RunId> parent_id;
  std::vector<KeyValue> params;              // Exact key=value matches, all required.
  std::vector<MetricThreshold> metrics;      // On final metrics, all required.
  // Sort: "id", "name", "status", "start_time", "end_time", "metric:<key>" (final metric;
  // runs without it sort last) or "param:<key>" (text order). Anything else is InvalidArgument.
  std::string sort_by = "start_time";
  bool descending = true;
  int64_t limit = 100;   // 1..10000 (InvalidArgument otherwise).
  int64_t offset = 0;    // >= 0.
};

struct RunList {
  std::vector<RunSummary> runs;  // The requested page.
  int64_t total = 0;             // All runs matching the filter (for paging).
};

struct MetricSeries {
  std::string key;
  int64_t total_points = 0;          // Points stored.
  bool downsampled = false;          // True when points.size() < total_points.
  std::vector<MetricPoint> points;   // In step order.
};

// Side-by-side view of several runs (the order of `runs` follows the requested ids).
struct RunComparison {
  std::vector<RunSummary> runs;
  struct Row {
    std::string key;
    std::vector<std::optional<std::string>> values;  // One per run; nullopt = key absent.
  };
  std::vector<Row> differing_params;  // Only keys whose values differ (absence differs too).
  struct MetricRow {
    std::string key;
    std::vector<std::optional<double>> values;
  };
  std::vector<MetricRow> final_metrics;  // Union of final metric keys, sorted.
};

struct GroupSummary {
  std::string group_id;  // The group id; with GroupBy::kParent the parent run id in decimal;
                         // with GroupBy::kTag the tag.
  int64_t runs = 0, running = 0, finished = 0, failed = 0, stopped = 0;
  double first_start_time = 0.0, last_start_time = 0.0;
};

// How ListGroups() forms groups: by RunInfo::group_id (runs without one are in no group), by
// parent run (runs without a parent are in none), or by tag (a run is in one group per tag).
enum class GroupBy { kGroupId, kParent, kTag };

class TrackingStore {
 public:
  struct Options {
    int busy_timeout_ms = 2000;        // One wait inside SQLite before a retry.
    int write_retry_ms = 60000;        // Total time a write keeps retrying on a locked db.
    double stale_heartbeat_s = 600.0;  // For runs of other hosts.
    bool reconcile_on_open = true;
    std::string host;                  // "" -> gethostname(); tests override.
    std::function<double()> now;       // Unix seconds; null -> system clock. Tests override.
  };

  // Opens (creating if needed) the store at `path`, applies pending schema migrations and,
  // unless disabled, reconciles stale runs. Errors: FailedPrecondition if the file's schema is
  // newer than this build ("tracking database <path> has schema version 7, newer than 1 which
  // this build supports; upgrade rectrain"); DataLoss if the file is not a SQLite database;
  // NotFound/PermissionDenied if it cannot be created.
  static Result<std::unique_ptr<TrackingStore>> Open(const std::string& path);
  static Result<std::unique_ptr<TrackingStore>> Open(const std::string& path, Options options);
  ~TrackingStore();

  // The schema version recorded in the database.
  Result<int64_t> SchemaVersion();

  // ---- Writes (each is one transaction) ----
  // Records a new run with status 'running'. InvalidArgument if parent_id does not exist.
  Result<RunId> StartRun(const RunInfo& info);
  // Appends one value per key at `step` (all in one transaction) and refreshes the heartbeat.
  // Non-finite values are kept (NaN shows a diverged loss; SQLite stores it as NULL and it reads
  // back as NaN). NotFound for an unknown run.
  Status LogMetrics(RunId run, int64_t step, std::span<const MetricValue> values);
  // Upserts final metrics (e.g. best validation AUC). NotFound for an unknown run.
  Status SetFinal(RunId run, std::span<const MetricValue> values);
  Status AddArtifact(RunId run, std::string_view kind, std::string_view path);
  Status AddDataFile(RunId run, const DataFile& file);
  Status Heartbeat(RunId run);
  // Sets the terminal status (InvalidArgument for kRunning), end time and message. A run that
  // reconciliation marked failed can still be finished by its own process (last word wins).
  Status FinishRun(RunId run, RunStatus status, std::string_view message = "");
  // Marks a finished/failed/stopped run running again for this process (host, pid, heartbeat;
  // end time and message cleared): a resumed training run, or a tune trial promoted to its next
  // rung, keeps one record and one metric history. NotFound for an unknown run.
  Status ReopenRun(RunId run);
  // Deletes the run and all its rows. NotFound for an unknown run.
  Status DeleteRun(RunId run);
  // Marks stale running runs failed (see the top comment); returns how many.
  Result<int64_t> ReconcileStaleRuns();

  // ---- Queries ----
  Result<RunList> ListRuns(const RunFilter& filter);
  Result<RunDetail> GetRun(RunId run);
  // The series of `key` for `run`, reduced to at most max_points points by min/max buckets
  // (max_points <= 0: all). NotFound for an unknown run; an unknown key gives an empty series.
  Result<MetricSeries> GetMetrics(RunId run, std::string_view key, int64_t max_points);
  // The same restricted to steps in [min_step, max_step] (a zoomed chart): total_points counts
  // the points in the range. InvalidArgument if min_step > max_step.
  Result<MetricSeries> GetMetrics(RunId run, std::string_view key, int64_t max_points,
                                  int64_t min_step, int64_t max_step);
  // The params of several runs in one query (runs-table columns, group plots): one vector per
  // id, in the order of `ids`, each sorted by key; only `keys` if non-empty, else all. An id
  // that does not exist (e.g. deleted meanwhile) gets an empty vector. InvalidArgument for more
  // than 10000 ids.
  Result<std::vector<std::vector<KeyValue>>> GetParams(std::span<const RunId> ids,
                                                       std::span<const std::string> keys = {});
  // InvalidArgument if ids is empty, has more than 100 entries or names a run twice; NotFound
  // naming a missing id.
  Result<RunComparison> CompareRuns(std::span<const RunId> ids);
  Result<std::vector<GroupSummary>> ListGroups();  // = ListGroups(GroupBy::kGroupId)
  // Groups with status counts, the most recently started group first.
  Result<std::vector<GroupSummary>> ListGroups(GroupBy by);
  // CSV (RFC 4180) of the runs matching `filter` (limit/offset apply): columns id, name,
  // status, start_time, end_time, host, group_id, tags (';'-joined), then "param:<key>" for every
  // param key and "metric:<key>" for every final metric key among those runs.
  Result<std::string> ExportRunsCsv(const RunFilter& filter);
  // CSV of one run's series: key, step, value, wall_time.
  Result<std::string> ExportMetricsCsv(RunId run);

 private:
  TrackingStore(std::unique_ptr<internal::Db> db, Options options, std::string path);
  Status Migrate();
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, retrying on a locked database.
  Status WriteTxn(const std::function<Status()>& body);
  Status CheckRunExists(RunId run);
  double Now() const;
  Result<RunList> ListRunsLocked(const RunFilter& filter);

  std::mutex mu_;
  std::unique_ptr<internal::Db> db_;  // Guarded by mu_.
  Options options_;
  std::string path_;
};

// Flattens YAML into dotted key paths with scalar values: maps join with '.', sequences use
// the index ("mlp.units.0" -> "400"); null -> "null"; empty map/sequence -> "{}"/"[]".
// Sorted by key. InvalidArgument (with yaml-cpp's line/column) for unparsable text.
Result<std::vector<KeyValue>> FlattenYaml(std::string_view yaml);

}  // namespace rectrain::track
