// Counts over a whole trace that `loupe show` reports: the store's row counts plus how many
// nodes of the final graphs run on fallback kernels (what a user reads as "not compiled").
#pragma once

#include "inspector/trace/trace_reader.h"

namespace loupe::cli {

struct TraceCounts {
  TraceReader::Summary summary;
  int64_t finalNodes = 0;    // nodes of each compile's last snapshot, fused bodies excluded
  int64_t fallbackNodes = 0; // of those, the ones whose kernel is a fallback
};

TraceCounts countTrace(const TraceReader& reader);

} // namespace loupe::cli
