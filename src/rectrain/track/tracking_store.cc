// rectrain/track/tracking_store.cc: see tracking_store.h.
#include "rectrain/track/tracking_store.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "rectrain/track/internal/sqlite.h"
#include "rectrain/track/schema.h"

namespace rectrain::track {

using internal::Db;
using internal::Stmt;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string LocalHostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Field 22 of /proc/<pid>/stat: the process start time in clock ticks since boot. Together with
// the pid it identifies a process (pids are reused). 0 when unreadable.
int64_t ProcessStartTicks(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  size_t close = line.rfind(')');  // comm may contain spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  // After ")": field 3 (state) is index 0, so field 22 is index 19.
  for (int i = 0; i <= 19; ++i) {
    if (!(fields >> field)) return 0;
  }
  int64_t ticks = 0;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
  return ec == std::errc() ? ticks : 0;
}

bool ProcessAlive(int64_t pid, int64_t start_ticks) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  if (start_ticks == 0) return true;  // Unknown start time: trust the pid.
  int64_t now_ticks = ProcessStartTicks(pid);
  return now_ticks == 0 || now_ticks == start_ticks;
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, p);
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// A bound SQL argument of a dynamically built query.
using Arg = std::variant<int64_t, double, std::string>;

void BindArgs(Stmt& stmt, const std::vector<Arg>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    int idx = static_cast<int>(i) + 1;
    std::visit([&](const auto& v) { stmt.Bind(idx, v); }, args[i]);
  }
}

std::string IdList(std::span<const RunId> ids) {
  std::string out;
  for (RunId id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

constexpr std::string_view kSummaryColumns =
    "r.id, r.name, r.status, r.status_message, r.start_time, r.end_time, r.heartbeat_time, "
    "r.host, r.pid, r.group_id, r.parent_id, r.git_commit";

Result<RunSummary> ReadSummary(const Stmt& s) {
  RunSummary r;
  r.id = s.ColumnInt(0);
  r.name = s.ColumnText(1);
  RECTRAIN_ASSIGN_OR_RETURN(r.status, ParseRunStatus(s.ColumnText(2)));
  r.status_message = s.ColumnText(3);
  r.start_time = s.ColumnDouble(4);
  r.end_time = s.ColumnOptDouble(5);
  r.heartbeat_time = s.ColumnDouble(6);
  r.host = s.ColumnText(7);
  r.pid = s.ColumnInt(8);
  r.group_id = s.ColumnText(9);
  r.parent_id = s.ColumnOptInt(10);
  r.git_commit = s.ColumnText(11);
  return r;
}

// Fills tags and final metrics of `runs` (two queries for the whole page).
Status FillTagsAndFinals(Db& db, std::vector<RunSummary>& runs) {
  if (runs.empty()) return OkStatus();
  std::map<RunId, RunSummary*> by_id;
  std::vector<RunId> ids;
  for (RunSummary& r : runs) {
    by_id[r.id] = &r;
    ids.push_back(r.id);
  }
  std::string list = IdList(ids);
  {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db.Prepare("SELECT run_id, tag FROM run_tags WHERE run_id IN (" + list +
                           ") ORDER BY run_id, tag"));
    for (;;) {
      RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      by_id[s.ColumnInt(0)]->tags.push_back(s.ColumnText(1));
    }
  }
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT run_id, key, value FROM final_metrics WHERE run_id IN (" +
                         list + ") ORDER BY run_id, key"));
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    by_id[s.ColumnInt(0)]->final_metrics.emplace_back(s.ColumnText(1),
                                                      s.ColumnOptDouble(2).value_or(kNaN));
  }
  return OkStatus();
}

Result<std::vector<RunSummary>> LoadSummariesByIds(Db& db, std::span<const RunId> ids) {
  std::vector<RunSummary> out;
  if (ids.empty()) return out;
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT " + std::string(kSummaryColumns) +
                         " FROM runs r WHERE r.id IN (" + IdList(ids) + ")"));
  std::map<RunId, RunSummary> found;
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    RECTRAIN_ASSIGN_OR_RETURN(RunSummary r, ReadSummary(s));
    found.emplace(r.id, std::move(r));
  }
  for (RunId id : ids) {
    auto it = found.find(id);
    if (it == found.end()) return NotFoundError("run " + std::to_string(id) + " not found");
    out.push_back(it->second);
  }
  RECTRAIN_RETURN_IF_ERROR(FillTagsAndFinals(db, out));
  return out;
}

Result<std::vector<KeyValue>> LoadParams(Db& db, RunId run) {
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT key, value FROM run_params WHERE run_id = ? ORDER BY key"));
  s.Bind(1, run);
  std::vector<KeyValue> out;
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.emplace_back(s.ColumnText(0), s.ColumnText(1));
  }
  return out;
}

