#include "driver/compile_graph.h"

#include <chrono>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/verifier.h"
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

// The target's runtime for the compiled graph. Kernel selection planned the kernels for
// PipelineOptions::target; this is where a target meets its back end, so a device is added
// here: CUDA would build its executable (its generated kernels, its memory) in a branch of its
// own, and every entry point would run on it unchanged.
std::unique_ptr<Executable> makeExecutable(const Graph& graph, const Plan& plan,
                                           const CompileOptions& options) {
  const std::string& target = options.pipelineOptions.target;
  if (target == "cpu") return std::make_unique<Executable>(graph, plan, options.executable);
  throw Error("driver", "no runtime for target '" + target + "' (Loupe runs graphs on the cpu)");
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
