// `loupe reduce`: shrinks a graph whose compiled results differ from the graph run as written
// (a `loupe bisect` culprit, an injected fault) to a small graph that still differs, writes it as
// a standalone .lir with its inputs as .npy files, and prints the `loupe run` command that shows
// the divergence. The graph comes from a .lir file or from a compile in a trace. Exit status:
// 0 no divergence, 1 reduced, 2 a usage error or a failure. See docs/reduce.md.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ops/verifier.h"
#include "compiler/runtime/npy.h"
#include "inspector/reduce/reducer.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/compile_record.h"
#include "tools/loupe/graph_inputs.h"

namespace loupe::cli {
namespace {

[[noreturn]] void usageError(const std::string& message) {
  throw Error("usage", message);
}

// What is reduced: the graph, the pipeline that miscompiles it and the fault.
struct Target {
  std::unique_ptr<Graph> graph;
  std::vector<std::string> pipeline;
  int injectFault = -1;
  std::optional<int64_t> compileId; // when read from a trace
};

bool isTrace(const std::string& file) {
  return file.ends_with(".db");
}

Target fromLir(const ReduceCliOptions& options) {
  if (options.compile)
    usageError("--compile selects a compile of a trace; " + options.file + " is not a trace (.db)");
  auto graphs = parseFile(options.file);
  if (graphs.empty()) throw Error("input", "no graph in " + options.file);
  return {std::move(graphs.front()),
          options.pipeline.empty() ? defaultPipeline() : options.pipeline, options.injectFault,
          std::nullopt};
}

// The graph as the compile's first pass left it (the trace keeps no graph before the first pass;
// shape propagation, first in the pipeline, only states types), the compile's pipeline, and the
// fault of its last bisection.
Target fromTrace(const ReduceCliOptions& options) {
  if (!options.compile) usageError(options.file + " is a trace: name the compile with --compile N");
  TraceReader reader(options.file);
  reader.compile(*options.compile); // an unknown id is an error naming it
  std::vector<PassRow> passes = reader.passes(*options.compile);
  if (passes.empty() || !passes.front().snapshot_id)
    throw Error("input", "compile " + std::to_string(*options.compile) + " of " + options.file +
                             " has no graph recorded");
  Target target;
  target.graph = parseGraph(reader.snapshot(*passes.front().snapshot_id).lir,
                            options.file + ":compile " + std::to_string(*options.compile));
  target.pipeline = options.pipeline;
  if (target.pipeline.empty())
    for (const PassRow& pass : passes)
      target.pipeline.push_back(pass.info.name);
  target.injectFault = options.injectFault;
  std::vector<BisectionRow> bisections = reader.bisections(*options.compile);
  if (target.injectFault < 0 && !bisections.empty())
    target.injectFault = bisections.back().bisection.injected_fault.value_or(-1);
  target.compileId = options.compile;
  return target;
}

// A word of a shell command: quoted unless plainly safe.
std::string shellWord(const std::string& word) {
  bool plain =
      !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=,:+") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string formatTolerance(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// The exact `loupe run` that shows the reduced graph's divergence: its inputs, the pipeline the
// reduction checked with, the fault (the reduced graph's ordinal of its decision) and the
// tolerance.
std::string reproduceCommand(const std::string& lirPath, const std::vector<std::string>& inputs,
                             const ReduceResult& result) {
  std::string command = "loupe run " + shellWord(lirPath);
  for (const std::string& input : inputs)
    command += " -i " + shellWord(input);
  std::string pipeline;
  for (const std::string& pass : result.pipeline)
    pipeline += (pipeline.empty() ? "" : ",") + pass;
  command += " --pipeline " + pipeline;
  if (result.injectFault > 0) command += " --inject-fault " + std::to_string(result.injectFault);
  command += " --compare --rtol " + formatTolerance(result.tolerance.rtol) + " --atol " +
             formatTolerance(result.tolerance.atol);
  return command;
}

// On a terminal one line redrawn per trial; otherwise a line whenever the graph shrinks (fewer
// nodes or smaller dims).
std::function<void(const ReduceProgress&)> progressPrinter() {
  return [terminal = isatty(STDERR_FILENO) != 0, shownNodes = size_t(0),
          shownDims = std::string()](const ReduceProgress& progress) mutable {
    if (terminal) {
      std::cerr << "\r\033[K" << describeProgress(progress) << std::flush;
      return;
    }
    std::string dims = describeDimChanges(progress.dims);
    if (progress.reducedNodes == shownNodes && dims == shownDims) return;
    shownNodes = progress.reducedNodes;
    shownDims = dims;
    std::cerr << describeProgress(progress) << "\n";
  };
}

int reduceGraph(const ReduceCliOptions& options) {
  for (const auto& pass : options.pipeline) {
    try {
      checkPassName(pass);
    } catch (const Error& e) {
      usageError(e.message());
    }
  }
  Target target = isTrace(options.file) ? fromTrace(options) : fromLir(options);
  verify(*target.graph);
  if (isTrace(options.file) && options.inputs.empty())
    std::cerr << "reduce: the trace keeps no inputs: random inputs, seed " << options.seed << "\n";
  std::vector<Tensor> inputs =
      prepareInputs(*target.graph, options.inputs, options.symbols, options.seed);

  ReduceOptions reduceOptions;
  reduceOptions.pipeline = target.pipeline;
  reduceOptions.pipelineOptions.injectFaultAt = target.injectFault;
  if (options.rtol || options.atol)
    reduceOptions.tolerance =
        Tolerance{options.rtol.value_or(Tolerance{}.rtol), options.atol.value_or(Tolerance{}.atol)};
  reduceOptions.budgetSeconds = options.budget;
  reduceOptions.progress = progressPrinter();
  ReduceResult result = reduce(*target.graph, inputs, reduceOptions);
  if (isatty(STDERR_FILENO)) std::cerr << "\n";
  if (!result.diverged) {
    std::cout << "no divergence: the compiled results match the reference; nothing to reduce\n";
    return 0;
  }

  std::filesystem::create_directories(options.outDir);
  std::string lirPath = options.outDir + "/reduced.lir";
  std::string lir = toText(*result.graph);
  std::ofstream(lirPath) << lir;
  std::vector<std::string> inputPaths;
  for (size_t i = 0; i < result.inputs.size(); ++i) {
    inputPaths.push_back(options.outDir + "/input_" + std::to_string(i) + ".npy");
    writeNpy(inputPaths.back(), result.inputs[i]);
  }
  std::string command = reproduceCommand(lirPath, inputPaths, result);

  std::cout << "reduced " << result.originalNodes << " nodes to " << result.reducedNodes << " in "
            << result.trials << " trials"
            << (result.budgetExhausted ? " (the budget ended the search)" : "") << "\n";
  if (std::string dims = describeDimChanges(result.dims); !dims.empty())
    std::cout << "shrank dims " << dims << "\n";
  if (!result.faultFollows.empty())
    std::cout << "the injected fault follows a " << result.faultFollows << " decision\n";
  std::cout << "wrote " << lirPath << " and " << inputPaths.size() << " inputs\n"
            << "reproduce: " << command << "\n";

  if (!options.trace.empty()) {
    TraceWriter writer(options.trace);
    bool sameTrace = target.compileId && std::filesystem::exists(options.trace) &&
                     std::filesystem::equivalent(options.trace, options.file);
    int64_t compileId = sameTrace ? *target.compileId
                                  : recordGraphCompile(writer, "loupe reduce " + options.file,
                                                       options.file, *target.graph, target.pipeline,
                                                       reduceOptions.pipelineOptions);
    writer.recordReduction(compileId, {.original_nodes = int64_t(result.originalNodes),
                                       .reduced_nodes = int64_t(result.reducedNodes),
                                       .trials = result.trials,
                                       .wall_ms = result.wallMs,
                                       .budget_exhausted = result.budgetExhausted,
                                       .reduced_lir = lir,
                                       .command = command});
    std::cerr << "trace: " << options.trace << " (compile " << compileId << ")\n";
  }
  return 1;
}

} // namespace

int runReduce(const ReduceCliOptions& options) {
  // Exit status 1 means "reduced", so every failure is 2 here.
  try {
    return reduceGraph(options);
  } catch (const std::exception& e) {
    printError(e.what());
    return 2;
  }
}

} // namespace loupe::cli
