#pragma once

// The trace schema as numbered forward migrations. A trace's schema version is its
// `PRAGMA user_version`; migration i takes a trace from version i to i + 1, so the latest
// version is the number of migrations. Shipped migrations never change: a schema change is
// a new migration appended to the list (see docs/trace-schema.md).

#include <span>

namespace loupe {

class SqliteDb;

// The migration scripts, oldest first.
std::span<const char* const> schemaMigrations();
int latestSchemaVersion();

// The schema version of the trace in db, or 0 for an empty database (a new file). Throws
// TraceError for a file that is not a Loupe trace or is newer than this build.
int checkTraceSchema(SqliteDb& db);

// Brings db to the latest version, applying the missing migrations in one transaction.
// Foreign keys must not be enforced on db yet, so that a migration may rebuild a table
// (sqlite's create-copy-drop-rename procedure for changes ALTER TABLE cannot make).
void migrateToLatest(SqliteDb& db);

} // namespace loupe
