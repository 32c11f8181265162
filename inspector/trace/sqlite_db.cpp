#include "inspector/trace/sqlite_db.h"

#include <utility>

namespace loupe {
namespace {

// Writers of one trace wait this long for each other's transactions (a pass's is short).
constexpr int kBusyTimeoutMs = 10'000;

// The first words of a statement, for error messages: enough to recognise it.
std::string abbreviate(const char* sql) {
  std::string words;
  for (const char* c = sql; *c && words.size() < 72; ++c) {
    bool space = *c == ' ' || *c == '\n' || *c == '\t';
    if (!space)
      words += *c;
    else if (!words.empty() && words.back() != ' ')
      words += ' ';
  }
  return words.size() < 72 ? words : words + "...";
}

} // namespace

SqliteDb::SqliteDb(std::string path, int open_flags) : SqliteDb(path, path.c_str(), open_flags) {}

SqliteDb::SqliteDb(std::string path, const char* filename, int open_flags)
    : path_(std::move(path)) {
  int rc = sqlite3_open_v2(filename, &db_, open_flags | SQLITE_OPEN_EXRESCODE, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    throw error("cannot open (" + detail + ")");
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  const std::pair<int, int> hardening[] = {
      {SQLITE_DBCONFIG_DEFENSIVE, 1},
      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
      {SQLITE_DBCONFIG_ENABLE_VIEW, 0},
      {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0},
  };
  for (auto [option, value] : hardening) {
    rc = sqlite3_db_config(db_, option, value, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_close(db_);
      throw error(std::string("cannot configure sqlite (") + sqlite3_errstr(rc) + ")");
    }
  }
}

std::unique_ptr<SqliteDb> SqliteDb::inMemoryCopyOf(SqliteDb& source) {
  std::unique_ptr<SqliteDb> copy(
      new SqliteDb(source.path_, ":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_backup* backup = sqlite3_backup_init(copy->db_, "main", source.db_, "main");
  if (!backup) copy->fail(sqlite3_extended_errcode(copy->db_));
  int rc = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) source.fail(rc);
  return copy;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, statement] : statements_)
    sqlite3_finalize(statement);
  sqlite3_close(db_);
}

void SqliteDb::exec(const char* script) {
  int rc = sqlite3_exec(db_, script, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, script);
}

int SqliteDb::tryExec(const char* sql) noexcept {
  sqlite3_busy_timeout(db_, 0);
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  return rc;
}

void SqliteDb::rollback() noexcept {
  // sqlite may already have rolled back on its own (after I/O errors, for one).
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

sqlite3_stmt* SqliteDb::prepared(std::string_view sql) {
  auto [entry, inserted] = statements_.try_emplace(std::string(sql), nullptr);
  if (inserted) {
    int rc = sqlite3_prepare_v3(db_, entry->first.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                                &entry->second, nullptr);
    if (rc != SQLITE_OK) {
      std::string text = entry->first;
      statements_.erase(entry);
      fail(rc, text.c_str());
    }
  }
  return entry->second;
}

void SqliteDb::fail(int rc, const char* sql) const {
  // sqlite3_errmsg describes the connection's last failure, which is rc's unless rc came
  // from an API that does not record it (the backup API).
  std::string detail =
      sqlite3_extended_errcode(db_) == rc ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
  case SQLITE_NOTADB:
    throw error("not a Loupe trace (not an sqlite database)");
  case SQLITE_CORRUPT:
    throw error("the trace file is corrupt (" + detail + ")");
  default:
    throw error(sql ? detail + " (in: " + abbreviate(sql) + ")" : detail);
  }
}

bool SqliteQuery::next() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) db_.fail(rc, sqlite3_sql(stmt_));
  return false;
}

SqliteTransaction::SqliteTransaction(SqliteDb& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

SqliteTransaction::~SqliteTransaction() {
  if (open_) db_.rollback();
}

void SqliteTransaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

} // namespace loupe
