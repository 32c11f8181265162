#pragma once

// The viewer's layout cache in a trace (table layout_cache, schema version 5): opaque blobs
// keyed by a snapshot's content hash and a layout key. The cache is an optimisation, so
// nothing here throws: a file that cannot be read gives misses, and one that cannot be
// written (read-only, locked, not a trace) keeps nothing. Storing into an older trace
// migrates it to the latest schema first, as TraceWriter would.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace loupe {

class SqliteDb;

class LayoutCacheStore {
public:
  explicit LayoutCacheStore(std::string path);
  ~LayoutCacheStore();
  LayoutCacheStore(const LayoutCacheStore&) = delete;
  LayoutCacheStore& operator=(const LayoutCacheStore&) = delete;

  std::optional<std::string> load(std::string_view snapshot_hash, std::string_view key) noexcept;
  // True when the blob was stored.
  bool store(std::string_view snapshot_hash, std::string_view key, std::string_view blob) noexcept;

private:
  // The connection for writing, opened (and the trace migrated) on first use; null once
  // that failed, so a read-only trace is not retried on every store.
  SqliteDb* writable() noexcept;

  std::string path_;
  std::unique_ptr<SqliteDb> reader_, writer_;
  bool writeFailed_ = false;
};

} // namespace loupe