const std::set<std::string_view>& ThresholdOps() {
  static const std::set<std::string_view> kOps = {"<", "<=", ">", ">=", "=", "!="};
  return kOps;
}

}  // namespace

std::string_view RunStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kFinished:
      return "finished";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kStopped:
      return "stopped";
  }
  return "unknown";
}

Result<RunStatus> ParseRunStatus(std::string_view s) {
  for (RunStatus st :
       {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kFailed, RunStatus::kStopped}) {
    if (s == RunStatusName(st)) return st;
  }
  return InvalidArgumentError("unknown run status '" + std::string(s) +
                              "'; expected running, finished, failed or stopped");
}

Result<MetricThreshold> ParseMetricThreshold(std::string_view text) {
  size_t pos = text.find_first_of("<>=!");
  if (pos == std::string_view::npos || pos == 0) {
    return InvalidArgumentError("bad metric threshold '" + std::string(text) +
                                "'; expected KEY OP VALUE with OP one of < <= > >= = !=, "
                                "e.g. auc>=0.8");
  }
  size_t op_len = (pos + 1 < text.size() && text[pos + 1] == '=') ? 2 : 1;
  MetricThreshold t;
  t.key = std::string(text.substr(0, pos));
  t.op = std::string(text.substr(pos, op_len));
  std::string_view num = text.substr(pos + op_len);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), t.value);
  if (!ThresholdOps().contains(t.op) || num.empty() || ec != std::errc() ||
      p != num.data() + num.size()) {
    return InvalidArgumentError("bad metric threshold '" + std::string(text) +
                                "'; expected KEY OP VALUE with OP one of < <= > >= = !=, "
                                "e.g. auc>=0.8");
  }
  return t;
}

TrackingStore::TrackingStore(std::unique_ptr<Db> db, Options options, std::string path)
    : db_(std::move(db)), options_(std::move(options)), path_(std::move(path)) {}

TrackingStore::~TrackingStore() = default;

Result<std::unique_ptr<TrackingStore>> TrackingStore::Open(const std::string& path) {
  return Open(path, Options{});
}

Result<std::unique_ptr<TrackingStore>> TrackingStore::Open(const std::string& path,
                                                           Options options) {
  if (options.host.empty()) options.host = LocalHostName();
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, options.busy_timeout_ms));
  std::unique_ptr<TrackingStore> store(new TrackingStore(std::move(db), std::move(options), path));
  // Switching to WAL needs a brief exclusive lock; under concurrent opens retry like a write.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(store->options_.write_retry_ms);
  for (;;) {
    Status st = store->db_->Exec("PRAGMA journal_mode=WAL");
    if (st.ok()) break;
    if (st.code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() > deadline) {
      return st.WithContext("opening tracking database " + path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RECTRAIN_RETURN_IF_ERROR(store->db_->Exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON"))
      << "opening tracking database " << path;
  RECTRAIN_RETURN_IF_ERROR(store->Migrate()) << "opening tracking database " << path;
  if (store->options_.reconcile_on_open) {
    RECTRAIN_ASSIGN_OR_RETURN(int64_t n, store->ReconcileStaleRuns());
    (void)n;
  }
  return store;
}

double TrackingStore::Now() const {
  if (options_.now) return options_.now();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status TrackingStore::WriteTxn(const std::function<Status()>& body) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.write_retry_ms);
  std::minstd_rand jitter(static_cast<unsigned>(getpid()));
  int attempt = 0;
  for (;;) {
    Status st = db_->Exec("BEGIN IMMEDIATE");
    if (st.ok()) {
      st = body();
      db_->ResetCached();
      if (st.ok()) st = db_->Exec("COMMIT");
      if (!st.ok() && sqlite3_get_autocommit(db_->raw()) == 0) {
        db_->Exec("ROLLBACK").IgnoreError();
      }
    }
    if (st.ok() || st.code() != StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() > deadline) {
      return st;
    }
    // Locked by another writer beyond the busy timeout: back off and redo the transaction.
    int max_sleep_ms = std::min(50, 1 << std::min(attempt, 6));
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % max_sleep_ms));
    ++attempt;
  }
}

