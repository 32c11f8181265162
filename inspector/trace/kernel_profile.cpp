// A compile's profiled kernels, sorted and summed (kernel_profile.h).
#include "inspector/trace/kernel_profile.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace loupe {

bool anyProfiled(const std::vector<KernelStatsRecord>& kernels) {
  return std::any_of(kernels.begin(), kernels.end(),
                     [](const KernelStatsRecord& k) { return k.profile_ms.has_value(); });
}

void sortByProfiledTime(std::vector<KernelStatsRecord>& kernels) {
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelStatsRecord& a, const KernelStatsRecord& b) {
                     if (a.profile_ms.has_value() != b.profile_ms.has_value())
                       return a.profile_ms.has_value();
                     if (a.profile_ms && *a.profile_ms != *b.profile_ms)
                       return *a.profile_ms > *b.profile_ms;
                     if (a.total_ms != b.total_ms) return a.total_ms > b.total_ms;
                     return a.kernel < b.kernel;
                   });
}

double profiledCallMs(const std::vector<KernelStatsRecord>& kernels) {
  double total = 0;
  for (const KernelStatsRecord& k : kernels)
    total += k.profile_ms.value_or(0);
  return total;
}

std::vector<std::pair<std::string, double>>
timeByImplementation(const std::vector<KernelStatsRecord>& kernels) {
  double total = profiledCallMs(kernels);
  std::vector<std::pair<std::string, double>> shares;
  if (total <= 0) return shares;
  std::map<std::string, double> byKind;
  for (const KernelStatsRecord& k : kernels)
    if (k.profile_ms)
      byKind[k.implementation.substr(0, k.implementation.find(':'))] += *k.profile_ms;
  for (const auto& [kind, ms] : byKind)
    shares.emplace_back(kind, ms / total);
  std::stable_sort(shares.begin(), shares.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return shares;
}

std::string whereTimeGoes(const std::vector<KernelStatsRecord>& kernels) {
  std::string text;
  for (const auto& [kind, share] : timeByImplementation(kernels))
    text += (text.empty() ? "" : ", ") + kind + " " +
            std::to_string(static_cast<int>(std::lround(100 * share))) + "%";
  return text;
}

} // namespace loupe
