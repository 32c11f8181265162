// Layouts kept in the trace (table layout_cache, docs/trace-schema.md), so a second open of
// a large graph is instant. A layout is stored as a blob keyed by the snapshot's content hash
// and a key of everything else it depends on (layout options, the module laid out and the
// expansion inside it). A read-only trace, an older trace that cannot be upgraded or a failed
// write just means no cache: nothing here throws or reports an error to the user.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gui/viewmodel/graph_layout.h"

namespace loupe {
class LayoutCacheStore;
}

namespace loupe::view {

// A compact binary form; deserialiseLayout returns nullopt for anything it did not write
// (the trace is untrusted input, so a damaged blob is a cache miss, not a crash).
std::string serialiseLayout(const GraphLayout& layout);
std::optional<GraphLayout> deserialiseLayout(std::string_view blob);

class LayoutCache {
public:
  // In memory only (tests, and traces that cannot be written).
  LayoutCache();
  // Backed by the trace at tracePath; entries found there or stored here persist.
  explicit LayoutCache(std::string tracePath);
  ~LayoutCache();
  LayoutCache(const LayoutCache&) = delete;
  LayoutCache& operator=(const LayoutCache&) = delete;

  std::optional<GraphLayout> load(const std::string& snapshotHash, const std::string& key);
  void store(const std::string& snapshotHash, const std::string& key, const GraphLayout& layout);

private:
  std::map<std::pair<std::string, std::string>, GraphLayout> memory_;
  std::unique_ptr<LayoutCacheStore> store_;
};

} // namespace loupe::view
