#include "python/compiled_graph.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/codegen/cuda/nvrtc_compiler.h"
#include "compiler/ir/error.h"
#include "compiler/runtime/cuda/cuda_driver.h"
#include "compiler/runtime/cuda_backend.h"

namespace loupe::binding {

namespace {

// Device memory from the embedder: a torch tensor the allocator returns, kept alive (and given
// back to torch's caching allocator) by the pointer's owner.
std::function<std::shared_ptr<void>(size_t)> torchAllocator(nb::object allocator) {
  auto shared = std::make_shared<nb::object>(std::move(allocator));
  return [shared](size_t bytes) -> std::shared_ptr<void> {
    nb::gil_scoped_acquire gil;
    nb::object tensor = (*shared)(bytes);
    auto* data = reinterpret_cast<void*>(nb::cast<uintptr_t>(tensor.attr("data_ptr")()));
    // The tensor goes back to torch's caching allocator when the last Loupe tensor goes.
    return std::shared_ptr<void>(heldWithGil(new nb::object(std::move(tensor))), data);
  };
}

int cudaIndex(const std::string& device) {
  std::string index = device.substr(device.find(':') + 1);
  if (!device.starts_with("cuda:") || index.empty() ||
      index.find_first_not_of("0123456789") != std::string::npos)
    throw Error("runtime", "unknown device '" + device + "' (expected cpu or cuda:N)");
  return std::stoi(index);
}

} // namespace

CompiledGraph::CompiledGraph(const std::string& lir, const std::vector<std::string>& pipeline,
                             bool check, PythonFallback fallback, Trace* trace, int64_t compileId,
                             const std::string& failureStatus, int injectFault,
                             double statsIntervalS, const std::string& device, nb::object allocator,
                             bool profile)
    : trace_(trace), failureStatus_(failureStatus), check_(check), onCuda_(device != "cpu") {
  CudaContextRestorer callersDevice(onCuda_); // torch's current device stays the caller's
  if (trace) recorder_ = std::make_unique<TraceRecorder>(trace->writer(), compileId);
  CompileOptions options;
  options.pipeline = pipeline;
  options.pipelineOptions.injectFaultAt = injectFault;
  if (recorder_) options.instrumentation.push_back(recorder_.get());
  options.buildExecutable = true;
  options.executable.check = check;
  options.executable.profile = profile;
  options.executable.fallback = toFallbackFn(std::move(fallback));
  options.executable.inputOutputsAsIs = true;           // run copies them only when asked to
  options.executable.buildKernelsInBackground = true;   // see waitForKernels
  options.executable.instrumentation = recorder_.get(); // each size's memory, the kernel stats
  options.executable.statsReportInterval =
      std::chrono::milliseconds(static_cast<int64_t>(std::max(statsIntervalS, 0.0) * 1000));
  if (device != "cpu") {
    options.pipelineOptions.target = device;
    CudaBackendOptions cuda{.device = cudaIndex(device)};
    if (!allocator.is_none()) cuda.allocate = torchAllocator(std::move(allocator));
    cuda.stream = [this] { return stream_; };
    try {
      options.executable.device = std::make_shared<CudaBackend>(std::move(cuda));
    } catch (const std::exception&) {
      // No device to run on: the driver says why, as a compile failure in the trace.
      options.executable.device = nullptr;
    }
  }
  compiled_ = compileGraph(lir, "<fx graph>", options);
  if (recorder_) recorder_->finishCompile(compiled_, failureStatus_, lir);
  compiled_.throwIfFailed();
}

void CompiledGraph::waitForKernels() {
  if (!kernelsFinished_) {
    CudaContextRestorer callersDevice(onCuda_);
    {
      nb::gil_scoped_release noGil;
      compiled_.finishKernelBuild();
    }
    kernelsFinished_ = true;
    if (recorder_) recorder_->finishCompile(compiled_, failureStatus_);
  }
  compiled_.throwIfFailed();
}

nb::list CompiledGraph::run(const std::vector<AnyArray>& arrays, int threads, bool inputsAsNone,
                            uintptr_t stream) {
  waitForKernels();
  CudaContextRestorer callersDevice(onCuda_); // on cuda:1, torch's current device stays put
  stream_ = reinterpret_cast<void*>(stream);
  setCpuLibraryThreads(threads);
  std::vector<Tensor> inputs;
  inputs.reserve(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i)
    inputs.push_back(borrowArray(arrays[i], i));
  Executable& executable = *compiled_.executable;
  std::vector<Tensor> outputs;
  try {
    nb::gil_scoped_release noGil;
    outputs = executable.run(inputs);
  } catch (const std::exception& error) {
    try {
      if (recorder_) recorder_->recordRunError(error);
    } catch (const std::exception&) {
      // The run's error is the one to raise; a trace that cannot take it changes nothing.
    }
    throw;
  }
  if (recorder_ && check_)
    for (const auto& [name, s] : executable.stats().kernels)
      trace_->writer().recordKernelMaxError(recorder_->compileId(), name, s.maxAbsError);
  nb::list result;
  const std::vector<int>& outputInputs = executable.outputInputs();
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputInputs[o] < 0)
      result.append(toTorch(outputs[o]));
    else // the caller's memory, borrowed: never handed out as is
      result.append(inputsAsNone                  ? nb::none()
                    : outputs[o].device().isCpu() ? toTorch(outputs[o].clone())
                                                  : toTorch(executable.copyOf(outputs[o])));
  }
  return result;
}

