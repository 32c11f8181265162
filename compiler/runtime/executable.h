// Runs a compiled graph: one step per top-level node, each executed as the plan chose (a
// generated kernel, a library kernel, a zero-copy view, the op's reference implementation, or the
// embedder's fallback for ops Loupe does not know). On the host by default; on a device through
// its DeviceBackend (device_backend.h), which supplies memory, copies and kernels.
//
// With an empty plan every node gets a default: views through their ViewFn, fused groups by
// interpreting their body with reference implementations, other registered ops through their
// reference, unregistered ops through the fallback. So any verified graph can run.
//
// Memory: the executable runs the memory plan (compiler/pass/memory_layout.h): the plan it is
// given, or, when it is given none, the one planMemory makes. Intermediates live in one arena,
// at the plan's offsets for static shapes, or laid out by the same function for each binding of
// a symbolic plan's symbols (the layout is kept per binding, the arena sized to it). Graph
// outputs, and the computed values that output views look into, are allocated outside the
// arena, so a view output is returned as a view of that allocation, not a copy: on the host
// each on its own, on a device all of a run's in one allocation (each a tensor within it, the
// memory freed when the last of them dies), since each device allocation is a call into the
// embedder's allocator. Outputs never alias the
// arena or each other (a second output on one allocation is a copy), nor an input: an output
// that is one, or a view of one, is copied, unless the embedder asks for inputs returned as
// they are. Each call measures the memory it allocates (AllocationMeter) for its binding.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/cpu_compiler.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/pass/memory_layout.h"
#include "compiler/pass/plan.h"
#include "compiler/pass/run_instrumentation.h"
#include "compiler/runtime/device_backend.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

class AllocationMeter;

// Executes a node Loupe has no implementation for. `outputs` arrive allocated with the node's
// result shapes and dtypes; the callback fills them, or replaces them with tensors of its own
// (which must not share memory with the inputs or each other): one of the same shape, dtype and
// device is then the step's result as it is, without a copy (an aten op's result, kept alive by
// the tensor), any other is copied in. `bindings` are the run's symbol values: an
// attribute of the node may be symbolic (torch.roll's shift of s0//2 under dynamic shapes), and
// the callback evaluates it with them.
using FallbackFn =
    std::function<void(const Node& node, const std::vector<const Tensor*>& inputs,
                       std::vector<Tensor>& outputs, const SymbolBindings& bindings)>;

struct ExecutableOptions {
  // After each generated or library kernel, also run the reference on the same inputs and
  // record the error. The outputs are always the kernel's.
  bool check = false;
  FallbackFn fallback;
  const OpRegistry* registry = nullptr; // null: the built-in ops
  CpuCompilerOptions compiler;
  // Sees (and may change) each step's outputs right after it runs, before check mode compares
  // them: how tests plant a wrong kernel.
  std::function<void(const std::string& kernel, std::vector<Tensor>& outputs)> afterStep;
  // An output that is a graph input comes back as the caller's tensor itself, not a copy: for
  // an embedder that hands its own handle on that input back (see outputInputs).
  bool inputOutputsAsIs = false;
  // Build the generated kernels on a thread of their own, so the constructor returns while
  // the host compiler runs: an embedder overlaps the build with its own work (the Python
  // backend with what Dynamo does after the backend returns). The first run, or
  // waitForKernels(), waits for it and reports a failed build.
  bool buildKernelsInBackground = false;
  // Told of each binding's memory and, every statsReportInterval of wall time (checked at the
  // end of a run) and when the executable is destroyed, of the kernel stats. Not owned; it
  // must outlive the executable. Its hooks run on the thread that calls run().
  RunInstrumentation* instrumentation = nullptr;
  std::chrono::milliseconds statsReportInterval{5000};
  // Null: the graph runs on the host. Otherwise the device it runs on; inputs are on it.
  std::shared_ptr<DeviceBackend> device;
  // Profiling (docs/profile.md): calls 2 to 1 + kProfiledCalls (the first has cold caches and
  // loads lazily) time every step, on a device between its timer's events (read after the
  // call's steps are queued, which waits for the device once), on the host by the steady clock;
  // each kernel's stats get the median time, its bytes and FLOPs and its share of the device's
  // peak (KernelStats). Off, no call does any of it.
  bool profile = false;
};

class Executable {
public:
  // Copies the graph; compiles the plan's generated kernels (through the on-disk cache), or
  // starts their build (ExecutableOptions::buildKernelsInBackground).
  Executable(const Graph& graph, const Plan& plan, ExecutableOptions options = {});
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Inputs in graph-input order; an index input is a 0-d integer tensor. Binds the graph's
  // symbols from the input shapes and throws Error("runtime", ...) naming the input and dim
  // that disagree. Not reentrant: one run at a time per executable.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  // Returns once the generated kernels are built; throws the build's Error("codegen", ...) when
  // it failed, on this and every later call (and run). Immediate without a background build.
  void waitForKernels();
  // How long building the generated kernels took (cache hits included), once they are built.
  double kernelBuildMs() const { return kernelBuildMs_; }
  // Per generated kernel (by the plan's name), once built: whether it came from the kernel
  // cache or was compiled now, and how long its library took.
  const std::map<std::string, KernelBuildRecord>& kernelBuilds() const { return kernelBuilds_; }
  // Where it runs: the host, or its backend's device.
  Device device() const { return options_.device ? options_.device->device() : Device{}; }

