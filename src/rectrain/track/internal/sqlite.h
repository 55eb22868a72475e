// rectrain/track/internal/sqlite.h: PRIVATE to track/. Thin RAII wrappers over the SQLite C API
// (connection, prepared statement, statement cache) that return Status instead of codes.
// Thread safety: none. A Db and its statements belong to one thread at a time; TrackingStore
// serialises access with its own mutex.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::track::internal {

// Maps an SQLite result code to the closest canonical Status (BUSY/LOCKED -> Unavailable,
// CORRUPT/NOTADB -> DataLoss, FULL -> ResourceExhausted, READONLY/PERM/AUTH -> PermissionDenied,
// CONSTRAINT -> FailedPrecondition, CANTOPEN -> NotFound, else Internal). `what` leads the
// message; SQLite's own message follows.
Status SqliteError(int rc, std::string_view what, sqlite3* db);

// True for the result codes that a retry of the whole transaction can cure.
inline bool IsBusy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Stmt(Stmt&& other) noexcept { *this = std::move(other); }
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Binders take 1-based parameter indices as SQLite does. Text is copied (SQLITE_TRANSIENT).
  Stmt& Bind(int idx, int64_t v);
  Stmt& Bind(int idx, int v) { return Bind(idx, static_cast<int64_t>(v)); }
  Stmt& Bind(int idx, double v);
  Stmt& Bind(int idx, std::string_view v);
  Stmt& Bind(int idx, const char* v) { return Bind(idx, std::string_view(v)); }
  Stmt& Bind(int idx, const std::string& v) { return Bind(idx, std::string_view(v)); }
  Stmt& BindNull(int idx);
  template <typename T>
  Stmt& Bind(int idx, const std::optional<T>& v) {
    return v.has_value() ? Bind(idx, *v) : BindNull(idx);
  }

  // Steps once. Returns true when a row is available, false when done. The first binding error
  // (if any) is reported here.
  Result<bool> Step();
  // Steps until done (for statements without rows of interest).
  Status Run();
  // Resets for re-execution and clears bindings.
  void Reset();

  int64_t ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }
  double ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }
  bool ColumnIsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string ColumnText(int col) const;
  std::optional<int64_t> ColumnOptInt(int col) const {
    return ColumnIsNull(col) ? std::nullopt : std::optional<int64_t>(ColumnInt(col));
  }
  std::optional<double> ColumnOptDouble(int col) const {
    return ColumnIsNull(col) ? std::nullopt : std::optional<double>(ColumnDouble(col));
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

class Db {
 public:
  // Opens (creating if absent) the database at `path` (":memory:" allowed).
  static Result<std::unique_ptr<Db>> Open(const std::string& path, int busy_timeout_ms);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* raw() const { return db_; }
  // Executes one or more statements without results.
  Status Exec(std::string_view sql);
  // Prepares a fresh statement.
  Result<Stmt> Prepare(std::string_view sql);
  // Returns a cached prepared statement for `sql` (reset and unbound); the pointer stays valid
  // for the life of the Db. Use for hot statements.
  Result<Stmt*> Cached(const std::string& sql);
  // Resets every cached statement so none keeps a read snapshot open. Call at the end of each
  // public operation.
  void ResetCached();

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, std::unique_ptr<Stmt>> cache_;
};

}  // namespace rectrain::track::internal
