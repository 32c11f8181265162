// A compile's CUDA-graph totals (cuda_graph_stats, docs/trace-schema.md) as readers present
// them, so `loupe show` and the viewer's kernel panel say the same thing: how many calls
// replayed, which the kernel stats beside it do not count.
#pragma once

#include <string>

#include "inspector/trace/trace_records.h"

namespace loupe {

// "cuda graphs (launch-planning): 1 capture(s), 19 replay(s), 1 call(s) launched one by one
// (...)", and, when capturing stopped, why on a second line.
std::string describeCudaGraphStats(const CudaGraphStatsRecord& stats);

} // namespace loupe
