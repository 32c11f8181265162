// Frame-time percentiles as --benchmark reports them.
#include <gtest/gtest.h>

#include "gui/viewmodel/frame_times.h"

namespace loupe::view {
namespace {

TEST(FrameTimes, PercentilesOfTheFramesSoFar) {
  FrameTimes times;
  EXPECT_EQ(times.percentile(0.95), 0);
  for (int ms : {40, 10, 30, 20, 50, 60, 70, 80, 90, 100, 1000})
    times.add(ms);
  EXPECT_EQ(times.count(), 11u);
  EXPECT_EQ(times.percentile(0.5), 60);
  EXPECT_EQ(times.percentile(0.95), 100) << "the sample at 0.95 * 10, rounded down";
  EXPECT_EQ(times.max(), 1000);
}

} // namespace
} // namespace loupe::view