Status TrackingStore::Migrate() {
  auto current_version = [&]() -> Result<int64_t> {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                             "name='schema_migrations'"));
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || s.ColumnInt(0) == 0) return int64_t{0};
    RECTRAIN_ASSIGN_OR_RETURN(Stmt v,
                              db_->Prepare("SELECT coalesce(max(version), 0) FROM schema_migrations"));
    RECTRAIN_ASSIGN_OR_RETURN(bool vrow, v.Step());
    return vrow ? v.ColumnInt(0) : int64_t{0};
  };
  auto too_new = [&](int64_t version) {
    return FailedPreconditionError("tracking database " + path_ + " has schema version " +
                                   std::to_string(version) + ", newer than " +
                                   std::to_string(kSchemaVersion) +
                                   " which this build supports; upgrade rectrain");
  };
  {
    std::lock_guard lock(mu_);
    RECTRAIN_ASSIGN_OR_RETURN(int64_t version, current_version());
    if (version == kSchemaVersion) return OkStatus();
    if (version > kSchemaVersion) return too_new(version);
    return WriteTxn([&]() -> Status {
      // Re-read under the write lock: another process may have migrated meanwhile.
      RECTRAIN_RETURN_IF_ERROR(db_->Exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
          "description TEXT NOT NULL, applied_time REAL NOT NULL)"));
      RECTRAIN_ASSIGN_OR_RETURN(int64_t v, current_version());
      if (v > kSchemaVersion) return too_new(v);
      for (const Migration& m : Migrations()) {
        if (m.version <= v) continue;
        RECTRAIN_RETURN_IF_ERROR(db_->Exec(m.sql)) << "applying schema migration " << m.version;
        RECTRAIN_ASSIGN_OR_RETURN(
            Stmt ins, db_->Prepare("INSERT INTO schema_migrations(version, description, "
                                   "applied_time) VALUES (?, ?, ?)"));
        ins.Bind(1, m.version).Bind(2, m.description).Bind(3, Now());
        RECTRAIN_RETURN_IF_ERROR(ins.Run());
        RECTRAIN_RETURN_IF_ERROR(
            db_->Exec("PRAGMA user_version=" + std::to_string(m.version)));
      }
      return OkStatus();
    });
  }
}

Result<int64_t> TrackingStore::SchemaVersion() {
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT max(version) FROM schema_migrations"));
  RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
  return row ? s.ColumnInt(0) : int64_t{0};
}

Status TrackingStore::CheckRunExists(RunId run) {
  RECTRAIN_ASSIGN_OR_RETURN(Stmt * s, db_->Cached("SELECT 1 FROM runs WHERE id = ?"));
  s->Bind(1, run);
  RECTRAIN_ASSIGN_OR_RETURN(bool row, s->Step());
  s->Reset();
  if (!row) return NotFoundError("run " + std::to_string(run) + " not found");
  return OkStatus();
}

Result<RunId> TrackingStore::StartRun(const RunInfo& info) {
  std::vector<KeyValue> params = info.params;
  if (params.empty() && !info.config_yaml.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(params, FlattenYaml(info.config_yaml));
  }
  std::string host = info.host.empty() ? options_.host : info.host;
  int64_t pid = info.pid == 0 ? static_cast<int64_t>(getpid()) : info.pid;
  int64_t start_ticks = host == options_.host ? ProcessStartTicks(pid) : 0;
  std::lock_guard lock(mu_);
  RunId id = 0;
  Status st = WriteTxn([&]() -> Status {
    if (info.parent_id.has_value()) {
      Status parent = CheckRunExists(*info.parent_id);
      if (!parent.ok()) {
        return InvalidArgumentError("parent run " + std::to_string(*info.parent_id) +
                                    " does not exist");
      }
    }
    double now = Now();
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * ins,
        db_->Cached("INSERT INTO runs(name, status, start_time, heartbeat_time, host, pid, "
                    "pid_start_ticks, group_id, parent_id, git_commit, config_yaml) "
                    "VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    ins->Bind(1, info.name).Bind(2, now).Bind(3, now).Bind(4, host).Bind(5, pid);
    ins->Bind(6, start_ticks).Bind(7, info.group_id).Bind(8, info.parent_id);
    ins->Bind(9, info.git_commit).Bind(10, info.config_yaml);
    RECTRAIN_RETURN_IF_ERROR(ins->Run());
    id = sqlite3_last_insert_rowid(db_->raw());
    if (info.name.empty()) {
      RECTRAIN_ASSIGN_OR_RETURN(Stmt * upd, db_->Cached("UPDATE runs SET name = ? WHERE id = ?"));
      upd->Bind(1, "run-" + std::to_string(id)).Bind(2, id);
      RECTRAIN_RETURN_IF_ERROR(upd->Run());
    }
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * tag, db_->Cached("INSERT OR IGNORE INTO run_tags(run_id, tag) VALUES (?, ?)"));
    for (const std::string& t : info.tags) {
      tag->Reset();
      tag->Bind(1, id).Bind(2, t);
      RECTRAIN_RETURN_IF_ERROR(tag->Run());
    }
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * param,
        db_->Cached("INSERT OR REPLACE INTO run_params(run_id, key, value) VALUES (?, ?, ?)"));
    for (const auto& [k, v] : params) {
      param->Reset();
      param->Bind(1, id).Bind(2, k).Bind(3, v);
      RECTRAIN_RETURN_IF_ERROR(param->Run());
    }
    return OkStatus();
  });
  if (!st.ok()) return st.WithContext("starting run '" + info.name + "'");
  return id;
}

