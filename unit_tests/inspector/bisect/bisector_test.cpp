// The bisector: it names the decision a fault was injected after, for every decision of a graph
// whose decisions span several passes; it reports no divergence when there is none.

#include <gtest/gtest.h>

#include "bisect_test_graph.h"
#include "compiler/pass/pass_manager.h"
#include "inspector/bisect/bisection_json.h"
#include "inspector/bisect/bisection_record.h"
#include "inspector/bisect/bisector.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

class DecisionLog : public PassInstrumentation {
public:
  void onDecision(const Decision& decision) override {
    if (decision.ordinal > 0) decisions.push_back(decision);
  }
  bool wantsDecisionText() const override { return true; } // compared with the culprit's
  std::vector<Decision> decisions;
};

// The decisions the full default pipeline makes on the sample graph, without a fault.
std::vector<Decision> sampleDecisions() {
  auto graph = testing::bisectGraph();
  PassManager manager;
  addPasses(manager, defaultPipeline());
  PipelineOptions options;
  DecisionLog log;
  Plan plan;
  PassContext context(options, log, plan);
  manager.run(*graph, context);
  return log.decisions;
}

BisectResult bisectWithFault(int faultAt) {
  auto graph = testing::bisectGraph();
  auto inputs = testing::bisectInputs();
  BisectOptions options;
  options.pipeline = defaultPipeline();
  options.pipelineOptions.injectFaultAt = faultAt;
  return bisect(*graph, inputs, runReference(*graph, inputs), options);
}

TEST(Bisector, NamesEveryInjectedDecisionAndItsPass) {
  std::vector<Decision> decisions = sampleDecisions();
  ASSERT_GE(decisions.size(), 4u);
  for (const Decision& expected : decisions) {
    SCOPED_TRACE("fault after decision " + std::to_string(expected.ordinal));
    BisectResult result = bisectWithFault(expected.ordinal);
    ASSERT_TRUE(result.diverged);
    ASSERT_TRUE(result.culprit.has_value());
    EXPECT_EQ(result.culprit->ordinal, expected.ordinal);
    EXPECT_EQ(result.culprit->pass, expected.pass);
    EXPECT_EQ(result.culprit->description, expected.description);
    EXPECT_EQ(result.firstBadPass, expected.pass);
    // The fault's own node may be fused, a decision the clean pipeline does not make.
    EXPECT_GE(result.totalDecisions, static_cast<int>(decisions.size()));
    EXPECT_NEAR(result.full.maxRelError, 0.25, 1e-6); // the outputs were scaled by 1.25
  }
}

TEST(Bisector, NoFaultIsNoDivergenceAfterOneTrial) {
  BisectResult result = bisectWithFault(-1);
  EXPECT_FALSE(result.diverged);
  EXPECT_FALSE(result.culprit.has_value());
  ASSERT_EQ(result.trials.size(), 1u);
  EXPECT_EQ(result.trials[0].phase, "full");
  EXPECT_NE(describeResult(result).find("no divergence"), std::string::npos);
}

TEST(Bisector, SearchesPassesThenDecisionsWithLogarithmicallyManyTrials) {
  std::vector<Decision> decisions = sampleDecisions();
  BisectResult result = bisectWithFault(static_cast<int>(decisions.size()));
  size_t passTrials = 0, decisionTrials = 0;
  for (const BisectTrial& trial : result.trials) {
    passTrials += trial.phase == "pass";
    decisionTrials += trial.phase == "decision";
  }
  EXPECT_LE(passTrials, 4u); // 11 passes
  EXPECT_GE(decisionTrials, 1u);
  EXPECT_LE(decisionTrials, 1u + 4u);
}

TEST(Bisector, CulpritNodesCarryTheirSourceLines) {
  // The multiplication by one (model.py:3) is the first rewrite.
  BisectResult result = bisectWithFault(1);
  ASSERT_TRUE(result.culprit.has_value());
  ASSERT_FALSE(result.nodes.empty());
  EXPECT_EQ(result.nodes[0].loc.file, "model.py");
  EXPECT_EQ(result.nodes[0].loc.line, 3);
  std::string report = describeResult(result);
  EXPECT_NE(report.find("culprit: decision 1 of " + std::to_string(result.totalDecisions) +
                        " [algebraic-simplification]"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("model.py:3"), std::string::npos) << report;
}

TEST(Bisector, FusionCulpritsListTheFusedMembers) {
  for (const Decision& d : sampleDecisions()) {
    if (d.kind != "fusion") continue;
    BisectResult result = bisectWithFault(d.ordinal);
    ASSERT_TRUE(result.culprit.has_value());
    ASSERT_FALSE(result.nodes.empty());
    EXPECT_GE(result.nodes[0].fusedMembers.size(), 2u) << describeResult(result);
    return;
  }
  FAIL() << "the sample graph makes no fusion decision";
}

TEST(Bisector, RecordKeepsTheCulpritAndEveryStep) {
  BisectResult result = bisectWithFault(2);
  BisectionRecord record = bisectionRecordOf(result, 2);
  EXPECT_EQ(record.status, "culprit_decision");
  EXPECT_EQ(record.injected_fault, 2);
  EXPECT_EQ(record.decision_ordinal, 2);
  EXPECT_EQ(record.steps.size(), result.trials.size());
  EXPECT_EQ(record.steps.front().phase, "full");
  EXPECT_TRUE(record.steps.front().diverged);
}

// The one JSON form, which `loupe bisect --json` prints and loupe._C.bisect returns as a dict.
TEST(Bisector, JsonCarriesTheVerdictTheReportAndTheRecord) {
  BisectResult result = bisectWithFault(2);
  nlohmann::json json = bisectionJson(result, 2);
  EXPECT_EQ(json["status"], "culprit_decision");
  EXPECT_EQ(json["diverged"], true);
  EXPECT_EQ(json["report"], describeResult(result));
  EXPECT_EQ(json["injected_fault"], 2);
  EXPECT_EQ(json["first_bad_pass"], result.firstBadPass);
  EXPECT_EQ(json["total_decisions"], result.totalDecisions);
  EXPECT_DOUBLE_EQ(json["max_abs_error"].get<double>(), result.full.maxAbsError);
  EXPECT_EQ(json["decision"]["ordinal"], 2);
  EXPECT_EQ(json["decision"]["pass"], result.culprit->pass);
  EXPECT_EQ(json["decision"]["nodes"], result.culprit->nodes);
  ASSERT_EQ(json["culprit_nodes"].size(), result.nodes.size());
  EXPECT_EQ(json["culprit_nodes"][0]["name"], result.nodes[0].name);
  EXPECT_EQ(json["culprit_nodes"][0]["line"], result.nodes[0].loc.line);
  ASSERT_EQ(json["steps"].size(), result.trials.size());
  EXPECT_EQ(json["steps"][0]["phase"], "full");

  nlohmann::json clean = bisectionJson(bisectWithFault(-1), -1);
  EXPECT_EQ(clean["status"], "no_divergence");
  EXPECT_EQ(clean["diverged"], false);
  EXPECT_TRUE(clean["decision"].is_null());
  EXPECT_FALSE(clean.contains("injected_fault"));
  EXPECT_EQ(clean["first_bad_pass"], "");
}

} // namespace
} // namespace loupe
