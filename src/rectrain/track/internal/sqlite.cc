// rectrain/track/internal/sqlite.cc: see sqlite.h.
#include "rectrain/track/internal/sqlite.h"

#include <string>
#include <utility>

namespace rectrain::track::internal {

Status SqliteError(int rc, std::string_view what, sqlite3* db) {
  std::string msg(what);
  msg += ": ";
  msg += (db != nullptr && sqlite3_errcode(db) == rc) ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(std::move(msg));
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return ResourceExhaustedError(std::move(msg));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return PermissionDeniedError(std::move(msg));
    case SQLITE_CONSTRAINT:
      return FailedPreconditionError(std::move(msg));
    case SQLITE_CANTOPEN:
      return NotFoundError(std::move(msg));
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      return InvalidArgumentError(std::move(msg));
    default:
      return InternalError(std::move(msg));
  }
}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = std::exchange(other.bind_rc_, SQLITE_OK);
  }
  return *this;
}

Stmt::~Stmt() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Stmt& Stmt::Bind(int idx, int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, idx, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int idx, double v) {
  int rc = sqlite3_bind_double(stmt_, idx, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int idx, std::string_view v) {
  int rc = sqlite3_bind_text64(stmt_, idx, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::BindNull(int idx) {
  int rc = sqlite3_bind_null(stmt_, idx);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Result<bool> Stmt::Step() {
  if (bind_rc_ != SQLITE_OK) return SqliteError(bind_rc_, "binding a statement parameter", db_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(rc, "executing SQL", db_);
}

Status Stmt::Run() {
  for (;;) {
    RECTRAIN_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return OkStatus();
  }
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

std::string Stmt::ColumnText(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status st = SqliteError(rc, "opening tracking database " + path, raw);
    sqlite3_close_v2(raw);
    return st;
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  return std::unique_ptr<Db>(new Db(raw));
}

Db::~Db() {
  cache_.clear();  // finalize statements before closing
  sqlite3_close_v2(db_);
}

Status Db::Exec(std::string_view sql) {
  char* err = nullptr;
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what = "executing SQL";
    if (err != nullptr) {
      sqlite3_free(err);
    }
    return SqliteError(rc, what, db_);
  }
  return OkStatus();
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, "preparing SQL", db_);
  return Stmt(db_, stmt);
}

Result<Stmt*> Db::Cached(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) {
    it->second->Reset();
    return it->second.get();
  }
  RECTRAIN_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
  auto owned = std::make_unique<Stmt>(std::move(stmt));
  Stmt* ptr = owned.get();
  cache_.emplace(sql, std::move(owned));
  return ptr;
}

void Db::ResetCached() {
  for (auto& [sql, stmt] : cache_) stmt->Reset();
}

}  // namespace rectrain::track::internal