Status TrackingStore::LogMetrics(RunId run, int64_t step, std::span<const MetricValue> values) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    double now = Now();
    RECTRAIN_ASSIGN_OR_RETURN(Stmt * hb,
                              db_->Cached("UPDATE runs SET heartbeat_time = ? WHERE id = ?"));
    hb->Bind(1, now).Bind(2, run);
    RECTRAIN_RETURN_IF_ERROR(hb->Run());
    if (sqlite3_changes(db_->raw()) == 0) {
      return NotFoundError("run " + std::to_string(run) + " not found");
    }
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * ins, db_->Cached("INSERT INTO metrics(run_id, key, step, value, wall_time) "
                                "VALUES (?, ?, ?, ?, ?)"));
    for (const auto& [key, value] : values) {
      ins->Reset();
      ins->Bind(1, run).Bind(2, key).Bind(3, step).Bind(4, value).Bind(5, now);
      RECTRAIN_RETURN_IF_ERROR(ins->Run());
    }
    return OkStatus();
  });
}

Status TrackingStore::SetFinal(RunId run, std::span<const MetricValue> values) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_RETURN_IF_ERROR(CheckRunExists(run));
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * ins,
        db_->Cached("INSERT OR REPLACE INTO final_metrics(run_id, key, value) VALUES (?, ?, ?)"));
    for (const auto& [key, value] : values) {
      ins->Reset();
      ins->Bind(1, run).Bind(2, key).Bind(3, value);
      RECTRAIN_RETURN_IF_ERROR(ins->Run());
    }
    return OkStatus();
  });
}

Status TrackingStore::AddArtifact(RunId run, std::string_view kind, std::string_view path) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_RETURN_IF_ERROR(CheckRunExists(run));
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * ins, db_->Cached("INSERT OR REPLACE INTO artifacts(run_id, kind, path, "
                                "created_time) VALUES (?, ?, ?, ?)"));
    ins->Bind(1, run).Bind(2, kind).Bind(3, path).Bind(4, Now());
    return ins->Run();
  });
}

Status TrackingStore::AddDataFile(RunId run, const DataFile& file) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_RETURN_IF_ERROR(CheckRunExists(run));
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * ins, db_->Cached("INSERT OR REPLACE INTO data_files(run_id, path, size_bytes, "
                                "fingerprint) VALUES (?, ?, ?, ?)"));
    ins->Bind(1, run).Bind(2, file.path).Bind(3, file.size_bytes).Bind(4, file.fingerprint);
    return ins->Run();
  });
}

Status TrackingStore::Heartbeat(RunId run) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(Stmt * hb,
                              db_->Cached("UPDATE runs SET heartbeat_time = ? WHERE id = ?"));
    hb->Bind(1, Now()).Bind(2, run);
    RECTRAIN_RETURN_IF_ERROR(hb->Run());
    if (sqlite3_changes(db_->raw()) == 0) {
      return NotFoundError("run " + std::to_string(run) + " not found");
    }
    return OkStatus();
  });
}

Status TrackingStore::FinishRun(RunId run, RunStatus status, std::string_view message) {
  if (status == RunStatus::kRunning) {
    return InvalidArgumentError("FinishRun needs a terminal status (finished, failed, stopped)");
  }
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * upd, db_->Cached("UPDATE runs SET status = ?, status_message = ?, end_time = ?, "
                                "heartbeat_time = ? WHERE id = ?"));
    double now = Now();
    upd->Bind(1, RunStatusName(status)).Bind(2, message).Bind(3, now).Bind(4, now).Bind(5, run);
    RECTRAIN_RETURN_IF_ERROR(upd->Run());
    if (sqlite3_changes(db_->raw()) == 0) {
      return NotFoundError("run " + std::to_string(run) + " not found");
    }
    return OkStatus();
  });
}

Status TrackingStore::ReopenRun(RunId run) {
  const int64_t pid = static_cast<int64_t>(getpid());
  const int64_t start_ticks = ProcessStartTicks(pid);
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * upd, db_->Cached("UPDATE runs SET status = 'running', status_message = '', end_time = NULL, "
                                "heartbeat_time = ?, host = ?, pid = ?, pid_start_ticks = ? WHERE id = ?"));
    upd->Bind(1, Now()).Bind(2, options_.host).Bind(3, pid).Bind(4, start_ticks).Bind(5, run);
    RECTRAIN_RETURN_IF_ERROR(upd->Run());
    if (sqlite3_changes(db_->raw()) == 0) return NotFoundError("run " + std::to_string(run) + " not found");
    return OkStatus();
  });
}

