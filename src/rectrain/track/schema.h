// rectrain/track/schema.h: the versioned SQL schema of the tracking store and its migrations.
// Version N of the schema is what applying migrations 1..N to an empty database produces; each
// applied migration is recorded in the `schema_migrations` table (and mirrored in
// PRAGMA user_version). A database whose version is newer than kSchemaVersion is refused, so an
// old binary never writes into a layout it does not know. docs/formats/tracking-schema.md
// describes every table and column.
// Thread safety: the functions are pure or act only on the connection they are given.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rectrain::track {

// The schema version this build writes. Bump by appending a migration, never by editing one.
inline constexpr int64_t kSchemaVersion = 1;

struct Migration {
  int64_t version;           // 1-based, consecutive.
  std::string_view description;
  std::string_view sql;      // One or more statements, applied in one transaction.
};

// All migrations, in order; Migrations().back().version == kSchemaVersion.
std::span<const Migration> Migrations();

}  // namespace rectrain::track
