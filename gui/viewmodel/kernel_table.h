// The kernel panel's table without ImGui: the time each kernel row shows and sorts by (its
// profiled time per call when the compile was profiled, docs/profile.md; else its total time),
// its share of a call, its share of the device's peak, and the rows' order for a sort column.
// The panel draws what these return.
#pragma once

#include <string>
#include <vector>

#include "gui/viewmodel/trace_source.h"

namespace loupe::view {

enum class KernelSortKey { Name, Time, PeakShare };

// What a kernel's row shows in its time columns ("-" where there is nothing to show).
struct KernelTimeText {
  std::string time;  // profiled: "0.0123 ms"; else "1.234 (16)": total ms and calls
  std::string share; // profiled: of a call's time, "41.2%"
  std::string peak;  // profiled on a device with known peaks: "87.5% memory"
};
KernelTimeText kernelTimeText(const CompileDetails& details, const KernelRecord& kernel);

// The indices of details.kernels in the order of `key`; ties keep the order read (slowest
// first).
std::vector<int> sortedKernels(const CompileDetails& details, KernelSortKey key, bool descending);

} // namespace loupe::view
