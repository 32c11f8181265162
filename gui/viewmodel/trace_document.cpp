#include "gui/viewmodel/trace_document.h"

namespace loupe::view {
namespace {

// Runs one reader query; a damaged trace leaves the field empty and names the problem.
template <typename T, typename Query>
void readInto(T& field, std::string& error, Query query) {
  try {
    field = query();
  } catch (const std::exception& e) {
    if (error.empty()) error = e.what();
  }
}

} // namespace

TraceDocument::TraceDocument(OpenedTrace opened, const std::string& path,
                             const LayoutOptions& layoutOptions)
    : opened_(std::move(opened)), path_(path), layoutOptions_(layoutOptions),
      layoutCache_(std::make_shared<LayoutCache>(path)) {}

const CompileDetails& TraceDocument::details(int64_t compileId) {
  auto it = details_.find(compileId);
  if (it != details_.end()) return it->second;
  CompileDetails d;
  const TraceReader& r = reader();
  readInto(d.kernels, d.error, [&] { return r.kernels(compileId); });
  readInto(d.buffers, d.error, [&] { return r.buffers(compileId); });
  readInto(d.memoryPlan, d.error, [&] { return r.memoryPlan(compileId); });
  readInto(d.guards, d.error, [&] { return r.guards(compileId); });
  readInto(d.recompiles, d.error, [&] { return r.recompiles(compileId); });
  d.memory = buildMemoryTimeline(d.buffers, d.memoryPlan);
  return details_.emplace(compileId, std::move(d)).first->second;
}

const std::vector<GraphBreakRecord>& TraceDocument::graphBreaks(int64_t runId) {
  auto it = breaks_.find(runId);
  if (it == breaks_.end()) {
    std::vector<GraphBreakRecord> breaks;
    std::string ignored;
    readInto(breaks, ignored, [&] { return reader().graphBreaks(runId); });
    it = breaks_.emplace(runId, std::move(breaks)).first;
  }
  return it->second;
}

const LoadedSnapshot& TraceDocument::snapshot(int64_t snapshotId) {
  auto it = snapshots_.find(snapshotId);
  if (it == snapshots_.end())
    it = snapshots_.emplace(snapshotId, loadSnapshot(reader(), snapshotId)).first;
  return it->second;
}

std::shared_ptr<SnapshotScene> TraceDocument::scene(int64_t snapshotId) {
  auto it = scenes_.find(snapshotId);
  if (it != scenes_.end()) return it->second;
  const LoadedSnapshot& loaded = snapshot(snapshotId);
  auto scene = loaded ? std::make_shared<SnapshotScene>(loaded.model, loaded.hash, layoutOptions_,
                                                        layoutCache_)
                      : std::make_shared<SnapshotScene>(loaded.error);
  return scenes_.emplace(snapshotId, scene).first->second;
}

} // namespace loupe::view
