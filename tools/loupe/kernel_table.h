// A compile's kernels as `loupe show` and `loupe run --profile` print them. Unprofiled: slowest
// total time first, with calls, time per call, scratch and launch. Profiled (docs/profile.md):
// slowest profiled time first, each with its time per call, share of the call, bytes, FLOPs,
// achieved GB/s and TFLOP/s and share of the device's peak, under a line saying where a call's
// time goes. Beside it, how many calls replayed as CUDA graphs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe::cli {

void printKernelTable(std::vector<KernelStatsRecord> kernels);

// A compile replayed as CUDA graphs: captures, replays and calls launched one by one, which are
// the only calls the kernel table counts (a replay runs no per-kernel accounting).
void printCudaGraphStats(const std::optional<CudaGraphStatsRecord>& stats);

// `value` with `digits` decimals: how `loupe show`'s tables write times and shares.
std::string fixed(double value, int digits);

} // namespace loupe::cli
