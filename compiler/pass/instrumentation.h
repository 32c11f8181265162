// The hooks the pass manager calls around every pass and on every decision. Every hook is
// empty by default, so an instrumentation overrides only what it needs. IR printing,
// timing and the trace recorder (inspector/) are all instrumentations; compiler/ never
// depends on what is done with the events.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pass/plan.h"

namespace loupe {

class Pass;

struct PassRunInfo {
  std::string pass;
  int ordinal = 0; // position in the pipeline, 0-based
  double wallMs = 0;
  bool graphChanged = false; // the graph's fingerprint differs after the pass
  bool planChanged = false;  // the Plan's (kernel choices, memory plan) differs after the pass
  size_t nodesBefore = 0;    // recursive counts (fused bodies included)
  size_t nodesAfter = 0;
  int decisions = 0; // decisions asked for by this pass
};

struct Decision {
  int ordinal = 0; // 1-based, counted over the whole pipeline run
  std::string pass;
  std::string kind;               // "rewrite", "fusion", "fold", ...
  std::string description;        // "fold aten.add(%3, %4) into constant"; empty unless wanted
  std::vector<std::string> nodes; // value names involved
  bool applied = true;            // false when the decision counter refused it
  // Where the rule that made it is written: the repository-relative file ("passes/cse.cpp")
  // and line of the decide() call, or of the rule's row in a table of rules. Empty and 0 for
  // an injected fault.
  std::string_view ruleFile;
  int ruleLine = 0;
};

class PassInstrumentation {
public:
  virtual ~PassInstrumentation() = default;
  virtual void runBeforePipeline(const Graph& /*graph*/) {}
  virtual void runBeforePass(const Pass& /*pass*/, const Graph& /*graph*/) {}
  virtual void runAfterPass(const Pass& /*pass*/, const Graph& /*graph*/,
                            const PassRunInfo& /*info*/) {}
  virtual void runAfterPassFailed(const Pass& /*pass*/, const Graph& /*graph*/,
                                  const std::string& /*error*/) {}
  virtual void runAfterPipeline(const Graph& /*graph*/, const Plan& /*plan*/) {}
  virtual void onDecision(const Decision& /*decision*/) {}
  virtual void onKernelChoice(const KernelChoice& /*choice*/) {}
  virtual void onMemoryPlan(const MemoryPlan& /*plan*/) {}
  // Whether onDecision needs Decision::description. Building descriptions costs every compile,
  // so they are built only when some instrumentation says yes (the trace recorder, a printed
  // decision log, the bisector).
  virtual bool wantsDecisionText() const { return false; }
};

// Fans each event out to several instrumentations, in order.
class InstrumentationList : public PassInstrumentation {
public:
  void add(PassInstrumentation* instrumentation) { items_.push_back(instrumentation); }
  void runBeforePipeline(const Graph& g) override;
  void runBeforePass(const Pass& p, const Graph& g) override;
  void runAfterPass(const Pass& p, const Graph& g, const PassRunInfo& info) override;
  void runAfterPassFailed(const Pass& p, const Graph& g, const std::string& error) override;
  void runAfterPipeline(const Graph& g, const Plan& plan) override;
  void onDecision(const Decision& d) override;
  void onKernelChoice(const KernelChoice& c) override;
  void onMemoryPlan(const MemoryPlan& m) override;
  bool wantsDecisionText() const override; // when any of them does

private:
  std::vector<PassInstrumentation*> items_;
};

} // namespace loupe
