// What `loupe show` and the viewer print of a compile's CUDA-graph totals.
#include <gtest/gtest.h>

#include "inspector/trace/cuda_graph_summary.h"

namespace loupe {
namespace {

TEST(CudaGraphSummary, SaysHowManyCallsReplayedAndWhatTheKernelStatsCount) {
  EXPECT_EQ(describeCudaGraphStats(
                {.chosen_by = "option", .captures = 2, .replays = 40, .uncaptured_calls = 3}),
            "cuda graphs (option): 2 capture(s), 40 replay(s), 3 call(s) launched one by one "
            "(the kernel stats count these and each capture's two runs)");
}

TEST(CudaGraphSummary, AFailedCaptureSaysWhyOnALineOfItsOwn) {
  std::string text = describeCudaGraphStats({.chosen_by = "launch-planning",
                                             .uncaptured_calls = 5,
                                             .failure = "operation not permitted when capturing"});
  EXPECT_NE(text.find("0 capture(s), 0 replay(s), 5 call(s)"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\ncapturing stopped: operation not permitted when capturing"))
      << text;
}

} // namespace
} // namespace loupe
