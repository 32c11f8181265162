#include "inspector/trace/cuda_graph_summary.h"

namespace loupe {

std::string describeCudaGraphStats(const CudaGraphStatsRecord& stats) {
  std::string text = "cuda graphs (" + stats.chosen_by + "): " + std::to_string(stats.captures) +
                     " capture(s), " + std::to_string(stats.replays) + " replay(s), " +
                     std::to_string(stats.uncaptured_calls) +
                     " call(s) launched one by one (the kernel stats count these and each "
                     "capture's two runs)";
  if (stats.failure) text += "\ncapturing stopped: " + *stats.failure;
  return text;
}

} // namespace loupe
