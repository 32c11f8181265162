// The compile driver: the one sequence every entry point (loupe-opt, `loupe run`, `loupe bisect`,
// the bisector's trials, the Python binding) compiles a graph through. It takes the graph, or its
// .lir text which it parses and verifies, runs the pass pipeline with the caller's
// instrumentation, builds the executable when asked, and returns what happened as a value:
// every exception of a compile becomes the result's error here and nowhere else, so a caller
// only chooses what to do with a failure (record it in a trace, print it, rethrow it).
//
// The device is chosen here too: PipelineOptions::target, or the device the graph's tensors are
// on (compiler/pass/target_device.h), tells kernel selection what to plan for, and
// compile_graph.cpp's makeExecutable builds that device's runtime (the host, or a CUDA backend);
// no entry point changes with the device.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pass/instrumentation.h"
#include "compiler/pass/pass.h"
#include "compiler/pass/pass_manager.h"
#include "compiler/pass/plan.h"
#include "compiler/runtime/executable.h"

namespace loupe {

struct CompileOptions {
  // The passes, in order, by name (passes/pipeline.h: defaultPipeline(), parsePipeline()). Empty:
  // no pass runs; the graph is only imported (and runs with a default plan).
  std::vector<std::string> pipeline;
  PassManagerOptions manager;      // disabled passes, stop after, verify after each pass
  PipelineOptions pipelineOptions; // bisect limit, injected fault, target
  // Called around every pass and on every decision, in this order (not owned).
  std::vector<PassInstrumentation*> instrumentation;
  bool buildExecutable = false; // then `executable` configures it
  ExecutableOptions executable;
};

// Why a compile failed.
struct CompileError {
  std::string message; // the exception's what(): the error with all its context
  // The pass that failed; "import" when the .lir text did not parse or verify; empty when no
  // pass is to blame (building the executable, its generated kernels).
  std::string pass;
  std::exception_ptr exception; // as thrown, for a caller that rethrows it
};

struct CompileResult {
  std::optional<CompileError> error; // absent: the compile succeeded
  // The compiled graph; after a failure, as far as it got (null when the text did not parse).
  std::unique_ptr<Graph> graph;
  Plan plan;
  std::unique_ptr<Executable> executable; // with CompileOptions::buildExecutable, when ok
  // Wall time of the whole compile: import, passes, the executable (with a background kernel
  // build, until finishKernelBuild adds the build's).
  double compileMs = 0;

  bool ok() const { return !error; }
  // Rethrows the compile's exception as it was thrown (a loupe::Error keeps its kind and
  // context); returns when the compile succeeded.
  void throwIfFailed() const;
  // Waits for the kernels of a background build (ExecutableOptions::buildKernelsInBackground):
  // a failed build becomes the result's error, a finished one adds its time to compileMs.
  // Returns ok(). A result that failed earlier, or has no executable, is left as it is; a
  // second call changes nothing.
  bool finishKernelBuild();

private:
  bool kernelBuildFinished_ = false;
};

// Compiles a graph that has been verified (the caller parsed and checked it).
CompileResult compileGraph(std::unique_ptr<Graph> graph, const CompileOptions& options);

// Imports one graph from .lir text (parses and verifies it; a failure is the pass "import",
// with the graph kept when it parsed) and compiles it. `sourceName` names the text in errors.
CompileResult compileGraph(std::string_view lir, const std::string& sourceName,
                           const CompileOptions& options);

} // namespace loupe
