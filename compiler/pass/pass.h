// A pass transforms a graph (or annotates it and fills the Plan). Whether it changed anything
// is the pass manager's finding, from fingerprints taken around it (fingerprint.h), not the
// pass's word. Every rewrite or fusion a pass makes is first asked of the context's decision
// counter (`ctx.decide(...)`), which is what makes `--bisect-limit=N` and fault bisection work.
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pass/decision_text.h"
#include "compiler/pass/instrumentation.h"
#include "compiler/pass/plan.h"

namespace loupe {

struct PipelineOptions {
  int bisectLimit = -1;             // -1: no limit; N: apply only decisions 1..N
  int injectFaultAt = -1;           // testing aid: N miscompiles the graph after decision N
  std::string target;               // empty: the graph's device (target_device.h)
  std::vector<std::string> options; // free-form "key=value" pass options
};

class PassContext {
public:
  PassContext(const PipelineOptions& options, PassInstrumentation& instrumentation, Plan& plan);

  // Asks whether the current pass may make this rewrite/fusion. Always reported to the
  // instrumentation (with applied=false when refused). Returns true to go ahead. `describe`
  // builds the description, and is called only when the instrumentation wants decision text.
  // `rule` is where the rule is written: the call itself, unless the rule is a row of a table
  // (pass the row's own std::source_location then).
  bool decide(std::string_view kind, DecisionText describe, std::vector<std::string> nodes = {},
              std::source_location rule = std::source_location::current());

  const PipelineOptions& options() const { return options_; }
  PassInstrumentation& instrumentation() { return instrumentation_; }
  Plan& plan() { return plan_; }

  int decisionsSoFar() const { return decisionCount_; }

  // The decision after which a fault is to be injected (PipelineOptions::injectFaultAt), once
  // it has been applied; the pass manager takes it after the pass returns.
  std::optional<Decision> takeDueFault() { return std::exchange(dueFault_, std::nullopt); }

  // Set by the pass manager.
  void setCurrentPass(std::string name) { currentPass_ = std::move(name); }
  const std::string& currentPass() const { return currentPass_; }

private:
  const PipelineOptions& options_;
  PassInstrumentation& instrumentation_;
  Plan& plan_;
  std::string currentPass_;
  int decisionCount_ = 0;
  std::optional<Decision> dueFault_;
};

class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;        // "cse", "pointwise-fusion"
  virtual std::string_view description() const = 0; // one line, for --help
  virtual void run(Graph& graph, PassContext& ctx) = 0;
};

} // namespace loupe
