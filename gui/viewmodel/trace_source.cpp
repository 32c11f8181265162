#include "gui/viewmodel/trace_source.h"

#include <algorithm>

#include "inspector/trace/concrete_memory.h"
#include "inspector/trace/cuda_graph_summary.h"
#include "inspector/trace/kernel_profile.h"

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

TraceSource::TraceSource(std::shared_ptr<const TraceReader> reader, const std::string& path,
                         const LayoutOptions& layoutOptions)
    : reader_(std::move(reader)), layoutOptions_(layoutOptions),
      layoutCache_(std::make_shared<LayoutCache>(path)) {}

const LoadedSnapshot& TraceSource::snapshot(int64_t snapshotId) {
  auto it = snapshots_.find(snapshotId);
  if (it == snapshots_.end())
    it = snapshots_.emplace(snapshotId, loadSnapshot(*reader_, snapshotId)).first;
  return it->second;
}

std::shared_ptr<SnapshotScene> TraceSource::buildScene(int64_t snapshotId) {
  const LoadedSnapshot& loaded = snapshot(snapshotId);
  return loaded ? buildScene(loaded.model, loaded.hash)
                : std::make_shared<SnapshotScene>(loaded.error);
}

std::shared_ptr<SnapshotScene> TraceSource::buildScene(std::shared_ptr<const GraphModel> model,
                                                       const std::string& hash) {
  return std::make_shared<SnapshotScene>(std::move(model), hash, layoutOptions_, layoutCache_);
}

CompileDetails TraceSource::details(int64_t compileId) const {
  CompileDetails d;
  const TraceReader& r = *reader_;
  readInto(d.kernels, d.error, [&] { return r.kernels(compileId); });
  readInto(d.buffers, d.error, [&] { return r.buffers(compileId); });
  readInto(d.memoryPlan, d.error, [&] { return r.memoryPlan(compileId); });
  readInto(d.guards, d.error, [&] { return r.guards(compileId); });
  readInto(d.recompiles, d.error, [&] { return r.recompiles(compileId); });
  readInto(d.decisions, d.error, [&] { return r.decisions(compileId); });
  std::vector<KernelStatsRecord> stats;
  readInto(stats, d.error, [&] { return r.kernelStats(compileId); });
  d.profiled = anyProfiled(stats);
  d.profiledCallMs = profiledCallMs(stats);
  d.whereTimeGoes = whereTimeGoes(stats);
  for (KernelStatsRecord& k : stats)
    d.kernelStats.emplace(k.kernel, std::move(k));
  std::optional<CudaGraphStatsRecord> graphs;
  readInto(graphs, d.error, [&] { return r.cudaGraphStats(compileId); });
  if (graphs) d.cudaGraphs = describeCudaGraphStats(*graphs);
  // By profiled time when profiled, else by total time; kernels without stats last.
  auto msOf = [&](const KernelRecord& k) {
    auto it = d.kernelStats.find(k.name);
    if (it == d.kernelStats.end()) return -1.0;
    return d.profiled ? it->second.profile_ms.value_or(-1.0) : it->second.total_ms;
  };
  std::stable_sort(d.kernels.begin(), d.kernels.end(),
                   [&](const auto& a, const auto& b) { return msOf(a) > msOf(b); });
  for (const KernelRecord& kernel : d.kernels)
    d.kernelSources.push_back(highlightKernel(kernel.source));
  // A symbolic plan is drawn at the first size the compile ran at.
  std::vector<MemoryLayoutRecord> layouts;
  readInto(layouts, d.error, [&] { return r.memoryLayouts(compileId); });
  ConcreteMemory memory = concreteMemory(d.buffers, d.memoryPlan, layouts);
  d.memory = buildMemoryTimeline(memory.buffers, memory.plan);
  if (!memory.bindings.empty()) d.memory.laidOutAt = "at " + bindingsText(memory.bindings);
  return d;
}

std::vector<GraphBreakRecord> TraceSource::graphBreaks(int64_t runId) const {
  std::vector<GraphBreakRecord> breaks;
  std::string ignored;
  readInto(breaks, ignored, [&] { return reader_->graphBreaks(runId); });
  return breaks;
}

} // namespace loupe::view
