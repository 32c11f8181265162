// The kernel panel's table: a profiled compile's rows show profiled time, share of a call and
// share of the peak, and sort by any of them; an unprofiled one's show total time and calls.
#include <gtest/gtest.h>

#include "gui/viewmodel/kernel_table.h"

namespace loupe::view {
namespace {

CompileDetails profiledDetails() {
  CompileDetails d;
  for (const char* name : {"k0", "k1", "k2"})
    d.kernels.push_back({.name = name, .kind = "generated", .target = "cuda:0"});
  d.kernelStats["k0"] = {.kernel = "k0", .calls = 6, .total_ms = 1, .profile_ms = 0.25};
  d.kernelStats["k1"] = {.kernel = "k1",
                         .calls = 6,
                         .total_ms = 3,
                         .profile_ms = 0.75,
                         .peak_fraction = 0.875,
                         .bound = "memory"};
  d.profiled = true;
  d.profiledCallMs = 1;
  return d;
}

TEST(KernelTable, ProfiledRowsShowTimeShareAndPeak) {
  CompileDetails d = profiledDetails();
  KernelTimeText k1 = kernelTimeText(d, d.kernels[1]);
  EXPECT_EQ(k1.time, "0.75 ms");
  EXPECT_EQ(k1.share, "75.0%");
  EXPECT_EQ(k1.peak, "87.5% memory");
  KernelTimeText k0 = kernelTimeText(d, d.kernels[0]); // on a device without known peaks
  EXPECT_EQ(k0.share, "25.0%");
  EXPECT_EQ(k0.peak, "-");
  KernelTimeText k2 = kernelTimeText(d, d.kernels[2]); // no stats at all
  EXPECT_EQ(k2.time, "-");
}

TEST(KernelTable, RowsSortByTimePeakOrName) {
  CompileDetails d = profiledDetails();
  EXPECT_EQ(sortedKernels(d, KernelSortKey::Time, true), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(sortedKernels(d, KernelSortKey::Time, false), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(sortedKernels(d, KernelSortKey::PeakShare, true), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(sortedKernels(d, KernelSortKey::Name, false), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(sortedKernels(d, KernelSortKey::Name, true), (std::vector<int>{2, 1, 0}));
}

TEST(KernelTable, UnprofiledRowsShowTotalTimeAndCalls) {
  CompileDetails d = profiledDetails();
  d.profiled = false;
  KernelTimeText k1 = kernelTimeText(d, d.kernels[1]);
  EXPECT_EQ(k1.time, "3.000 (6)");
  EXPECT_EQ(k1.share, "-");
  EXPECT_EQ(k1.peak, "-");
  d.kernelStats["k0"].total_ms = 5; // unprofiled, rows sort by total time
  EXPECT_EQ(sortedKernels(d, KernelSortKey::Time, true), (std::vector<int>{0, 1, 2}));
}

} // namespace
} // namespace loupe::view
