// The `CompiledGraph` class of loupe._C: one FX graph's .lir compiled through the driver
// (recorded into a trace when one is given) and run on torch tensors without copying them.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/compile_graph.h"
#include "inspector/recorder/trace_recorder.h"
#include "python/dlpack_tensors.h"
#include "python/python_fallback.h"
#include "python/trace_binding.h"

namespace loupe::binding {

class CompiledGraph {
public:
  // Compiles and finishes the compile's record in the trace; raises the compile's error.
  // `statsIntervalS`: how often, in seconds of wall time, the kernel stats go to the trace.
  // `device`: "cpu", or the CUDA device the graph runs on ("cuda:0"), whose memory comes from
  // `allocator` (bytes -> a torch tensor of at least that many bytes on the device: torch's
  // caching allocator). `profile`: time every kernel of calls 2 to 6 (docs/profile.md).
  CompiledGraph(const std::string& lir, const std::vector<std::string>& pipeline, bool check,
                PythonFallback fallback, Trace* trace, int64_t compileId,
                const std::string& failureStatus, int injectFault, double statsIntervalS,
                const std::string& device, nb::object allocator, bool profile);

  // The generated kernels are built in the background (the host compiler runs while Dynamo
  // finishes its own work); this waits for them. The compile's wall time in the trace then
  // adds the build's. A failed build is recorded as the compile's failure and raised, so the
  // caller can run the graph eagerly; every later call raises it again.
  void waitForKernels();

  // `inputsAsNone`: an output that is a graph input comes back as None, for a caller that
  // holds that input already (output_inputs says which); otherwise as a copy. A failed run is
  // recorded in the trace (node and message), then raised.
  // `stream`: the CUstream a CUDA graph runs on (torch's current stream), as an integer.
  nb::list run(const std::vector<AnyArray>& arrays, int threads, bool inputsAsNone,
               uintptr_t stream);

  // Writes the kernel stats to the trace now (the backend's exit handler: a graph Dynamo still
  // holds is never destroyed, and destruction is when the executable writes them last).
  void flushStats();

  // Drops the executable's arena (Executable::releaseArena): before a CUDA graph capture.
  void releaseArena() { compiled_.executable->releaseArena(); }

  const std::vector<int>& outputInputs() const { return compiled_.executable->outputInputs(); }
  bool cudaGraph() const { return compiled_.plan.cudaGraph; }

  // {kernel name: (implementation, calls, total ms, max abs error)}
  nb::dict stats() const;

private:
  Trace* trace_;
  std::string failureStatus_; // the trace's status for a failed compile
  bool check_;                // check mode: each run's kernel errors go into the trace
  bool onCuda_;               // a graph on a CUDA device
  std::unique_ptr<TraceRecorder> recorder_; // with a trace
  CompileResult compiled_;
  bool kernelsFinished_ = false; // the background build's outcome is known and recorded
  void* stream_ = nullptr;       // the current run's CUDA stream
};

// Adds CompiledGraph to the module.
void bindCompiledGraph(nb::module_& m);

} // namespace loupe::binding
