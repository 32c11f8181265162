#include "compiler/pass/pass_manager.h"

#include <algorithm>
#include <chrono>

#include "compiler/ir/error.h"
#include "compiler/ops/verifier.h"
#include "compiler/pass/fault_injection.h"
#include "compiler/pass/fingerprint.h"

namespace loupe {
namespace {

// A source file as the repository names it ("passes/cse.cpp"). The compiler spells file names
// as the build gave them, usually absolute; this file knows its own repository path, and so
// the prefix every other file of the build shares.
std::string_view repositoryPath(std::string_view file) {
  static const std::string_view root = [] {
    std::string_view self = std::source_location::current().file_name();
    constexpr std::string_view kSelf = "compiler/pass/pass_manager.cpp";
    return self.ends_with(kSelf) ? self.substr(0, self.size() - kSelf.size()) : "";
  }();
  return file.starts_with(root) ? file.substr(root.size()) : file;
}

} // namespace

PassContext::PassContext(const PipelineOptions& options, PassInstrumentation& instrumentation,
                         Plan& plan)
    : options_(options), instrumentation_(instrumentation), plan_(plan) {}

bool PassContext::decide(std::string_view kind, DecisionText describe,
                         std::vector<std::string> nodes, std::source_location rule) {
  Decision d;
  d.ordinal = ++decisionCount_;
  d.pass = currentPass_;
  d.kind = kind;
  if (instrumentation_.wantsDecisionText()) d.description = describe();
  d.nodes = std::move(nodes);
  d.ruleFile = repositoryPath(rule.file_name());
  d.ruleLine = static_cast<int>(rule.line());
  d.applied = options_.bisectLimit < 0 || d.ordinal <= options_.bisectLimit;
  if (d.applied && d.ordinal == options_.injectFaultAt) dueFault_ = d;
  instrumentation_.onDecision(d);
  return d.applied;
}

bool PassManager::run(Graph& graph, PassContext& ctx) {
  auto& instr = ctx.instrumentation();
  instr.runBeforePipeline(graph);
  bool anyChanged = false;
  uint64_t graphBefore = graphFingerprint(graph);
  uint64_t planBefore = planFingerprint(ctx.plan());
  for (size_t ordinal = 0; ordinal < passes_.size(); ++ordinal) {
    Pass& pass = *passes_[ordinal];
    std::string name(pass.name());
    const auto& disabled = options_.disabled;
    if (std::find(disabled.begin(), disabled.end(), name) != disabled.end()) continue;

    PassRunInfo info;
    info.pass = name;
    info.ordinal = static_cast<int>(ordinal);
    info.nodesBefore = graph.numNodesRecursive();
    int decisionsBefore = ctx.decisionsSoFar();
    ctx.setCurrentPass(name);
    instr.runBeforePass(pass, graph);
    auto start = std::chrono::steady_clock::now();
    try {
      pass.run(graph, ctx);
      if (auto due = ctx.takeDueFault()) instr.onDecision(injectFault(graph, *due));
      if (options_.verifyEach) verify(graph);
    } catch (const Error& e) {
      Error withPass = e.withContext(ErrorContext{.graph = graph.name(), .pass = name});
      instr.runAfterPassFailed(pass, graph, withPass.what());
      throw withPass;
    } catch (const std::exception& e) {
      Error wrapped("internal", e.what(), ErrorContext{.graph = graph.name(), .pass = name});
      instr.runAfterPassFailed(pass, graph, wrapped.what());
      throw wrapped;
    }
    info.wallMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    info.nodesAfter = graph.numNodesRecursive();
    info.decisions = ctx.decisionsSoFar() - decisionsBefore;
    uint64_t graphAfter = graphFingerprint(graph);
    uint64_t planAfter = planFingerprint(ctx.plan());
    info.graphChanged = graphAfter != graphBefore;
    info.planChanged = planAfter != planBefore;
    graphBefore = graphAfter; // what the next pass starts from
    planBefore = planAfter;
    anyChanged |= info.graphChanged;
    instr.runAfterPass(pass, graph, info);
    if (!options_.stopAfter.empty() && name == options_.stopAfter) break;
  }
  instr.runAfterPipeline(graph, ctx.plan());
  return anyChanged;
}

} // namespace loupe