Status TrackingStore::DeleteRun(RunId run) {
  std::lock_guard lock(mu_);
  return WriteTxn([&]() -> Status {
    RECTRAIN_ASSIGN_OR_RETURN(Stmt * del, db_->Cached("DELETE FROM runs WHERE id = ?"));
    del->Bind(1, run);
    RECTRAIN_RETURN_IF_ERROR(del->Run());
    if (sqlite3_changes(db_->raw()) == 0) {
      return NotFoundError("run " + std::to_string(run) + " not found");
    }
    return OkStatus();
  });
}

Result<int64_t> TrackingStore::ReconcileStaleRuns() {
  struct Candidate {
    RunId id;
    std::string message;
  };
  std::lock_guard lock(mu_);
  // Decides which running runs are stale. Run once without the write lock (the common case:
  // nothing to do) and again inside the write transaction, so a run that finishes meanwhile
  // is never overwritten.
  auto find_stale = [&]() -> Result<std::vector<Candidate>> {
    std::vector<Candidate> out;
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT id, host, pid, pid_start_ticks, heartbeat_time FROM runs "
                             "WHERE status = 'running'"));
    double now = Now();
    for (;;) {
      RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      RunId id = s.ColumnInt(0);
      std::string host = s.ColumnText(1);
      int64_t pid = s.ColumnInt(2);
      int64_t ticks = s.ColumnInt(3);
      double heartbeat = s.ColumnDouble(4);
      if (host == options_.host) {
        if (!ProcessAlive(pid, ticks)) {
          out.push_back({id, "process " + std::to_string(pid) + " on " + host +
                                 " exited without finishing the run"});
        }
      } else if (now - heartbeat > options_.stale_heartbeat_s) {
        out.push_back({id, "no heartbeat from " + host + " for " +
                               std::to_string(static_cast<int64_t>(now - heartbeat)) + " s"});
      }
    }
    return out;
  };
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<Candidate> first, find_stale());
  if (first.empty()) return int64_t{0};
  int64_t marked = 0;
  Status st = WriteTxn([&]() -> Status {
    marked = 0;
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<Candidate> stale, find_stale());
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt * upd,
        db_->Cached("UPDATE runs SET status = 'failed', status_message = ?, end_time = "
                    "heartbeat_time WHERE id = ? AND status = 'running'"));
    for (const Candidate& c : stale) {
      upd->Reset();
      upd->Bind(1, c.message).Bind(2, c.id);
      RECTRAIN_RETURN_IF_ERROR(upd->Run());
      marked += sqlite3_changes(db_->raw());
    }
    return OkStatus();
  });
  if (!st.ok()) return st.WithContext("reconciling stale runs");
  return marked;
}

Result<RunList> TrackingStore::ListRuns(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  Result<RunList> r = ListRunsLocked(filter);
  db_->ResetCached();
  return r;
}

namespace {

// The WHERE clause of a run listing (and its arguments, in order) from the filter.
Status WhereClause(const RunFilter& filter, std::string* where_out, std::vector<Arg>* args_out) {
  std::string& where = *where_out;
  where = "1";
  std::vector<Arg>& args = *args_out;
  if (filter.status.has_value()) {
    where += " AND r.status = ?";
    args.emplace_back(std::string(RunStatusName(*filter.status)));
  }
  for (const std::string& tag : filter.tags) {
    where += " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.tag = ?)";
    args.emplace_back(tag);
  }
  if (!filter.name_contains.empty()) {
    std::string pattern = "%";
    for (char c : filter.name_contains) {
      if (c == '%' || c == '_' || c == '\\') pattern += '\\';
      pattern += c;
    }
    pattern += '%';
    where += " AND r.name LIKE ? ESCAPE '\\'";
    args.emplace_back(pattern);
  }
  if (filter.group_id.has_value()) {
    where += " AND r.group_id = ?";
    args.emplace_back(*filter.group_id);
  }
  if (filter.parent_id.has_value()) {
    where += " AND r.parent_id = ?";
    args.emplace_back(*filter.parent_id);
  }
  for (const auto& [k, v] : filter.params) {
    where += " AND EXISTS (SELECT 1 FROM run_params p WHERE p.run_id = r.id AND p.key = ? AND "
             "p.value = ?)";
    args.emplace_back(k);
    args.emplace_back(v);
  }
  for (const MetricThreshold& t : filter.metrics) {
    if (!ThresholdOps().contains(t.op)) {
      return InvalidArgumentError("bad metric threshold operator '" + t.op +
                                  "'; expected one of < <= > >= = !=");
    }
    where += " AND EXISTS (SELECT 1 FROM final_metrics f WHERE f.run_id = r.id AND f.key = ? "
             "AND f.value " + t.op + " ?)";
    args.emplace_back(t.key);
    args.emplace_back(t.value);
  }

  return OkStatus();
}

// The ORDER BY clause (and its arguments) of filter.sort_by; ties broken by id.
Status OrderClause(const RunFilter& filter, std::string* order_out, std::vector<Arg>* args_out) {
  std::string& order = *order_out;
  std::vector<Arg>& order_args = *args_out;
  const std::string dir = filter.descending ? " DESC" : " ASC";
  static const std::map<std::string, std::string, std::less<>> kColumns = {
      {"id", "r.id"},           {"name", "r.name"},         {"status", "r.status"},
      {"start_time", "r.start_time"}, {"end_time", "r.end_time"}};
  if (auto it = kColumns.find(filter.sort_by); it != kColumns.end()) {
    order = it->second + dir + " NULLS LAST";
  } else if (filter.sort_by.starts_with("metric:") && filter.sort_by.size() > 7) {
    order = "(SELECT f.value FROM final_metrics f WHERE f.run_id = r.id AND f.key = ?)" + dir +
            " NULLS LAST";
    order_args.emplace_back(filter.sort_by.substr(7));
  } else if (filter.sort_by.starts_with("param:") && filter.sort_by.size() > 6) {
    order = "(SELECT p.value FROM run_params p WHERE p.run_id = r.id AND p.key = ?)" + dir +
            " NULLS LAST";
    order_args.emplace_back(filter.sort_by.substr(6));
  } else {
    return InvalidArgumentError("unknown sort key '" + filter.sort_by +
                                "'; expected id, name, status, start_time, end_time, "
                                "metric:<key> or param:<key>");
  }
  order += ", r.id" + dir;
  return OkStatus();
}

}  // namespace

