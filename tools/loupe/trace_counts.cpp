#include "tools/loupe/trace_counts.h"

#include <map>

namespace loupe::cli {

TraceCounts countTrace(const TraceReader& reader) {
  TraceCounts counts;
  counts.summary = reader.summary();
  for (const auto& compile : reader.compiles()) {
    auto passes = reader.passes(compile.id);
    if (passes.empty() || !passes.back().snapshot_id) continue;
    std::map<std::string, std::string> kindOfKernel;
    for (const auto& k : reader.kernels(compile.id))
      kindOfKernel[k.name] = k.kind;
    for (const auto& node : reader.snapshot(*passes.back().snapshot_id).nodes) {
      if (node.fused_group) continue;
      ++counts.finalNodes;
      if (node.kernel && kindOfKernel[*node.kernel] == "fallback") ++counts.fallbackNodes;
    }
  }
  return counts;
}

} // namespace loupe::cli
