#pragma once

// RAII access to one sqlite connection, shared by TraceWriter and TraceReader. Every failing
// sqlite call becomes a TraceError naming the file and sqlite's message; statements are
// prepared once per connection and reused.

#include "inspector/trace/trace_error.h"

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace loupe {

class SqliteDb {
public:
  // Opens path with SQLITE_OPEN_* flags. The connection is hardened because a trace may come
  // from someone else: nothing stored in the file (triggers, views, schema functions) runs.
  SqliteDb(std::string path, int open_flags);
  // A private in-memory copy of source's database, for changes that must not reach the file.
  // Its errors still name source's path.
  static std::unique_ptr<SqliteDb> inMemoryCopyOf(SqliteDb& source);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }

  // Runs a script of Loupe's own SQL (schema, pragmas); never used for stored text.
  void exec(const char* script);
  // Runs one statement with args bound to ?1..?N; returns the number of rows it changed.
  template <class... Args>
  int64_t run(std::string_view sql, const Args&... args);
  // Runs one INSERT; returns the new row's id.
  template <class... Args>
  int64_t insert(std::string_view sql, const Args&... args);

  // Runs sql without waiting for other connections' locks and returns sqlite's result code
  // (SQLITE_BUSY when another connection holds a lock it needs), for callers that decide
  // themselves whether and when to try again.
  int tryExec(const char* sql) noexcept;

  // Ends the open transaction, if any, without its changes. Never throws: it runs while
  // unwinding from the error that abandoned the transaction.
  void rollback() noexcept;

  // The cached prepared statement for sql.
  sqlite3_stmt* prepared(std::string_view sql);
  // Throws the TraceError for sqlite result code rc of the statement sql (null: none).
  [[noreturn]] void fail(int rc, const char* sql = nullptr) const;
  TraceError error(std::string_view problem) const { return TraceError(path_, problem); }

private:
  SqliteDb(std::string path, const char* filename, int open_flags);

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// One execution of a cached statement: binds on construction, steps with next(), and resets
// on destruction so the statement holds no read snapshot beyond the code reading it.
class SqliteQuery {
public:
  template <class... Args>
  SqliteQuery(SqliteDb& db, std::string_view sql, const Args&... args);
  ~SqliteQuery() { sqlite3_reset(stmt_); }
  SqliteQuery(const SqliteQuery&) = delete;
  SqliteQuery& operator=(const SqliteQuery&) = delete;

  // Advances to the next row; false when there is none.
  bool next();

  // Column of the current row as T: an integer, bool, double, std::string or std::optional
  // of one (NULL gives nullopt; for the others NULL reads as 0 or "").
  template <class T>
  T get(int column) const;
  std::string columnName(int column) const { return sqlite3_column_name(stmt_, column); }

private:
  template <class T>
  void bind(int index, const T& value);

  SqliteDb& db_;
  sqlite3_stmt* stmt_;
};

namespace sqlite_detail {
template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;
} // namespace sqlite_detail

template <class... Args>
SqliteQuery::SqliteQuery(SqliteDb& db, std::string_view sql, const Args&... args)
    : db_(db), stmt_(db.prepared(sql)) {
  int index = 0;
  (bind(++index, args), ...);
}

template <class T>
void SqliteQuery::bind(int index, const T& value) {
  int rc;
  if constexpr (sqlite_detail::is_optional_v<T>) {
    if (value) return bind(index, *value);
    rc = sqlite3_bind_null(stmt_, index);
  } else if constexpr (std::is_floating_point_v<T>) {
    rc = sqlite3_bind_double(stmt_, index, value);
  } else if constexpr (std::is_integral_v<T>) {
    rc = sqlite3_bind_int64(stmt_, index, static_cast<sqlite3_int64>(value));
  } else {
    std::string_view text(value);
    rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc != SQLITE_OK) db_.fail(rc, sqlite3_sql(stmt_));
}

template <class T>
T SqliteQuery::get(int column) const {
  if constexpr (sqlite_detail::is_optional_v<T>) {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return get<typename T::value_type>(column);
  } else if constexpr (std::is_same_v<T, std::string>) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (!text) return std::string();
    return std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return sqlite3_column_int64(stmt_, column) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(sqlite3_column_double(stmt_, column));
  } else {
    static_assert(std::is_integral_v<T>, "unsupported column type");
    return static_cast<T>(sqlite3_column_int64(stmt_, column));
  }
}

template <class... Args>
int64_t SqliteDb::run(std::string_view sql, const Args&... args) {
  SqliteQuery query(*this, sql, args...);
  while (query.next()) {
  }
  return sqlite3_changes64(db_);
}

template <class... Args>
int64_t SqliteDb::insert(std::string_view sql, const Args&... args) {
  run(sql, args...);
  return sqlite3_last_insert_rowid(db_);
}

// BEGIN IMMEDIATE: takes the write lock up front, so concurrent writers wait on the busy
// timeout instead of failing on a read-to-write upgrade. Rolls back unless committed.
class SqliteTransaction {
public:
  explicit SqliteTransaction(SqliteDb& db);
  ~SqliteTransaction();
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;

  void commit();

private:
  SqliteDb& db_;
  bool open_ = true;
};

} // namespace loupe
