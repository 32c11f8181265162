// A compile's profiled kernels as readers present them (`loupe show`, the viewer's kernel panel):
// slowest first by profiled time, and where a call's time goes by kind of implementation
// ("generated 41%, library 35%, fallback 24%"). Derived from the kernel_stats rows alone, so
// the CLI and the viewer say the same thing.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "inspector/trace/trace_records.h"

namespace loupe {

// Whether any kernel of the rows was profiled.
bool anyProfiled(const std::vector<KernelStatsRecord>& kernels);

// Profiled kernels first, slowest profiled time first, then the others by total time (the
// reader's order), ties by name.
void sortByProfiledTime(std::vector<KernelStatsRecord>& kernels);

// A call's profiled time: the sum of the kernels' profiled times.
double profiledCallMs(const std::vector<KernelStatsRecord>& kernels);

// Per kind of implementation (the part before ':': generated, library, fallback, reference,
// view), its share of a call's profiled time, largest first; empty when nothing took time.
std::vector<std::pair<std::string, double>>
timeByImplementation(const std::vector<KernelStatsRecord>& kernels);

// timeByImplementation as one line: "generated 41%, library 35%, fallback 24%".
std::string whereTimeGoes(const std::vector<KernelStatsRecord>& kernels);

} // namespace loupe
