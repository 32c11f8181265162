// `loupe run`: compile a .lir graph with the pipeline and execute it on the CPU, on inputs
// read from .npy files or generated at random; optionally in check mode, compared with the graph
// run as written (--compare: how `loupe reduce`'s command shows its divergence), profiled
// (--profile: run again to time every kernel, docs/profile.md), and recorded in a trace.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/verifier.h"
#include "compiler/runtime/executable.h"
#include "compiler/runtime/npy.h"
#include "driver/compile_graph.h"
#include "inspector/bisect/bisector.h"
#include "inspector/recorder/run_info.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/graph_inputs.h"
#include "tools/loupe/kernel_table.h"

namespace loupe::cli {

namespace {

void printTensorSummary(const std::string& label, const Tensor& t) {
  std::cout << label << ": " << t.describe();
  int64_t shown = std::min<int64_t>(t.numel(), 6);
  std::cout << " [";
  for (int64_t i = 0; i < shown; ++i) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", t.at(i));
    std::cout << (i ? ", " : "") << buffer;
  }
  std::cout << (t.numel() > shown ? ", ...]" : "]") << "\n";
}

} // namespace

int runRun(const RunOptions& options) {
  // Check the command line before reading anything: an unknown pass is a usage error.
  for (const auto& pass : options.pipeline) {
    try {
      checkPassName(pass);
    } catch (const Error& e) {
      throw Error("usage", e.message());
    }
  }
  auto graphs = parseFile(options.file);
  if (graphs.empty()) throw Error("input", "no graph in " + options.file);
  const Graph& graph = *graphs.front();
  verify(graph);
  std::vector<Tensor> inputs = prepareInputs(graph, options.inputs, options.symbols, options.seed);

  std::unique_ptr<TraceWriter> writer;
  std::unique_ptr<TraceRecorder> recorder;
  if (!options.trace.empty()) {
    writer = std::make_unique<TraceWriter>(options.trace);
    int64_t runId = writer->beginRun(thisProcessRun("loupe run " + options.file));
    CompileInfo compile;
    compile.frame_name = graph.name();
    compile.frame_file = options.file;
    compile.graph_kind = "graph";
    recorder = std::make_unique<TraceRecorder>(*writer, writer->beginCompile(runId, compile));
  }

  // With --no-compile no pass runs: the graph as written, with reference implementations.
  CompileOptions compileOptions;
  if (!options.noCompile)
    compileOptions.pipeline = options.pipeline.empty() ? defaultPipeline() : options.pipeline;
  if (recorder) compileOptions.instrumentation.push_back(recorder.get());
  compileOptions.buildExecutable = true;
  compileOptions.pipelineOptions.injectFaultAt = options.injectFault;
  compileOptions.executable.check = options.check;
  compileOptions.executable.profile = options.profile;
  compileOptions.executable.instrumentation = recorder.get(); // the run's memory, kernel stats
  CompileResult compiled = compileGraph(graph.clone(), compileOptions);
  // The trace keeps a failure (the failed pass and its graph are already recorded).
  if (recorder && !compiled.ok()) recorder->finishCompile(compiled, "error");
  compiled.throwIfFailed();
  Executable& executable = *compiled.executable;
  const Plan& plan = compiled.plan;

  auto runStart = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = executable.run(inputs);
  double runMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - runStart)
          .count();

  std::printf("compiled %s with %zu kernels in %.1f ms; ran in %.3f ms\n", options.file.c_str(),
              plan.kernels.size(), compiled.compileMs, runMs);
  for (size_t i = 0; i < outputs.size(); ++i)
    printTensorSummary("output " + std::to_string(i), outputs[i]);
  if (options.profile) {
    // The first call is never profiled (cold caches, lazy loading): the calls after it are.
    for (int64_t call = 0; call < Executable::kProfiledCalls; ++call)
      executable.run(inputs);
    printKernelTable(kernelStatsRecords(executable.stats()));
  }

  if (options.check) {
    std::printf("%-8s %-40s %6s %12s %12s\n", "kernel", "implementation", "calls", "max abs err",
                "max rel err");
    for (const auto& [name, s] : executable.stats().kernels)
      std::printf("%-8s %-40s %6lld %12.3g %12.3g\n", name.c_str(), s.implementation.c_str(),
                  static_cast<long long>(s.calls), s.maxAbsError, s.maxRelError);
  }
  if (!options.outputDir.empty()) {
    std::filesystem::create_directories(options.outputDir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = options.outputDir + "/output" + std::to_string(i) + ".npy";
      writeNpy(path, outputs[i]);
      std::cout << "wrote " << path << "\n";
    }
  }
  int status = 0;
  if (options.compare) {
    // Judged as a bisection trial is: the same comparison and default tolerance.
    std::vector<Tensor> reference = runReference(graph, inputs);
    Tolerance tolerance = defaultTolerance(reference);
    tolerance.rtol = options.rtol.value_or(tolerance.rtol);
    tolerance.atol = options.atol.value_or(tolerance.atol);
    BisectTrial trial;
    compareOutputs(outputs, reference, tolerance, trial);
    char errors[128];
    std::snprintf(errors, sizeof errors, "max abs error %.3g, max rel error %.3g, rtol %g, atol %g",
                  trial.maxAbsError, trial.maxRelError, tolerance.rtol, tolerance.atol);
    std::string detail = trial.error.empty() ? errors : trial.error;
    std::cout << (trial.diverged ? "divergence: the compiled results differ from the reference ("
                                 : "no divergence: the compiled results match the reference (")
              << detail << ")\n";
    status = trial.diverged ? 1 : 0;
  }
  if (recorder) {
    if (options.check && !options.noCompile)
      for (const auto& [name, s] : executable.stats().kernels)
        writer->recordKernelMaxError(recorder->compileId(), name, s.maxAbsError);
    executable.reportStats();
    recorder->finishCompile(compiled, "error");
    std::cout << "trace: " << options.trace << " (compile " << recorder->compileId() << ")\n";
  }
  return status;
}

} // namespace loupe::cli
