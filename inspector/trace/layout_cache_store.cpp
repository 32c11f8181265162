#include "inspector/trace/layout_cache_store.h"

#include "inspector/trace/sqlite_db.h"
#include "inspector/trace/trace_schema.h"

namespace loupe {
namespace {

constexpr int kFirstVersionWithCache = 5;

bool hasCacheTable(SqliteDb& db) {
  SqliteQuery table(db,
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'layout_cache'");
  return table.next();
}

} // namespace

LayoutCacheStore::LayoutCacheStore(std::string path) : path_(std::move(path)) {}

LayoutCacheStore::~LayoutCacheStore() = default;

std::optional<std::string> LayoutCacheStore::load(std::string_view snapshot_hash,
                                                  std::string_view key) noexcept {
  try {
    SqliteDb* db = writer_ ? writer_.get() : reader_.get();
    if (!db) {
      reader_ = std::make_unique<SqliteDb>(path_, SQLITE_OPEN_READONLY);
      checkTraceSchema(*reader_);
      db = reader_.get();
    }
    if (!hasCacheTable(*db)) return std::nullopt;
    SqliteQuery row(*db,
                    "SELECT layout FROM layout_cache WHERE snapshot_hash = ?1 AND layout_key = ?2",
                    snapshot_hash, key);
    if (!row.next()) return std::nullopt;
    return row.get<std::string>(0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

SqliteDb* LayoutCacheStore::writable() noexcept {
  if (writer_ || writeFailed_) return writer_.get();
  try {
    auto db = std::make_unique<SqliteDb>(path_, SQLITE_OPEN_READWRITE);
    if (checkTraceSchema(*db) < kFirstVersionWithCache) migrateToLatest(*db);
    writer_ = std::move(db);
    reader_.reset();
  } catch (const std::exception&) {
    writeFailed_ = true;
  }
  return writer_.get();
}

bool LayoutCacheStore::store(std::string_view snapshot_hash, std::string_view key,
                             std::string_view blob) noexcept {
  SqliteDb* db = writable();
  if (!db) return false;
  try {
    constexpr std::string_view sql = R"sql(
      INSERT OR REPLACE INTO layout_cache (snapshot_hash, layout_key, layout, created_at)
      VALUES (?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))sql";
    sqlite3_stmt* stmt = db->prepared(sql);
    sqlite3_reset(stmt);
    sqlite3_bind_text64(stmt, 1, snapshot_hash.data(), snapshot_hash.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
    sqlite3_bind_text64(stmt, 2, key.data(), key.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    sqlite3_bind_blob64(stmt, 3, blob.data(), blob.size(), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE;
  } catch (const std::exception&) {
    return false;
  }
}

} // namespace loupe
