// The kernel panel's times, shares and order (kernel_table.h).
#include "gui/viewmodel/kernel_table.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace loupe::view {

namespace {

const KernelStatsRecord* statsOf(const CompileDetails& details, const KernelRecord& kernel) {
  auto it = details.kernelStats.find(kernel.name);
  return it == details.kernelStats.end() ? nullptr : &it->second;
}

std::string format(const char* pattern, double value) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// The value a row sorts by; -1 for a row with nothing to sort by, so it goes last descending.
double sortValue(const CompileDetails& details, const KernelRecord& kernel, KernelSortKey key) {
  const KernelStatsRecord* stats = statsOf(details, kernel);
  if (!stats) return -1;
  if (key == KernelSortKey::PeakShare) return stats->peak_fraction.value_or(-1);
  return details.profiled ? stats->profile_ms.value_or(-1) : stats->total_ms;
}

} // namespace

KernelTimeText kernelTimeText(const CompileDetails& details, const KernelRecord& kernel) {
  KernelTimeText text{"-", "-", "-"};
  const KernelStatsRecord* stats = statsOf(details, kernel);
  if (!stats) return text;
  if (!details.profiled) {
    text.time = format("%.3f", stats->total_ms) + " (" + std::to_string(stats->calls) + ")";
    return text;
  }
  if (!stats->profile_ms) return text;
  text.time = format("%.4g ms", *stats->profile_ms);
  if (details.profiledCallMs > 0)
    text.share = format("%.1f%%", 100 * *stats->profile_ms / details.profiledCallMs);
  if (stats->peak_fraction)
    text.peak = format("%.1f%% ", 100 * *stats->peak_fraction) + stats->bound.value_or("");
  return text;
}

std::vector<int> sortedKernels(const CompileDetails& details, KernelSortKey key, bool descending) {
  std::vector<int> order(details.kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const KernelRecord& ka = details.kernels[a];
    const KernelRecord& kb = details.kernels[b];
    if (key == KernelSortKey::Name) return descending ? ka.name > kb.name : ka.name < kb.name;
    double va = sortValue(details, ka, key), vb = sortValue(details, kb, key);
    return descending ? va > vb : va < vb;
  });
  return order;
}

} // namespace loupe::view
