// What the background worker reads an open trace through: the reader, the layout cache, and
// the snapshots parsed so far. Only jobs on the worker thread touch it, one at a time, so its
// sqlite connections are never used by two threads at once (the reader is made by openTrace
// on the UI thread, which hands it over and never queries it again).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/viewmodel/layout_cache.h"
#include "gui/viewmodel/memory_timeline.h"
#include "gui/viewmodel/snapshot_scene.h"
#include "gui/viewmodel/source_highlight.h"
#include "gui/viewmodel/trace_tree.h"

namespace loupe::view {

// What the panels show of one compile, read once.
struct CompileDetails {
  std::vector<KernelRecord> kernels; // slowest first when the trace has their times
  std::map<std::string, KernelStatsRecord> kernelStats; // by kernel name
  // Profiling (docs/profile.md): whether any kernel was profiled (the kernels then come by
  // profiled time), a call's profiled time, and where it goes ("generated 41%, library 35%").
  bool profiled = false;
  double profiledCallMs = 0;
  std::string whereTimeGoes;
  // How the compile's calls replayed as CUDA graphs (describeCudaGraphStats); empty when they
  // never did.
  std::string cudaGraphs;
  std::vector<HighlightedKernel> kernelSources; // per kernel: its source, coloured
  std::vector<BufferRecord> buffers;
  std::optional<MemoryPlanRecord> memoryPlan;
  std::vector<GuardRecord> guards;
  std::vector<RecompileRecord> recompiles;
  std::vector<DecisionRow> decisions;
  MemoryTimeline memory;
  std::string error; // a query failed on a damaged trace; what was read is kept
};

class TraceSource {
public:
  TraceSource(std::shared_ptr<const TraceReader> reader, const std::string& path,
              const LayoutOptions& layoutOptions);

  const TraceReader& reader() const { return *reader_; }
  const std::shared_ptr<LayoutCache>& layoutCache() const { return layoutCache_; }

  // Parsed on first use and kept (a pass step reads the snapshot before it again).
  const LoadedSnapshot& snapshot(int64_t snapshotId);
  // The snapshot laid out in its default view, or a scene holding why it could not be.
  std::shared_ptr<SnapshotScene> buildScene(int64_t snapshotId);
  std::shared_ptr<SnapshotScene> buildScene(std::shared_ptr<const GraphModel> model,
                                            const std::string& hash);
  // Never throw: a damaged trace gives what could be read and, for details, the error.
  CompileDetails details(int64_t compileId) const;
  std::vector<GraphBreakRecord> graphBreaks(int64_t runId) const;

private:
  std::shared_ptr<const TraceReader> reader_;
  LayoutOptions layoutOptions_;
  std::shared_ptr<LayoutCache> layoutCache_;
  std::map<int64_t, LoadedSnapshot> snapshots_;
};

} // namespace loupe::view
