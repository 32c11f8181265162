// The kernel table of `loupe show` and `loupe run --profile` (kernel_table.h).
#include "tools/loupe/kernel_table.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "inspector/trace/cuda_graph_summary.h"
#include "inspector/trace/kernel_profile.h"

namespace loupe::cli {

namespace {

constexpr size_t kKernelsShown = 10;

// 4 significant digits: a microsecond kernel's time in ms keeps its digits.
std::string significant(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

// 3 significant digits with a decimal prefix: "896 B", "1.05 MB", "2.15 GFLOP".
std::string scaled(double value, const char* unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  size_t prefix = 0;
  while (value >= 999.5 && prefix + 1 < std::size(kPrefixes)) {
    value /= 1000;
    ++prefix;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g %s%s", value, kPrefixes[prefix], unit);
  return buffer;
}

void printTotals(const std::vector<KernelStatsRecord>& kernels) {
  std::printf("    kernel time (slowest first):\n");
  for (size_t i = 0; i < kernels.size() && i < kKernelsShown; ++i) {
    const KernelStatsRecord& k = kernels[i];
    std::printf("      %-8s %-34s %8lld calls %10s ms %10s ms/call", k.kernel.c_str(),
                k.implementation.c_str(), static_cast<long long>(k.calls),
                fixed(k.total_ms, 3).c_str(),
                fixed(k.calls ? k.total_ms / double(k.calls) : 0, 4).c_str());
    if (k.scratch_bytes > 0)
      std::printf("  scratch %lld B", static_cast<long long>(k.scratch_bytes));
    if (k.launch) std::printf("  launch %s", k.launch->c_str());
    std::printf("\n");
  }
}

void printProfile(std::vector<KernelStatsRecord> kernels) {
  sortByProfiledTime(kernels);
  double callMs = profiledCallMs(kernels);
  int64_t runs = 0;
  for (const KernelStatsRecord& k : kernels)
    runs = std::max(runs, k.profile_runs.value_or(0));
  std::printf("    kernel time (profiled over %lld calls, slowest first): %s ms per call: %s\n",
              static_cast<long long>(runs), significant(callMs).c_str(),
              whereTimeGoes(kernels).c_str());
  std::printf("      %-8s %-34s %10s %6s %10s %12s %9s %8s %s\n", "kernel", "implementation",
              "ms/call", "share", "bytes", "FLOPs", "GB/s", "TFLOP/s", "peak");
  for (size_t i = 0; i < kernels.size() && i < kKernelsShown; ++i) {
    const KernelStatsRecord& k = kernels[i];
    if (!k.profile_ms) {
      std::printf("      %-8s %-34s not profiled\n", k.kernel.c_str(), k.implementation.c_str());
      continue;
    }
    double ms = *k.profile_ms, seconds = ms / 1e3;
    std::string share = callMs > 0 ? fixed(100 * ms / callMs, 1) + "%" : "-";
    std::string bandwidth = ms > 0 ? fixed(double(k.bytes.value_or(0)) / seconds / 1e9, 2) : "-";
    std::string compute = ms > 0 ? fixed(k.flops.value_or(0) / seconds / 1e12, 3) : "-";
    std::string peak =
        k.peak_fraction ? fixed(100 * *k.peak_fraction, 1) + "% " + k.bound.value_or("") : "-";
    std::printf("      %-8s %-34s %10s %6s %10s %12s %9s %8s %s\n", k.kernel.c_str(),
                k.implementation.c_str(), significant(ms).c_str(), share.c_str(),
                scaled(double(k.bytes.value_or(0)), "B").c_str(),
                scaled(k.flops.value_or(0), "FLOP").c_str(), bandwidth.c_str(), compute.c_str(),
                peak.c_str());
  }
}

} // namespace

std::string fixed(double value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

void printKernelTable(std::vector<KernelStatsRecord> kernels) {
  if (kernels.empty()) return;
  if (anyProfiled(kernels))
    printProfile(kernels);
  else
    printTotals(kernels);
  if (kernels.size() > kKernelsShown)
    std::printf("      ... %zu more\n", kernels.size() - kKernelsShown);
}

void printCudaGraphStats(const std::optional<CudaGraphStatsRecord>& stats) {
  if (!stats) return;
  std::string text = describeCudaGraphStats(*stats);
  for (size_t start = 0, end = 0; start < text.size(); start = end + 1) {
    end = std::min(text.find('\n', start), text.size());
    std::printf("    %s%s\n", start ? "  " : "", text.substr(start, end - start).c_str());
  }
}

} // namespace loupe::cli