  const ExecutionStats& stats() const { return stats_; }
  void resetStats();
  // Tells the instrumentation the kernel stats now (an embedder's exit handler: the executable
  // may never be destroyed); the next periodic report is due an interval later.
  void reportStats();

  // The memory plan it runs (given, or made for an empty plan).
  const MemoryPlan& memoryPlan() const { return memory_; }
  // The layout of the last run's binding (empty before the first run).
  const MemoryLayout& memoryLayout() const;
  // Per binding run so far (at most kMaxMemoryUses of them are kept).
  const std::map<SymbolBindings, MemoryUse>& memoryUses() const { return memoryUses_; }
  static constexpr size_t kMaxMemoryUses = 64;
  // Kernel times are sampled: every call among the first kTimedCallEvery, then one in
  // kTimedCallEvery; KernelStats::totalMs scales the sample to every call.
  static constexpr int64_t kTimedCallEvery = 16;
  // How many calls profiling times (ExecutableOptions::profile).
  static constexpr int64_t kProfiledCalls = 5;
  int64_t arenaBytes() const { return arena_.defined() ? arena_.numel() : 0; }
  // Drops the arena; the next run allocates one again. For a CUDA graph capture: the captured
  // run's memory must be taken during the capture (the graph keeps it), not be an arena that a
  // later size replaces and frees while the graph still points into it.
  void releaseArena();
  // A packed copy of `value` where the graph runs (an input handed back as an output).
  Tensor copyOf(const Tensor& value) const;
  // Per graph output: the position of the graph input it is, or -1 for a computed output.
  const std::vector<int>& outputInputs() const { return outputInputs_; }

private:
  struct Step;
  struct Buffer;
  SymbolBindings bind(const std::vector<Tensor>& inputs) const;
  void planSlots();
  struct KernelBuild {
    std::vector<CpuKernelFn> functions; // host kernels, in step order
    std::map<std::string, KernelBuildRecord> records;
    double ms;
  };
  // Storage of `shape` where the graph runs.
  Tensor allocate(DType dtype, const std::vector<int64_t>& shape) const;
  // to = from across the host and the device (a fallback's result, a reference's on the host).
  void copyInto(Tensor& to, const Tensor& from) const;
  // On a device: host copies of the device tensors among `tensors` (host ones as they are).
  // On the host: nothing.
  std::vector<Tensor> onHost(const std::vector<const Tensor*>& tensors) const;
  void attachKernels(const KernelBuild& built);
  void layOut(const SymbolBindings& bindings);
  // Puts a run's computed values in their slots: arena views, and the outputs' own memory.
  void allocateOutputs();
  // After a run: counts it for its binding and reports what is due to the instrumentation.
  void report(int64_t measuredPeakBytes);
  void execute(Step& step, const SymbolBindings& bindings, AllocationMeter& meter, bool timed,
               bool profiled);
  // After a profiled call: each step's time joins its samples, its stats get their summary.
  void recordProfile();
  static Tensor viewOf(Step& step, const Tensor& base);

  std::unique_ptr<Graph> graph_;
  ExecutableOptions options_;
  const OpRegistry& registry_;
  std::vector<Step> steps_;
  // Every value a run holds has a slot: the graph's inputs first, then each step's results.
  std::vector<Tensor> slots_;
  std::vector<Buffer> buffers_;  // the tensors steps compute into, in step order
  std::vector<int> outputSlots_; // -1 for an index output
  std::vector<bool> outputOwned_;
  std::vector<int> outputInputs_;
  // The layout of the last binding: an arena view per arena buffer, a shape per output buffer.
  std::optional<SymbolBindings> laidOutFor_;
  MemoryPlan memory_;
  std::map<SymbolBindings, MemoryUse> memoryUses_;
  MemoryUse unkeptUse_;      // the binding's, past kMaxMemoryUses
  MemoryUse* use_ = nullptr; // the last binding's: in memoryUses_, or unkeptUse_
  std::vector<Tensor> bufferTensors_;
  size_t outputBlockBytes_ = 0; // the own allocations of the laid-out binding, aligned, in all
  Tensor arena_;
  ExecutionStats stats_;
  std::chrono::steady_clock::time_point lastStatsReport_;
  int64_t callsSinceStatsReport_ = 0;
  int64_t callsRun_ = 0;
  int64_t profiledCalls_ = 0;
  DevicePeaks peaks_;      // the device's, when profiling
  std::string cpuThreads_; // the threads of the last timed CPU run ("2 threads")
  // Valid while a background build is due. Its destructor waits for the build (a future of
  // std::async does), so no compiler is left writing into the cache.
  std::future<KernelBuild> kernelBuild_;
  std::exception_ptr kernelBuildError_;
  double kernelBuildMs_ = 0;
  std::map<std::string, KernelBuildRecord> kernelBuilds_;
};

} // namespace loupe
