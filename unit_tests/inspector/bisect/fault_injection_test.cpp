// Fault injection (PipelineOptions::injectFaultAt): the compiled results are wrong exactly when
// the chosen decision was applied, and the fault is announced to the instrumentation.

#include <gtest/gtest.h>

#include <set>

#include "bisect_test_graph.h"
#include "compiler/ir/printer.h"
#include "compiler/pass/fault_injection.h"
#include "compiler/pass/pass_manager.h"
#include "compiler/runtime/executable.h"
#include "inspector/bisect/bisector.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

class DecisionLog : public PassInstrumentation {
public:
  void onDecision(const Decision& decision) override { decisions.push_back(decision); }
  std::vector<Decision> decisions;
};

struct Compiled {
  std::unique_ptr<Graph> graph;
  std::vector<Decision> decisions; // the fault's announcement included
  std::vector<Tensor> outputs;
};

Compiled compileAndRun(int faultAt, int limit) {
  Compiled c;
  c.graph = testing::bisectGraph();
  PassManager manager;
  addPasses(manager, defaultPipeline());
  PipelineOptions options;
  options.injectFaultAt = faultAt;
  options.bisectLimit = limit;
  DecisionLog log;
  Plan plan;
  PassContext context(options, log, plan);
  manager.run(*c.graph, context);
  c.decisions = log.decisions;
  c.outputs = Executable(*c.graph, plan).run(testing::bisectInputs());
  return c;
}

bool sameOutputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].toDoubles() != b[i].toDoubles()) return false;
  return true;
}

int countedDecisions() {
  Compiled clean = compileAndRun(-1, -1);
  return static_cast<int>(clean.decisions.size());
}

TEST(FaultInjection, TheSampleGraphMakesDecisionsInSeveralPasses) {
  Compiled clean = compileAndRun(-1, -1);
  std::set<std::string> passes;
  for (const Decision& d : clean.decisions)
    passes.insert(d.pass);
  EXPECT_GE(clean.decisions.size(), 4u);
  EXPECT_GE(passes.size(), 3u);
}

TEST(FaultInjection, ResultsChangeOnlyOnceTheDecisionIsApplied) {
  const int total = countedDecisions();
  for (int fault = 1; fault <= total; ++fault) {
    for (int limit = 0; limit <= total; ++limit) {
      SCOPED_TRACE("fault at " + std::to_string(fault) + ", limit " + std::to_string(limit));
      Compiled clean = compileAndRun(-1, limit);
      Compiled faulty = compileAndRun(fault, limit);
      EXPECT_EQ(sameOutputs(clean.outputs, faulty.outputs), limit < fault);
    }
  }
}

TEST(FaultInjection, IsAnnouncedAsAnUncountedDecisionAndShowsInTheGraph) {
  Compiled clean = compileAndRun(-1, -1);
  Compiled faulty = compileAndRun(2, -1);
  std::vector<Decision> faults, counted;
  for (const Decision& d : faulty.decisions)
    (d.kind == "fault" ? faults : counted).push_back(d);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].ordinal, 0);
  EXPECT_EQ(faults[0].pass, clean.decisions[1].pass);
  EXPECT_NE(faults[0].description.find("after decision 2"), std::string::npos)
      << faults[0].description;
  EXPECT_EQ(counted.front().ordinal, 1);
  EXPECT_NE(toText(*faulty.graph).find("_fault"), std::string::npos);
  EXPECT_EQ(toText(*clean.graph).find("_fault"), std::string::npos);
}

TEST(FaultInjection, BeyondTheLastDecisionNothingHappens) {
  const int total = countedDecisions();
  EXPECT_TRUE(sameOutputs(compileAndRun(total + 1, -1).outputs, compileAndRun(-1, -1).outputs));
}

TEST(FaultInjection, ScalesTheOutputsThatDependOnTheDecisionsNodes) {
  auto graph = testing::bisectGraph();
  Decision d{.ordinal = 1, .pass = "p", .kind = "rewrite", .description = "", .nodes = {"6"}};
  Decision fault = injectFault(*graph, d);
  EXPECT_EQ(fault.nodes, (std::vector<std::string>{"6", "6_fault"}));
  EXPECT_EQ(graph->outputs()[0]->name(), "4");
  EXPECT_EQ(graph->outputs()[1]->name(), "6_fault");
}

TEST(FaultInjection, WithoutItsNodesTheFirstOutputIsScaled) {
  auto graph = testing::bisectGraph();
  Decision d{.ordinal = 1, .pass = "dce", .kind = "erase", .description = "", .nodes = {"gone"}};
  injectFault(*graph, d);
  EXPECT_EQ(graph->outputs()[0]->name(), "4_fault");
  EXPECT_EQ(graph->outputs()[1]->name(), "6");
}

} // namespace
} // namespace loupe