void CompiledGraph::flushStats() {
  if (compiled_.executable) compiled_.executable->reportStats();
}

nb::dict CompiledGraph::stats() const {
  nb::dict result;
  for (const auto& [name, s] : compiled_.executable->stats().kernels)
    result[nb::str(name.c_str())] =
        nb::make_tuple(s.implementation, s.calls, s.totalMs, s.maxAbsError);
  return result;
}

void bindCompiledGraph(nb::module_& m) {
  m.def("start_nvrtc", &startNvrtc,
        "Starts NVRTC on a thread of its own (once per process) and returns at once, so that "
        "its one-time start-up overlaps what comes before a GPU graph's kernels are built.");
  nb::class_<CompiledGraph>(m, "CompiledGraph")
      .def(nb::init<const std::string&, const std::vector<std::string>&, bool, PythonFallback,
                    Trace*, int64_t, const std::string&, int, double, const std::string&,
                    nb::object, bool>(),
           nb::arg("lir"), nb::arg("pipeline"), nb::arg("check") = false,
           nb::arg("fallback").none() = nb::none(), nb::arg("trace").none() = nb::none(),
           nb::arg("compile_id") = 0, nb::arg("failure_status") = "eager_fallback",
           nb::arg("inject_fault") = -1, nb::arg("stats_interval") = 5.0, nb::arg("device") = "cpu",
           nb::arg("allocator").none() = nb::none(), nb::arg("profile") = false,
           // The executable writes to the trace until it is destroyed.
           nb::keep_alive<1, 6>(),
           "Parses, verifies and compiles one graph and finishes its compile record in the "
           "trace: 'ok', or failure_status with the error and the failed pass (then raises "
           "LoupeError). inject_fault=N (a testing aid) miscompiles it after decision N. Its "
           "runs write each size's memory and, every stats_interval seconds, the kernel stats "
           "into the trace; with profile, calls 2 to 6 time every kernel (docs/profile.md).")
      .def("wait_for_kernels", &CompiledGraph::waitForKernels,
           "Waits for the generated kernels, built in the background after the constructor "
           "returns; a failed build is recorded as the compile's failure and raises LoupeError "
           "(then and on every later call, run included).")
      .def("run", &CompiledGraph::run, nb::arg("inputs"), nb::arg("threads") = 0,
           nb::arg("inputs_as_none") = false, nb::arg("stream") = 0,
           "Runs on CPU or CUDA tensors (or their DLPack capsules) in graph-input order, CUDA work "
           "on `stream` (a CUstream as an integer: torch's current stream), with at most "
           "`threads` BLAS threads (0: unchanged); returns the outputs as new tensors, "
           "which share memory with no input and no other output. With inputs_as_none, an "
           "output that is a graph input comes back as None instead of a copy (see "
           "output_inputs). A failed run is recorded in the trace (node, message), then raises.")
      .def_prop_ro("output_inputs", &CompiledGraph::outputInputs,
                   "Per output: the position of the graph input it is, or -1.")
      .def_prop_ro("cuda_graph", &CompiledGraph::cudaGraph,
                   "Whether launch planning chose to replay the graph as a CUDA graph "
                   "(passes/launch_planning.cpp): the adapter does so unless told otherwise.")
      .def("flush_stats", &CompiledGraph::flushStats,
           "Writes the kernel stats to the trace now (also done periodically while running and "
           "when the graph is destroyed).")
      .def("release_arena", &CompiledGraph::releaseArena,
           "Drops the arena; the next run allocates it again (inside a CUDA graph capture, from "
           "the graph's memory pool).")
      .def("stats", &CompiledGraph::stats);
}

} // namespace loupe::binding
