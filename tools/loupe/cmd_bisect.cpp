// `loupe bisect`: finds the pass, then the decision, that makes a .lir graph's compiled results
// differ from the graph run as written (reference implementations); prints the culprit with its
// source lines and records the search in a trace when asked. Exit status: 0 no divergence,
// 1 a culprit was found, 2 a usage error or a failure.
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/verifier.h"
#include "inspector/bisect/bisection_json.h"
#include "inspector/bisect/bisection_record.h"
#include "inspector/bisect/bisector.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/compile_record.h"
#include "tools/loupe/graph_inputs.h"

namespace loupe::cli {
namespace {

// "passes up to cse: differs (max abs err 0.25)": the trial and its errors.
std::string describeTrialErrors(const BisectTrial& trial) {
  char errors[64];
  std::snprintf(errors, sizeof errors, "max abs err %.3g", trial.maxAbsError);
  return describeTrial(trial) + " (" + (trial.error.empty() ? errors : trial.error) + ")";
}

// A bar redrawn in place on a terminal; one line per trial otherwise (logs, pipes, tests).
void reportProgress(const BisectTrial& trial, int done, int estimated) {
  static const bool terminal = isatty(STDERR_FILENO);
  if (!terminal) {
    std::cerr << "bisect: trial " << done << "/~" << estimated << ": " << describeTrialErrors(trial)
              << "\n";
    return;
  }
  constexpr int width = 24;
  int filled = std::min(width, done * width / std::max(estimated, 1));
  std::cerr << "\r\033[K[" << std::string(size_t(filled), '#')
            << std::string(size_t(width - filled), ' ') << "] " << done << "/~" << estimated << " "
            << describeTrialErrors(trial) << std::flush;
  if (done >= estimated) std::cerr << "\n";
}

// Records the compile as the full pipeline makes it (decisions and injected fault included) and
// the bisection against it.
void recordInTrace(const BisectCliOptions& options, const Graph& graph,
                   const loupe::BisectOptions& bisectOptions, const BisectionRecord& record) {
  TraceWriter writer(options.trace);
  int64_t compileId =
      recordGraphCompile(writer, "loupe bisect " + options.file, options.file, graph,
                         bisectOptions.pipeline, bisectOptions.pipelineOptions);
  writer.recordBisection(compileId, record);
  std::cerr << "trace: " << options.trace << " (compile " << compileId << ")\n";
}

int bisectFile(const BisectCliOptions& options) {
  loupe::BisectOptions bisectOptions;
  bisectOptions.pipeline = options.pipeline.empty() ? defaultPipeline() : options.pipeline;
  for (const auto& pass : bisectOptions.pipeline)
    checkPassName(pass); // an unknown name is an Error before anything runs
  bisectOptions.pipelineOptions.injectFaultAt = options.injectFault;
  if (options.rtol || options.atol)
    bisectOptions.tolerance =
        Tolerance{options.rtol.value_or(Tolerance{}.rtol), options.atol.value_or(Tolerance{}.atol)};
  bisectOptions.progress = reportProgress;

  auto graphs = parseFile(options.file);
  if (graphs.empty()) throw Error("input", "no graph in " + options.file);
  const Graph& graph = *graphs.front();
  verify(graph);
  std::vector<Tensor> inputs = prepareInputs(graph, options.inputs, options.symbols, options.seed);
  BisectResult result = bisect(graph, inputs, runReference(graph, inputs), bisectOptions);

  if (options.json)
    std::cout << bisectionJson(result, options.injectFault).dump(2) << "\n";
  else
    std::cout << describeResult(result);
  if (!options.trace.empty())
    recordInTrace(options, graph, bisectOptions, bisectionRecordOf(result, options.injectFault));
  return result.diverged ? 1 : 0;
}

} // namespace

int runBisect(const BisectCliOptions& options) {
  // Exit status 1 means "culprit found", so every failure is 2 here.
  try {
    return bisectFile(options);
  } catch (const std::exception& e) {
    printError(e.what());
    return 2;
  }
}

} // namespace loupe::cli
