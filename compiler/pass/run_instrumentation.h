// What an executable reports about its runs, and the interface it reports through: per-kernel
// call counts and times, and per binding of the graph's symbols the memory layout it ran with
// and the memory it measured. Like PassInstrumentation, every hook is empty by default and
// compiler/ never depends on what is done with the events (the trace recorder, in inspector/,
// writes them to the trace). It lives beside PassInstrumentation rather than in runtime/ so that
// the recorder, which may use compiler/pass but not the runtime, can implement both.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/ir/sym_expr.h"
#include "compiler/pass/memory_layout.h"

namespace loupe {

struct KernelStats {
  // "generated:loupe.fused", "library:aten.mm", "reference:aten.cat", "view:aten.permute", ...
  std::string implementation;
  int64_t calls = 0;
  // Over every call: the timed calls' time scaled to all of them (the executable times a
  // sample of its calls: Executable::kTimedCallEvery).
  double totalMs = 0;
  int64_t timedCalls = 0;
  double timedMs = 0;
  // The most bytes a call of it allocated on top of what was live when it started (library
  // kernels' workspaces, packed copies of strided operands): memory a call holds beyond the plan.
  int64_t scratchBytes = 0;
  // Check mode only: against the reference implementation, over every call.
  double maxAbsError = 0;
  double maxRelError = 0; // |actual - expected| / max(|expected|, 1e-6)
  // How the last timed call launched: on CUDA, the entry the launch planner chose for those
  // tensors, with why, and its grid and block; on the CPU, for generated and library kernels, the
  // threads it could use ("2 threads"); empty for other steps.
  std::string launch;
  // Profiling (ExecutableOptions::profile, docs/profile.md), absent until a call was profiled:
  // over the profiled calls, the median call's time (on a device between CUDA events around the
  // step, on the host by the steady clock) and, at that call's sizes, the bytes and FLOPs the IR
  // says it moves and performs (compiler/ops/op_cost.h) and the larger of the shares of the
  // device's peak bandwidth and compute they reached, with which it was ("memory" or "compute";
  // no share where the peak is unknown: the host).
  int64_t profileRuns = 0;
  std::optional<double> profileMs;
  std::optional<int64_t> bytes;
  std::optional<double> flops;
  std::optional<double> peakFraction;
  std::string bound;
};

struct ExecutionStats {
  std::map<std::string, KernelStats> kernels; // by kernel name (the plan's, else the node's)
};

// The memory of the calls made with one binding of the graph's symbols (none for static shapes).
struct MemoryUse {
  const MemoryPlan* plan = nullptr; // the plan laid out (the executable's: valid while it lives)
  SymbolBindings bindings;
  MemoryLayout layout; // the layout the calls ran with
  // The high-water mark of the memory Loupe allocated during a call (AllocationMeter): the
  // arena, the outputs, copies and library kernels' workspaces; the highest over the calls.
  int64_t measuredPeakBytes = -1; // -1 until a call finished
  int64_t calls = 0;
};

class RunInstrumentation {
public:
  virtual ~RunInstrumentation() = default;
  // After the first call with a binding, and again whenever a later call measures more.
  virtual void onMemoryUse(const MemoryUse& /*use*/) {}
  // The totals since the executable was built: periodically and once more when it is
  // destroyed (ExecutableOptions::statsReportInterval).
  virtual void onKernelStats(const ExecutionStats& /*stats*/) {}
};

} // namespace loupe
