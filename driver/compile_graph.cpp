#include "driver/compile_graph.h"

#include <chrono>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/verifier.h"
#include "compiler/pass/target_device.h"
#include "compiler/runtime/cuda_backend.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The one place where an exception of a compile becomes its error. The failed pass is the one
// the pass manager added to the Error's context, unless the caller names it ("import").
CompileError errorOf(std::exception_ptr exception, std::string pass = {}) {
  CompileError error;
  error.exception = exception;
  try {
    std::rethrow_exception(exception);
  } catch (const Error& e) {
    error.message = e.what();
    if (pass.empty()) pass = e.context().pass;
  } catch (const std::exception& e) {
    error.message = e.what();
  } catch (...) {
    error.message = "unknown exception";
  }
  error.pass = std::move(pass);
  return error;
}

// The target's runtime for the compiled graph: the device kernel selection planned for
// (compiler/pass/target_device.h) meets its back end here. On the host the executable runs as it
// is; on a CUDA device it runs through the embedder's CudaBackend (the Python adapter hands over
// torch's allocator and stream) or, when there is none, one of the driver's own.
std::unique_ptr<Executable> makeExecutable(const Graph& graph, const Plan& plan,
                                           const CompileOptions& options) {
  Device device = targetDevice(graph, options.pipelineOptions.target);
  if (device.isCpu()) return std::make_unique<Executable>(graph, plan, options.executable);
  ExecutableOptions executable = options.executable;
  if (!executable.device) {
    std::string why;
    if (!cudaBackendAvailable(&why))
      throw Error("driver", "graph @" + graph.name() + " is compiled for " + device.str() +
                                ", where Loupe cannot run: " + why);
    executable.device = std::make_shared<CudaBackend>(CudaBackendOptions{.device = device.index});
  } else if (executable.device->device() != device) {
    throw Error("driver", "graph @" + graph.name() + " is compiled for " + device.str() +
                              " but its runtime is on " + executable.device->device().str());
  }
  return std::make_unique<Executable>(graph, plan, std::move(executable));
}

// The passes and the executable, for a compile that began at `start` with `graph` imported.
CompileResult compileImported(Clock::time_point start, std::unique_ptr<Graph> graph,
                              const CompileOptions& options) {
  CompileResult result;
  result.graph = std::move(graph);
  try {
    InstrumentationList instrumentation;
    for (PassInstrumentation* each : options.instrumentation)
      instrumentation.add(each);
    PassManager manager(options.manager);
    addPasses(manager, options.pipeline);
    PassContext context(options.pipelineOptions, instrumentation, result.plan);
    manager.run(*result.graph, context);
    if (options.buildExecutable)
      result.executable = makeExecutable(*result.graph, result.plan, options);
  } catch (...) {
    result.error = errorOf(std::current_exception());
  }
  result.compileMs = msSince(start);
  return result;
}

} // namespace

void CompileResult::throwIfFailed() const {
  if (error) std::rethrow_exception(error->exception);
}

bool CompileResult::finishKernelBuild() {
  if (error || !executable || kernelBuildFinished_) return ok();
  kernelBuildFinished_ = true;
  try {
    executable->waitForKernels();
    compileMs += executable->kernelBuildMs();
  } catch (...) {
    error = errorOf(std::current_exception());
  }
  return ok();
}

CompileResult compileGraph(std::unique_ptr<Graph> graph, const CompileOptions& options) {
  return compileImported(Clock::now(), std::move(graph), options);
}

CompileResult compileGraph(std::string_view lir, const std::string& sourceName,
                           const CompileOptions& options) {
  auto start = Clock::now();
  std::unique_ptr<Graph> graph;
  try {
    graph = parseGraph(lir, sourceName);
    verify(*graph);
  } catch (...) {
    // No pass has run: the failure is the import's, and the graph (when it parsed) is what it
    // is about.
    CompileResult rejected;
    rejected.error = errorOf(std::current_exception(), "import");
    rejected.graph = std::move(graph);
    rejected.compileMs = msSince(start);
    return rejected;
  }
  return compileImported(start, std::move(graph), options);
}

} // namespace loupe