Result<RunList> TrackingStore::ListRunsLocked(const RunFilter& filter) {
  if (filter.limit < 1 || filter.limit > 10000) {
    return InvalidArgumentError("limit must be in 1..10000, got " + std::to_string(filter.limit));
  }
  if (filter.offset < 0) {
    return InvalidArgumentError("offset must be >= 0, got " + std::to_string(filter.offset));
  }
  std::string where, order;
  std::vector<Arg> args, order_args;
  RECTRAIN_RETURN_IF_ERROR(WhereClause(filter, &where, &args));
  RECTRAIN_RETURN_IF_ERROR(OrderClause(filter, &order, &order_args));
  RunList out;
  {
    RECTRAIN_ASSIGN_OR_RETURN(Stmt s,
                              db_->Prepare("SELECT count(*) FROM runs r WHERE " + where));
    BindArgs(s, args);
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    out.total = row ? s.ColumnInt(0) : 0;
  }
  std::vector<Arg> all_args = args;
  all_args.insert(all_args.end(), order_args.begin(), order_args.end());
  all_args.emplace_back(filter.limit);
  all_args.emplace_back(filter.offset);
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT " + std::string(kSummaryColumns) + " FROM runs r WHERE " +
                           where + " ORDER BY " + order + " LIMIT ? OFFSET ?"));
  BindArgs(s, all_args);
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    RECTRAIN_ASSIGN_OR_RETURN(RunSummary r, ReadSummary(s));
    out.runs.push_back(std::move(r));
  }
  RECTRAIN_RETURN_IF_ERROR(FillTagsAndFinals(*db_, out.runs));
  return out;
}

Result<RunDetail> TrackingStore::GetRun(RunId run) {
  std::lock_guard lock(mu_);
  RunDetail d;
  RunId ids[] = {run};
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<RunSummary> summaries, LoadSummariesByIds(*db_, ids));
  d.summary = std::move(summaries[0]);
  {
    RECTRAIN_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT config_yaml FROM runs WHERE id = ?"));
    s.Bind(1, run);
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) d.config_yaml = s.ColumnText(0);
  }
  RECTRAIN_ASSIGN_OR_RETURN(d.params, LoadParams(*db_, run));
  {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT path, size_bytes, fingerprint FROM data_files WHERE "
                             "run_id = ? ORDER BY path"));
    s.Bind(1, run);
    for (;;) {
      RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      d.data_files.push_back({s.ColumnText(0), s.ColumnInt(1), s.ColumnText(2)});
    }
  }
  {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT kind, path, created_time FROM artifacts WHERE run_id = ? "
                             "ORDER BY kind, path"));
    s.Bind(1, run);
    for (;;) {
      RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      d.artifacts.push_back({s.ColumnText(0), s.ColumnText(1), s.ColumnDouble(2)});
    }
  }
  {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s,
        db_->Prepare("SELECT m.key, count(*), min(m.step), max(m.step), "
                     "(SELECT m2.value FROM metrics m2 WHERE m2.run_id = m.run_id AND "
                     "m2.key = m.key ORDER BY m2.step DESC, m2.rowid DESC LIMIT 1) "
                     "FROM metrics m WHERE m.run_id = ? GROUP BY m.key ORDER BY m.key"));
    s.Bind(1, run);
    for (;;) {
      RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      d.metric_keys.push_back({s.ColumnText(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnInt(3),
                               s.ColumnOptDouble(4).value_or(kNaN)});
    }
  }
  return d;
}

