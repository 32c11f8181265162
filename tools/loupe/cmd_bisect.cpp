// `loupe bisect`: finds the pass, then the decision, that makes a .lir graph's compiled results
// differ from the graph run as written (reference implementations); prints the culprit with its
// source lines and records the search in a trace when asked. Exit status: 0 no divergence,
// 1 a culprit was found, 2 a usage error or a failure.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/verifier.h"
#include "inspector/bisect/bisection_record.h"
#include "inspector/bisect/bisector.h"
#include "inspector/recorder/trace_recorder.h"
#include "inspector/trace/trace_json.h"
#include "inspector/trace/trace_writer.h"
#include "passes/pipeline.h"
#include "tools/loupe/commands.h"
#include "tools/loupe/graph_inputs.h"

namespace loupe::cli {
namespace {

std::string describeTrial(const BisectTrial& trial) {
  std::string what = trial.phase == "full" ? "full pipeline"
                     : trial.phase == "pass"
                         ? "passes up to " + trial.stopAfter
                         : "decisions 1.." + std::to_string(trial.decisionLimit);
  char errors[64];
  std::snprintf(errors, sizeof errors, "max abs err %.3g", trial.maxAbsError);
  return what + ": " + (trial.diverged ? "differs" : "matches") + " (" +
         (trial.error.empty() ? errors : trial.error) + ")";
}

// A bar redrawn in place on a terminal; one line per trial otherwise (logs, pipes, tests).
void reportProgress(const BisectTrial& trial, int done, int estimated) {
  static const bool terminal = isatty(STDERR_FILENO);
  if (!terminal) {
    std::cerr << "bisect: trial " << done << "/~" << estimated << ": " << describeTrial(trial)
              << "\n";
    return;
  }
  constexpr int width = 24;
  int filled = std::min(width, done * width / std::max(estimated, 1));
  std::cerr << "\r\033[K[" << std::string(size_t(filled), '#')
            << std::string(size_t(width - filled), ' ') << "] " << done << "/~" << estimated << " "
            << describeTrial(trial) << std::flush;
  if (done >= estimated) std::cerr << "\n";
}

nlohmann::json toJson(const BisectionRecord& record) {
  nlohmann::json steps = nlohmann::json::array();
  for (const BisectionStepRecord& step : record.steps)
    steps.push_back({{"phase", step.phase},
                     {"stop_after", step.stop_after.value_or("")},
                     {"decision_limit", step.decision_limit.value_or(-1)},
                     {"diverged", step.diverged},
                     {"max_abs_error", step.max_abs_error},
                     {"max_rel_error", step.max_rel_error},
                     {"error", step.error_message.value_or("")}});
  nlohmann::json json = {{"status", record.status},
                         {"rtol", record.rtol},
                         {"atol", record.atol},
                         {"first_bad_pass", record.first_bad_pass.value_or("")},
                         {"total_decisions", record.total_decisions},
                         {"culprit_nodes", record.culprit_nodes},
                         {"steps", steps}};
  if (record.decision_ordinal)
    json["decision"] = {{"ordinal", *record.decision_ordinal},
                        {"pass", record.decision_pass.value_or("")},
                        {"kind", record.decision_kind.value_or("")},
                        {"description", record.decision_description.value_or("")},
                        {"nodes", record.decision_nodes}};
  if (record.injected_fault) json["injected_fault"] = *record.injected_fault;
  return json;
}

// Records the compile as the full pipeline makes it (decisions and injected fault included) and
// the bisection against it.
void recordInTrace(const BisectCliOptions& options, const Graph& graph,
                   const loupe::BisectOptions& bisectOptions, const BisectionRecord& record) {
  TraceWriter writer(options.trace);
  RunInfo run;
  run.pid = static_cast<int64_t>(getpid());
  run.command = "loupe bisect " + options.file;
  run.loupe_version = LOUPE_VERSION;
  int64_t runId = writer.beginRun(run);
  CompileInfo compile;
  compile.frame_name = graph.name();
  compile.frame_file = options.file;
  int64_t compileId = writer.beginCompile(runId, compile);
  auto copy = graph.clone();
  TraceRecorder recorder(writer, compileId);
  PassManager manager;
  addPasses(manager, bisectOptions.pipeline);
  Plan plan;
  PassContext context(bisectOptions.pipelineOptions, recorder, plan);
  CompileOutcome outcome;
  try {
    manager.run(*copy, context);
  } catch (const std::exception& e) {
    outcome = {"error", e.what(), std::nullopt, std::nullopt};
  }
  writer.finishCompile(compileId, outcome);
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
  BisectionRecord record = bisectionRecordOf(result, options.injectFault);

  if (options.json)
    std::cout << toJson(record).dump(2) << "\n";
  else
    std::cout << describeResult(result);
  if (!options.trace.empty()) recordInTrace(options, graph, bisectOptions, record);
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
