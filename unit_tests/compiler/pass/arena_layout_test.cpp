#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "compiler/pass/memory_layout.h"

namespace loupe {
namespace {

// Independent of the layout: the largest sum of bytes over buffers live at one step.
int64_t bruteForcePeak(const std::vector<BufferInterval>& buffers) {
  int64_t peak = 0;
  for (const auto& at : buffers)
    for (int step : {at.firstUse, at.lastUse}) {
      int64_t live = 0;
      for (const auto& b : buffers)
        if (b.firstUse <= step && step <= b.lastUse) live += b.bytes;
      peak = std::max(peak, live);
    }
  return peak;
}

void expectValidLayout(const std::vector<BufferInterval>& buffers, const ArenaLayout& layout,
                       int64_t alignment) {
  ASSERT_EQ(layout.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(layout.offsets[i] % alignment, 0) << "buffer " << i;
    EXPECT_GE(layout.offsets[i], 0);
    EXPECT_LE(layout.offsets[i] + buffers[i].bytes, layout.arenaBytes) << "buffer " << i;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const auto &a = buffers[i], &b = buffers[j];
      bool liveTogether = a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
      if (!liveTogether || a.bytes == 0 || b.bytes == 0) continue;
      bool disjoint = layout.offsets[i] + a.bytes <= layout.offsets[j] ||
                      layout.offsets[j] + b.bytes <= layout.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap while both live";
    }
  }
  EXPECT_GE(layout.arenaBytes, layout.peakBytes);
  EXPECT_EQ(layout.peakBytes, bruteForcePeak(buffers));
}

TEST(ArenaLayout, RandomIntervalSetsNeverOverlapLiveBuffers) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<BufferInterval> buffers(std::uniform_int_distribution<size_t>(1, 40)(rng));
    for (auto& b : buffers) {
      b.bytes = std::uniform_int_distribution<int64_t>(0, 5000)(rng);
      b.firstUse = std::uniform_int_distribution<int>(0, 25)(rng);
      b.lastUse = b.firstUse + std::uniform_int_distribution<int>(0, 8)(rng);
    }
    int64_t alignment = trial % 2 ? 64 : 16;
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectValidLayout(buffers, layoutArena(buffers, alignment), alignment);
    if (HasFailure()) return;
  }
}

TEST(ArenaLayout, PeakOfAChainIsTheLargestAdjacentPair) {
  // a(0..1) -> b(1..2) -> c(2..3): at step 1, a and b are live (100+200); at step 2, b and c.
  std::vector<BufferInterval> chain = {{100, 0, 1}, {200, 1, 2}, {300, 2, 3}};
  ArenaLayout layout = layoutArena(chain);
  EXPECT_EQ(layout.peakBytes, 500);
  expectValidLayout(chain, layout, 64);
}

TEST(ArenaLayout, PeakCountsEveryBufferLiveAtTheSameStep) {
  std::vector<BufferInterval> fanOut = {{64, 0, 3}, {128, 1, 3}, {256, 2, 3}, {1024, 4, 4}};
  EXPECT_EQ(layoutArena(fanOut).peakBytes, 1024);
  fanOut[3].firstUse = 3;
  EXPECT_EQ(layoutArena(fanOut).peakBytes, 64 + 128 + 256 + 1024);
}

TEST(ArenaLayout, BuffersWithDisjointLifetimesShareMemory) {
  std::vector<BufferInterval> sequential = {{1000, 0, 0}, {1000, 1, 1}, {1000, 2, 2}};
  ArenaLayout layout = layoutArena(sequential);
  EXPECT_EQ(layout.arenaBytes, 1000);
  EXPECT_EQ(layout.peakBytes, 1000);
}

TEST(ArenaLayout, SmallBufferFillsAHoleLeftBetweenLargerOnes) {
  // x and z are live throughout; y lives only at step 0, so w (step 1) can reuse y's slot.
  std::vector<BufferInterval> buffers = {{512, 0, 1}, {256, 0, 0}, {512, 0, 1}, {192, 1, 1}};
  ArenaLayout layout = layoutArena(buffers);
  EXPECT_EQ(layout.arenaBytes, 512 + 512 + 256);
  expectValidLayout(buffers, layout, 64);
}

TEST(ArenaLayout, OffsetsAreAlignedEvenForTinyBuffers) {
  std::vector<BufferInterval> bytes = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
  ArenaLayout layout = layoutArena(bytes, 64);
  std::vector<int64_t> offsets = layout.offsets;
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 64, 128}));
  EXPECT_EQ(layout.arenaBytes, 129);
  EXPECT_EQ(layout.peakBytes, 3);

  for (int64_t offset : layoutArena(bytes, 256).offsets)
    EXPECT_EQ(offset % 256, 0);
}

TEST(ArenaLayout, EmptyInputGivesAnEmptyArena) {
  ArenaLayout layout = layoutArena({});
  EXPECT_TRUE(layout.offsets.empty());
  EXPECT_EQ(layout.arenaBytes, 0);
  EXPECT_EQ(layout.peakBytes, 0);
}

TEST(ArenaLayout, MalformedIntervalIsAnError) {
  EXPECT_ANY_THROW(layoutArena({{64, 3, 1}}));
  EXPECT_ANY_THROW(layoutArena({{-1, 0, 0}}));
}

} // namespace
} // namespace loupe
