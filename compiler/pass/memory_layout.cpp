// Greedy best-fit by decreasing size: large buffers are the hardest to place, so they go first
// and smaller ones fill the holes left between them. Each buffer takes the smallest aligned gap
// among the buffers already placed whose lifetimes overlap its own, or goes above all of them.
#include "compiler/pass/memory_layout.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool overlapInTime(const BufferInterval& a, const BufferInterval& b) {
  return a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
}

int64_t peakLiveBytes(const std::vector<BufferInterval>& buffers) {
  std::map<int, int64_t> deltaAtStep;
  for (const auto& b : buffers) {
    deltaAtStep[b.firstUse] += b.bytes;
    deltaAtStep[b.lastUse + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, delta] : deltaAtStep) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

} // namespace

ArenaLayout layoutArena(const std::vector<BufferInterval>& buffers, int64_t alignment) {
  if (alignment <= 0) throw Error("memory", "arena alignment must be positive");
  for (const auto& b : buffers)
    if (b.bytes < 0 || b.lastUse < b.firstUse)
      throw Error("memory", "buffer interval with " + std::to_string(b.bytes) +
                                " bytes and steps " + std::to_string(b.firstUse) + ".." +
                                std::to_string(b.lastUse) + " is malformed");

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].firstUse < buffers[b].firstUse;
  });

  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t index : order) {
    const BufferInterval& buffer = buffers[index];
    if (buffer.bytes == 0) continue; // occupies nothing: offset 0 conflicts with no one
    std::vector<std::pair<int64_t, int64_t>> busy; // [begin, end) of time-overlapping buffers
    for (size_t other : placed)
      if (overlapInTime(buffer, buffers[other]))
        busy.emplace_back(layout.offsets[other], layout.offsets[other] + buffers[other].bytes);
    std::sort(busy.begin(), busy.end());

    int64_t cursor = 0;
    int64_t bestOffset = -1, bestGap = 0;
    for (const auto& [begin, end] : busy) {
      int64_t candidate = alignUp(cursor, alignment);
      int64_t gap = begin - candidate;
      if (gap >= buffer.bytes && (bestOffset < 0 || gap < bestGap)) {
        bestOffset = candidate;
        bestGap = gap;
      }
      cursor = std::max(cursor, end);
    }
    layout.offsets[index] = bestOffset >= 0 ? bestOffset : alignUp(cursor, alignment);
    layout.arenaBytes = std::max(layout.arenaBytes, layout.offsets[index] + buffer.bytes);
    placed.push_back(index);
  }
  layout.peakBytes = peakLiveBytes(buffers);
  return layout;
}

} // namespace loupe
