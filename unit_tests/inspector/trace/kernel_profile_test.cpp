// A compile's profiled kernels as `loupe show` and the viewer present them: slowest profiled
// first, unprofiled ones after by total time, and a call's time by kind of implementation.
#include "inspector/trace/kernel_profile.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

std::vector<KernelStatsRecord> sample() {
  return {
      {.kernel = "k0", .implementation = "library:aten.mm", .total_ms = 9, .profile_ms = 3.5},
      {.kernel = "k1", .implementation = "generated:loupe.fused", .total_ms = 1, .profile_ms = 4},
      {.kernel = "k2", .implementation = "fallback:aten.cumsum", .total_ms = 2, .profile_ms = 2.5},
      {.kernel = "k3", .implementation = "generated:loupe.fused", .total_ms = 1, .profile_ms = 0},
      {.kernel = "%4", .implementation = "view:aten.t", .total_ms = 5}};
}

TEST(KernelProfile, ProfiledKernelsComeFirstSlowestFirst) {
  std::vector<KernelStatsRecord> kernels = sample();
  ASSERT_TRUE(anyProfiled(kernels));
  sortByProfiledTime(kernels);
  std::vector<std::string> order;
  for (const KernelStatsRecord& k : kernels)
    order.push_back(k.kernel);
  EXPECT_EQ(order, (std::vector<std::string>{"k1", "k0", "k2", "k3", "%4"}));
}

TEST(KernelProfile, WhereTheTimeGoesByKindOfImplementation) {
  std::vector<KernelStatsRecord> kernels = sample();
  EXPECT_DOUBLE_EQ(profiledCallMs(kernels), 10);
  auto shares = timeByImplementation(kernels);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[0].first, "generated");
  EXPECT_DOUBLE_EQ(shares[0].second, 0.4);
  EXPECT_EQ(whereTimeGoes(kernels), "generated 40%, library 35%, fallback 25%");
}

TEST(KernelProfile, NothingProfiledSaysNothing) {
  std::vector<KernelStatsRecord> kernels = {{.kernel = "k0", .total_ms = 1}};
  EXPECT_FALSE(anyProfiled(kernels));
  EXPECT_TRUE(timeByImplementation(kernels).empty());
  EXPECT_EQ(whereTimeGoes(kernels), "");
}

} // namespace
} // namespace loupe