Result<MetricSeries> TrackingStore::GetMetrics(RunId run, std::string_view key,
                                               int64_t max_points) {
  return GetMetrics(run, key, max_points, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max());
}

Result<MetricSeries> TrackingStore::GetMetrics(RunId run, std::string_view key,
                                               int64_t max_points, int64_t min_step,
                                               int64_t max_step) {
  if (min_step > max_step) {
    return InvalidArgumentError("min_step " + std::to_string(min_step) + " > max_step " +
                                std::to_string(max_step));
  }
  std::lock_guard lock(mu_);
  RECTRAIN_RETURN_IF_ERROR(CheckRunExists(run));
  MetricSeries series;
  series.key = std::string(key);
  int64_t first_step = 0, last_step = 0;
  {
    RECTRAIN_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT count(*), min(step), max(step) FROM metrics WHERE "
                             "run_id = ? AND key = ? AND step BETWEEN ? AND ?"));
    s.Bind(1, run).Bind(2, key).Bind(3, min_step).Bind(4, max_step);
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) {
      series.total_points = s.ColumnInt(0);
      first_step = s.ColumnInt(1);
      last_step = s.ColumnInt(2);
    }
  }
  if (series.total_points == 0) return series;
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT step, value, wall_time FROM metrics WHERE run_id = ? AND "
                           "key = ? AND step BETWEEN ? AND ? ORDER BY step, rowid"));
  s.Bind(1, run).Bind(2, key).Bind(3, min_step).Bind(4, max_step);
  bool reduce = max_points > 0 && series.total_points > max_points;
  std::optional<MinMaxDownsampler> ds;
  if (reduce) ds.emplace(first_step, last_step, series.total_points, std::max<int64_t>(max_points, 4));
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    MetricPoint p{s.ColumnInt(0), s.ColumnOptDouble(1).value_or(kNaN), s.ColumnDouble(2)};
    if (reduce) {
      ds->Add(p);
    } else {
      series.points.push_back(p);
    }
  }
  if (reduce) series.points = ds->Finish();
  series.downsampled = static_cast<int64_t>(series.points.size()) < series.total_points;
  return series;
}

Result<std::vector<std::vector<KeyValue>>> TrackingStore::GetParams(
    std::span<const RunId> ids, std::span<const std::string> keys) {
  if (ids.size() > 10000) {
    return InvalidArgumentError("GetParams takes at most 10000 run ids, got " +
                                std::to_string(ids.size()));
  }
  std::vector<std::vector<KeyValue>> out(ids.size());
  if (ids.empty()) return out;
  std::lock_guard lock(mu_);
  std::map<RunId, std::vector<size_t>> slots;  // An id may repeat.
  for (size_t i = 0; i < ids.size(); ++i) slots[ids[i]].push_back(i);
  std::string sql = "SELECT run_id, key, value FROM run_params WHERE run_id IN (" +
                    IdList(ids) + ")";
  if (!keys.empty()) {
    sql += " AND key IN (";
    for (size_t i = 0; i < keys.size(); ++i) sql += i == 0 ? "?" : ",?";
    sql += ")";
  }
  sql += " ORDER BY run_id, key";
  RECTRAIN_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql));
  for (size_t i = 0; i < keys.size(); ++i) s.Bind(static_cast<int>(i) + 1, keys[i]);
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    auto it = slots.find(s.ColumnInt(0));
    if (it == slots.end()) continue;
    for (size_t slot : it->second) out[slot].emplace_back(s.ColumnText(1), s.ColumnText(2));
  }
  return out;
}

Result<RunComparison> TrackingStore::CompareRuns(std::span<const RunId> ids) {
  if (ids.empty() || ids.size() > 100) {
    return InvalidArgumentError("compare needs 1..100 run ids, got " +
                                std::to_string(ids.size()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i), ids[i]) != ids.begin() + static_cast<std::ptrdiff_t>(i)) {
      return InvalidArgumentError("run " + std::to_string(ids[i]) + " is listed twice; compare distinct runs");
    }
  }
  std::lock_guard lock(mu_);
  RunComparison cmp;
  RECTRAIN_ASSIGN_OR_RETURN(cmp.runs, LoadSummariesByIds(*db_, ids));
  const size_t n = ids.size();
  std::map<std::string, std::vector<std::optional<std::string>>> params;
  for (size_t i = 0; i < n; ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<KeyValue> kv, LoadParams(*db_, ids[i]));
    for (auto& [k, v] : kv) {
      auto& row = params[k];
      row.resize(n);
      row[i] = std::move(v);
    }
  }
  for (auto& [k, values] : params) {
    bool differ = false;
    for (size_t i = 1; i < n; ++i) differ = differ || values[i] != values[0];
    if (differ) cmp.differing_params.push_back({k, std::move(values)});
  }
  std::map<std::string, std::vector<std::optional<double>>> finals;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& [k, v] : cmp.runs[i].final_metrics) {
      auto& row = finals[k];
      row.resize(n);
      row[i] = v;
    }
  }
  for (auto& [k, values] : finals) cmp.final_metrics.push_back({k, std::move(values)});
  return cmp;
}

