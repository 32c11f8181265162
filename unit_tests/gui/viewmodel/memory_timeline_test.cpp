// The memory panel: buffer lifetimes in lanes, the peak marked where the planner put it.
#include <gtest/gtest.h>

#include "gui/tools/graph_generator.h"
#include "gui/viewmodel/memory_timeline.h"

namespace loupe::view {
namespace {

void expectLanesDisjoint(const MemoryTimeline& timeline) {
  for (size_t i = 0; i < timeline.bars.size(); ++i) {
    const MemoryBar& a = timeline.bars[i];
    EXPECT_GE(a.lane, 0);
    EXPECT_LT(a.lane, timeline.lanes);
    for (size_t j = i + 1; j < timeline.bars.size(); ++j) {
      const MemoryBar& b = timeline.bars[j];
      if (a.lane == b.lane) {
        EXPECT_TRUE(a.lastStep < b.firstStep || b.lastStep < a.firstStep)
            << "bars " << i << " and " << j;
      }
    }
  }
}

TEST(MemoryTimeline, PeakMatchesThePlannerAndLanesNeverOverlapInTime) {
  MemoryPlanRecord plan;
  const std::vector<BufferRecord> buffers = generatedBuffers(600, plan);
  plan.measured_peak_bytes = plan.peak_bytes + 4096;
  const MemoryTimeline timeline = buildMemoryTimeline(buffers, plan);
  ASSERT_EQ(timeline.bars.size(), buffers.size());
  expectLanesDisjoint(timeline);
  EXPECT_EQ(timeline.peakBytes, plan.peak_bytes);
  EXPECT_EQ(timeline.plannedPeakBytes, plan.peak_bytes);
  EXPECT_EQ(timeline.measuredPeakBytes, plan.peak_bytes + 4096);
  EXPECT_EQ(timeline.liveBytes[static_cast<size_t>(timeline.peakStep)], plan.peak_bytes);
  EXPECT_FALSE(timeline.symbolic);
}

TEST(MemoryTimeline, FewestLanesForOverlappingLifetimes) {
  const std::vector<BufferRecord> buffers = {
      {.name = "a", .size_bytes = 100, .offset = 0, .first_use = 0, .last_use = 2},
      {.name = "b", .size_bytes = 300, .offset = 128, .first_use = 1, .last_use = 3},
      {.name = "c",
       .size_bytes = 50,
       .offset = 0,
       .first_use = 3,
       .last_use = 4}, // reuses a's lane
      {.name = "w", .size_bytes = 4096, .first_use = 0, .last_use = 4, .is_graph_input = true},
  };
  const MemoryTimeline timeline = buildMemoryTimeline(buffers, std::nullopt);
  expectLanesDisjoint(timeline);
  EXPECT_EQ(timeline.lanes, 3);
  EXPECT_EQ(timeline.bars[2].lane, timeline.bars[0].lane);
  EXPECT_EQ(timeline.steps, 5);
  // Graph inputs are drawn but are not arena memory: the peak is b + a at steps 1-2.
  EXPECT_EQ(timeline.peakStep, 1);
  EXPECT_EQ(timeline.peakBytes, 400);
  EXPECT_FALSE(timeline.plannedPeakBytes);
}

TEST(MemoryTimeline, SymbolicSizesKeepTheirExpressions) {
  const std::vector<BufferRecord> buffers = {
      {.name = "x", .size_bytes = -1, .first_use = 0, .last_use = 1, .size_expr = "256*s0"},
  };
  const MemoryTimeline timeline = buildMemoryTimeline(
      buffers, MemoryPlanRecord{.arena_bytes = -1, .peak_bytes = -1, .peak_expr = "2048*s0"});
  EXPECT_TRUE(timeline.symbolic);
  EXPECT_EQ(timeline.bars[0].sizeText, "256*s0");
  EXPECT_EQ(timeline.plannedPeakText, "2048*s0");
  EXPECT_FALSE(timeline.plannedPeakBytes);
}

TEST(MemoryTimeline, BytesAreReadable) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(12LL << 20), "12.0 MiB");
  EXPECT_EQ(formatBytes(2LL << 30), "2.00 GiB");
}

} // namespace
} // namespace loupe::view
