// `loupe run`: compile a .lir graph with the pipeline and execute it on the CPU, on inputs
// read from .npy files or generated at random; optionally in check mode and recorded in a trace.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/verifier.h"
#include "compiler/runtime/executable.h"
#include "compiler/runtime/npy.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/graph_inputs.h"

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
      createPass(pass);
    } catch (const Error& e) {
      throw Error("usage", e.message());
    }
  }
  auto graphs = parseFile(options.file);
  if (graphs.empty()) throw Error("input", "no graph in " + options.file);
  Graph& graph = *graphs.front();
  verify(graph);
  std::vector<Tensor> inputs = prepareInputs(graph, options.inputs, options.symbols, options.seed);

  std::unique_ptr<TraceWriter> writer;
  int64_t compileId = 0;
  if (!options.trace.empty()) {
    writer = std::make_unique<TraceWriter>(options.trace);
    RunInfo run;
    run.pid = static_cast<int64_t>(getpid());
    run.command = "loupe run " + options.file;
    run.loupe_version = LOUPE_VERSION;
    int64_t runId = writer->beginRun(run);
    CompileInfo compile;
    compile.frame_name = graph.name();
    compile.frame_file = options.file;
    compile.graph_kind = "graph";
    compileId = writer->beginCompile(runId, compile);
  }

  Plan plan;
  std::unique_ptr<TraceRecorder> recorder;
  auto start = std::chrono::steady_clock::now();
  if (!options.noCompile) {
    PipelineOptions pipelineOptions;
    InstrumentationList instrumentation;
    if (writer) {
      recorder = std::make_unique<TraceRecorder>(*writer, compileId);
      instrumentation.add(recorder.get());
    }
    PassManager manager;
    addPasses(manager, options.pipeline.empty() ? defaultPipeline() : options.pipeline);
    PassContext ctx(pipelineOptions, instrumentation, plan);
    try {
      manager.run(graph, ctx);
    } catch (const std::exception& e) {
      // The trace keeps the failure (the failed pass and its graph are already recorded).
      if (writer) {
        const auto* error = dynamic_cast<const Error*>(&e);
        std::optional<std::string> pass;
        if (error && !error->context().pass.empty()) pass = error->context().pass;
        writer->finishCompile(compileId, CompileOutcome{"error", e.what(), pass, std::nullopt});
      }
      throw;
    }
  }
  double compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  ExecutableOptions execOptions;
  execOptions.check = options.check;
  Executable executable(graph, plan, execOptions);
  if (writer) // each generated kernel: from the kernel cache or built, and how long
    for (const auto& [name, build] : executable.kernelBuilds())
      writer->recordKernelBuild(compileId, name, build.fromCache, build.buildMs);
  auto runStart = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = executable.run(inputs);
  double runMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - runStart)
          .count();

  std::printf("compiled %s with %zu kernels in %.1f ms; ran in %.3f ms\n", options.file.c_str(),
              plan.kernels.size(), compileMs, runMs);
  for (size_t i = 0; i < outputs.size(); ++i)
    printTensorSummary("output " + std::to_string(i), outputs[i]);

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
  if (writer) {
    if (options.check && !options.noCompile)
      for (const auto& [name, s] : executable.stats().kernels)
        writer->recordKernelMaxError(compileId, name, s.maxAbsError);
    writer->recordRuntimeStats(compileId, RuntimeStatsRecord{1, runMs});
    if (recorder) recorder->recordMeasuredArena(executable.arenaBytes());
    writer->finishCompile(compileId, CompileOutcome{"ok", std::nullopt, std::nullopt, compileMs});
    std::cout << "trace: " << options.trace << " (compile " << compileId << ")\n";
  }
  return 0;
}

} // namespace loupe::cli