Result<std::vector<GroupSummary>> TrackingStore::ListGroups() {
  return ListGroups(GroupBy::kGroupId);
}

Result<std::vector<GroupSummary>> TrackingStore::ListGroups(GroupBy by) {
  std::string key, from;
  switch (by) {
    case GroupBy::kGroupId:
      key = "r.group_id";
      from = "runs r WHERE r.group_id != ''";
      break;
    case GroupBy::kParent:
      key = "CAST(r.parent_id AS TEXT)";
      from = "runs r WHERE r.parent_id IS NOT NULL";
      break;
    case GroupBy::kTag:
      key = "t.tag";
      from = "runs r JOIN run_tags t ON t.run_id = r.id";
      break;
  }
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT " + key + ", count(*), sum(r.status = 'running'), "
                           "sum(r.status = 'finished'), sum(r.status = 'failed'), "
                           "sum(r.status = 'stopped'), min(r.start_time), max(r.start_time) "
                           "FROM " + from + " GROUP BY " + key +
                           " ORDER BY max(r.start_time) DESC, " + key));
  std::vector<GroupSummary> out;
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back({s.ColumnText(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnInt(3),
                   s.ColumnInt(4), s.ColumnInt(5), s.ColumnDouble(6), s.ColumnDouble(7)});
  }
  return out;
}

Result<std::string> TrackingStore::ExportRunsCsv(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(RunList list, ListRunsLocked(filter));
  std::vector<std::map<std::string, std::string>> params(list.runs.size());
  std::set<std::string> param_keys, metric_keys;
  for (size_t i = 0; i < list.runs.size(); ++i) {
    RECTRAIN_ASSIGN_OR_RETURN(std::vector<KeyValue> kv, LoadParams(*db_, list.runs[i].id));
    for (auto& [k, v] : kv) {
      param_keys.insert(k);
      params[i][k] = std::move(v);
    }
    for (const auto& [k, v] : list.runs[i].final_metrics) metric_keys.insert(k);
  }
  std::string out = "id,name,status,start_time,end_time,host,group_id,tags";
  for (const std::string& k : param_keys) out += "," + CsvField("param:" + k);
  for (const std::string& k : metric_keys) out += "," + CsvField("metric:" + k);
  out += "\r\n";
  for (size_t i = 0; i < list.runs.size(); ++i) {
    const RunSummary& r = list.runs[i];
    std::string tags;
    for (const std::string& t : r.tags) tags += (tags.empty() ? "" : ";") + t;
    out += std::to_string(r.id) + "," + CsvField(r.name) + "," +
           std::string(RunStatusName(r.status)) + "," + FormatDouble(r.start_time) + "," +
           (r.end_time ? FormatDouble(*r.end_time) : "") + "," + CsvField(r.host) + "," +
           CsvField(r.group_id) + "," + CsvField(tags);
    for (const std::string& k : param_keys) {
      auto it = params[i].find(k);
      out += "," + (it == params[i].end() ? std::string() : CsvField(it->second));
    }
    std::map<std::string, double> finals(r.final_metrics.begin(), r.final_metrics.end());
    for (const std::string& k : metric_keys) {
      auto it = finals.find(k);
      out += "," + (it == finals.end() ? std::string() : FormatDouble(it->second));
    }
    out += "\r\n";
  }
  return out;
}

Result<std::string> TrackingStore::ExportMetricsCsv(RunId run) {
  std::lock_guard lock(mu_);
  RECTRAIN_RETURN_IF_ERROR(CheckRunExists(run));
  RECTRAIN_ASSIGN_OR_RETURN(
      Stmt s, db_->Prepare("SELECT key, step, value, wall_time FROM metrics WHERE run_id = ? "
                           "ORDER BY key, step, rowid"));
  s.Bind(1, run);
  std::string out = "key,step,value,wall_time\r\n";
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out += CsvField(s.ColumnText(0)) + "," + std::to_string(s.ColumnInt(1)) + "," +
           FormatDouble(s.ColumnOptDouble(2).value_or(kNaN)) + "," +
           FormatDouble(s.ColumnDouble(3)) + "\r\n";
  }
  return out;
}

}  // namespace rectrain::track
