#include "gui/viewmodel/memory_timeline.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace loupe::view {

std::string formatBytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  for (value /= 1024; value >= 1024 && unit + 1 < std::size(kUnits); value /= 1024)
    ++unit;
  char text[32];
  std::snprintf(text, sizeof text, unit >= 2 ? "%.2f %s" : "%.1f %s", value, kUnits[unit]);
  return text;
}

MemoryTimeline buildMemoryTimeline(const std::vector<BufferRecord>& buffers,
                                   const std::optional<MemoryPlanRecord>& plan) {
  MemoryTimeline timeline;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferRecord& b = buffers[i];
    const bool symbolic = b.size_bytes < 0;
    timeline.symbolic = timeline.symbolic || symbolic;
    timeline.bars.push_back(
        {.buffer = static_cast<int>(i),
         .firstStep = b.first_use,
         .lastStep = std::max(b.first_use, b.last_use),
         .bytes = symbolic ? -1 : b.size_bytes,
         .offset = b.offset,
         .sizeText = symbolic ? b.size_expr.value_or("?") : formatBytes(b.size_bytes)});
    timeline.steps = std::max(timeline.steps, timeline.bars.back().lastStep + 1);
  }

  // Greedy interval colouring in order of start: each bar takes the first lane free by then,
  // which uses as few lanes as the most bars live at one step.
  std::vector<size_t> order(timeline.bars.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return timeline.bars[a].firstStep < timeline.bars[b].firstStep;
  });
  std::vector<int64_t> laneEnd; // the last step of the last bar in each lane
  for (size_t i : order) {
    MemoryBar& bar = timeline.bars[i];
    auto free = std::find_if(laneEnd.begin(), laneEnd.end(),
                             [&](int64_t end) { return end < bar.firstStep; });
    if (free == laneEnd.end()) free = laneEnd.insert(laneEnd.end(), 0);
    *free = bar.lastStep;
    bar.lane = static_cast<int>(free - laneEnd.begin());
  }
  timeline.lanes = static_cast<int>(laneEnd.size());

  // The planner's peak counts the arena only: graph inputs live in the caller's memory.
  timeline.liveBytes.assign(static_cast<size_t>(timeline.steps), 0);
  for (const MemoryBar& bar : timeline.bars)
    if (bar.offset && bar.bytes > 0)
      for (int64_t s = bar.firstStep; s <= bar.lastStep; ++s)
        timeline.liveBytes[static_cast<size_t>(s)] += bar.bytes;
  const auto peak = std::max_element(timeline.liveBytes.begin(), timeline.liveBytes.end());
  if (peak != timeline.liveBytes.end() && *peak > 0) {
    timeline.peakStep = peak - timeline.liveBytes.begin();
    timeline.peakBytes = *peak;
  }

  if (plan) {
    if (plan->peak_bytes >= 0) timeline.plannedPeakBytes = plan->peak_bytes;
    if (plan->arena_bytes >= 0) timeline.arenaBytes = plan->arena_bytes;
    timeline.measuredPeakBytes = plan->measured_peak_bytes;
    timeline.plannedPeakText =
        plan->peak_bytes >= 0 ? formatBytes(plan->peak_bytes) : plan->peak_expr.value_or("?");
  }
  return timeline;
}

} // namespace loupe::view
