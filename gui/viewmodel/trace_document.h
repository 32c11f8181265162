// One open trace, loaded and indexed outside the frame loop: the navigation tree up front, a
// compile's details and a snapshot's scene on first use, then kept, so drawing never queries
// sqlite or runs Graphviz. Layouts are cached in the trace itself when it is writable.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/viewmodel/memory_timeline.h"
#include "gui/viewmodel/snapshot_scene.h"
#include "gui/viewmodel/trace_tree.h"

namespace loupe::view {

struct CompileDetails {
  std::vector<KernelRecord> kernels;
  std::vector<BufferRecord> buffers;
  std::optional<MemoryPlanRecord> memoryPlan;
  std::vector<GuardRecord> guards;
  std::vector<RecompileRecord> recompiles;
  MemoryTimeline memory;
  std::string error; // a query failed on a damaged trace; what was read is kept
};

class TraceDocument {
public:
  // opened must hold a reader (check OpenedTrace's bool first).
  TraceDocument(OpenedTrace opened, const std::string& path, const LayoutOptions& layoutOptions);

  const TraceReader& reader() const { return *opened_.reader; }
  const TraceTree& tree() const { return opened_.tree; }
  const std::string& path() const { return path_; }
  const LayoutOptions& layoutOptions() const { return layoutOptions_; }
  const std::shared_ptr<LayoutCache>& layoutCache() const { return layoutCache_; }

  const CompileDetails& details(int64_t compileId);
  const std::vector<GraphBreakRecord>& graphBreaks(int64_t runId);
  std::shared_ptr<SnapshotScene> scene(int64_t snapshotId);
  // The parsed snapshot behind scene(); its model is null when it did not load.
  const LoadedSnapshot& snapshot(int64_t snapshotId);
  std::shared_ptr<const GraphModel> model(int64_t snapshotId) { return snapshot(snapshotId).model; }

private:
  OpenedTrace opened_;
  std::string path_;
  LayoutOptions layoutOptions_;
  std::shared_ptr<LayoutCache> layoutCache_;
  std::map<int64_t, CompileDetails> details_;
  std::map<int64_t, std::vector<GraphBreakRecord>> breaks_;
  std::map<int64_t, LoadedSnapshot> snapshots_;
  std::map<int64_t, std::shared_ptr<SnapshotScene>> scenes_;
};

} // namespace loupe::view
