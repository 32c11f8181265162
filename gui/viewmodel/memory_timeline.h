// The memory panel's picture: each buffer of a compile's memory plan as a bar over the step
// axis (steps are node ordinals of the final snapshot; a buffer is live from first_use to
// last_use inclusive), packed into lanes so that no two bars of a lane are live at the same
// step, with the step of peak live bytes marked and the planned and measured peaks beside it.
// Arena buffers also carry their offset, for the alternative "arena" picture (y = offset).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe::view {

struct MemoryBar {
  int buffer = 0; // index into the buffers given
  int lane = 0;
  int64_t firstStep = 0, lastStep = 0; // inclusive
  int64_t bytes = 0;                   // -1 when symbolic (see sizeText)
  std::optional<int64_t> offset;       // in the arena; absent for graph inputs
  std::string sizeText;                // "1.0 MiB", or the symbolic size "256*s0"
};

struct MemoryTimeline {
  std::vector<MemoryBar> bars; // in the buffers' order
  int lanes = 0;
  int64_t steps = 0;              // one past the last step any buffer is live
  std::vector<int64_t> liveBytes; // per step: bytes of arena buffers live then
  int64_t peakStep = -1;          // first step with the most live arena bytes; -1 if none
  int64_t peakBytes = 0;          // live arena bytes at peakStep
  // From the memory plan, when recorded: the planner's estimate and, when run, the measure.
  std::optional<int64_t> plannedPeakBytes, measuredPeakBytes, arenaBytes;
  std::string plannedPeakText; // the plan's peak as the panel shows it ("12.5 MiB", "2048*s0")
  bool symbolic = false;       // some sizes are expressions: lanes hold, byte totals do not
  std::string laidOutAt;       // "at s0=8": a symbolic plan drawn at a size it ran at
};

MemoryTimeline buildMemoryTimeline(const std::vector<BufferRecord>& buffers,
                                   const std::optional<MemoryPlanRecord>& plan);

// "512 B", "1.5 KiB", "12.0 MiB", "2.00 GiB".
std::string formatBytes(int64_t bytes);

} // namespace loupe::view
