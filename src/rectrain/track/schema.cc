// rectrain/track/schema.cc: see schema.h. The golden copy of the resulting schema is
// track/testdata/schema_v1.sql (schema_test.cc compares against it).
#include "rectrain/track/schema.h"

#include <array>

namespace rectrain::track {
namespace {

// Times are Unix seconds (REAL). Child tables cascade on run deletion. Metric values are
// nullable because SQLite stores NaN as NULL; NULL reads back as NaN.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'stopped')),
  status_message TEXT NOT NULL DEFAULT '',
  start_time REAL NOT NULL,
  end_time REAL,
  heartbeat_time REAL NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  pid_start_ticks INTEGER NOT NULL DEFAULT 0,
  group_id TEXT NOT NULL DEFAULT '',
  parent_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  git_commit TEXT NOT NULL DEFAULT '',
  config_yaml TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_start_time ON runs(start_time);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX runs_group ON runs(group_id);
CREATE INDEX runs_parent ON runs(parent_id);
CREATE TABLE run_tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (run_id, tag)
) WITHOUT ROWID;
CREATE INDEX run_tags_tag ON run_tags(tag);
CREATE TABLE run_params (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX run_params_key_value ON run_params(key, value);
CREATE TABLE data_files (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  PRIMARY KEY (run_id, path)
) WITHOUT ROWID;
CREATE TABLE metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  value REAL,
  wall_time REAL NOT NULL
);
CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);
CREATE TABLE final_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value REAL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX final_metrics_key_value ON final_metrics(key, value);
CREATE TABLE artifacts (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  path TEXT NOT NULL,
  created_time REAL NOT NULL,
  PRIMARY KEY (run_id, kind, path)
) WITHOUT ROWID;
)sql";

constexpr std::array<Migration, 1> kMigrations = {{
    {1, "initial schema: runs, tags, params, data files, metrics, final metrics, artifacts", kV1},
}};

static_assert(kMigrations.back().version == kSchemaVersion);

}  // namespace

std::span<const Migration> Migrations() { return kMigrations; }

}  // namespace rectrain::track
