// The reducer: a 24-node graph miscompiled by an injected fault shrinks to a few nodes that
// still diverge on their own, with the same decision faulted, and its concrete dims shrink; a
// dim shrinks only as far as the divergence allows; a tiny budget still returns a diverging
// graph; symbolic dims stay symbolic; a graph that does not diverge is left as it is.

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ops/verifier.h"
#include "driver/compile_graph.h"
#include "inspector/reduce/reducer.h"
#include "passes/pipeline.h"
#include "reduce_test_graph.h"

namespace loupe {
namespace {

ReduceOptions faultOptions(int faultAt) {
  ReduceOptions options;
  options.pipeline = defaultPipeline();
  options.pipelineOptions.injectFaultAt = faultAt;
  return options;
}

// Checked apart from the reducer: the graph compiled as the result says differs from its
// reference run on the result's inputs.
bool divergesOnItsOwn(const ReduceResult& result, const ReduceOptions& options) {
  verify(*result.graph);
  std::vector<Tensor> expected = runReference(*result.graph, result.inputs);
  CompileOptions compileOptions;
  compileOptions.pipeline = result.pipeline;
  compileOptions.pipelineOptions = options.pipelineOptions;
  compileOptions.buildExecutable = true;
  CompileResult compiled = compileGraph(result.graph->clone(), compileOptions);
  compiled.throwIfFailed();
  BisectTrial trial;
  compareOutputs(compiled.executable->run(result.inputs), expected, result.tolerance, trial);
  return trial.diverged;
}

TEST(Reducer, ShrinksAnInjectedFaultToAFewNodesThatStillDiverge) {
  auto graph = testing::reduceGraph();
  ASSERT_EQ(graph->numNodes(), 24u);
  ReduceOptions options = faultOptions(1);
  int reports = 0;
  options.progress = [&](const ReduceProgress& progress) {
    ++reports;
    EXPECT_EQ(progress.originalNodes, 24u);
    EXPECT_LE(progress.reducedNodes, 24u);
  };
  ReduceResult result = reduce(*graph, testing::reduceInputs(), options);
  ASSERT_TRUE(result.diverged);
  EXPECT_FALSE(result.budgetExhausted);
  EXPECT_EQ(result.originalNodes, 24u);
  EXPECT_LE(result.reducedNodes, 3u);
  EXPECT_EQ(result.reducedNodes, result.graph->numNodes());
  EXPECT_GT(result.trials, 2);
  EXPECT_GE(reports, result.trials - 2);
  EXPECT_TRUE(result.check.diverged);
  // Decisions are numbered afresh in a candidate: the fault still follows the same rule, on
  // the node it followed in the whole graph.
  EXPECT_EQ(result.faultFollows, "algebraic-simplification mul-by-one");
  EXPECT_NE(toText(*result.graph).find("%v11 = aten.mul.Tensor(%v10, %one)"), std::string::npos)
      << toText(*result.graph);
  EXPECT_EQ(result.injectFault, 1); // its ordinal in the reduced graph
  // Then the dims: the 8 columns are not needed to show the fault.
  EXPECT_EQ(result.dims, (std::vector<DimChange>{{8, 1}}));
  // The fault lands in the front of the pipeline: no generated kernel is needed to see it.
  EXPECT_EQ(std::find(result.pipeline.begin(), result.pipeline.end(), "kernel-selection"),
            result.pipeline.end());
  EXPECT_TRUE(divergesOnItsOwn(result, options));
  ASSERT_EQ(result.inputs.size(), result.graph->numInputs());
}

// Decision 2 of the whole graph is the second mul-by-one; a graph without the first numbers it
// 1, and a graph without the second has no such decision at all.
TEST(Reducer, TheFaultFollowsItsDecisionWhateverItsOrdinalInACandidate) {
  auto graph = parseGraph(R"(graph @twice(%x: f32[4,8], %y: f32[4,8]) -> (f32[4,8]) {
  %one = loupe.constant() {data=[1.0], dtype=f32, shape=[]} : f32[]
  %a = aten.mul.Tensor(%x, %one) : f32[4,8]
  %c = aten.add.Tensor(%a, %y) {alpha=1} : f32[4,8]
  %b = aten.mul.Tensor(%c, %one) : f32[4,8]
  %d = aten.neg(%b) : f32[4,8]
  return %d
})");
  ReduceOptions options = faultOptions(2);
  ReduceResult result = reduce(*graph, testing::reduceInputs(), options);
  ASSERT_TRUE(result.diverged);
  std::string text = toText(*result.graph);
  EXPECT_NE(text.find("%b = aten.mul.Tensor(%c, %one)"), std::string::npos) << text;
  EXPECT_EQ(text.find("%a = "), std::string::npos) << text;
  EXPECT_EQ(result.reducedNodes, 2u); // the constant and %b
  EXPECT_EQ(result.injectFault, 1);
  EXPECT_EQ(result.faultFollows, "algebraic-simplification mul-by-one");
  options.pipelineOptions.injectFaultAt = result.injectFault;
  EXPECT_TRUE(divergesOnItsOwn(result, options));
}

TEST(Reducer, ATinyBudgetStillReturnsADivergingGraph) {
  auto graph = testing::reduceGraph();
  ReduceOptions options = faultOptions(1);
  options.budgetSeconds = 1e-9;
  ReduceResult result = reduce(*graph, testing::reduceInputs(), options);
  ASSERT_TRUE(result.diverged);
  EXPECT_TRUE(result.budgetExhausted);
  EXPECT_LE(result.reducedNodes, 24u);
  EXPECT_TRUE(result.check.diverged);
  EXPECT_TRUE(divergesOnItsOwn(result, options));
}

TEST(Reducer, KeepsSymbolicDimsSymbolic) {
  auto graph = testing::reduceGraph();
  ReduceResult result = reduce(*graph, testing::reduceInputs(), faultOptions(1));
  ASSERT_TRUE(result.diverged);
  ASSERT_GE(result.graph->numInputs(), 1u);
  for (const auto& input : result.graph->inputs()) {
    if (!input->type().isTensor() || input->tensorType().shape.empty()) continue;
    EXPECT_TRUE(input->tensorType().shape[0].isSymbol()) << input->name();
  }
  // The .lir written for the reproduction says so too (the concrete 8 shrank to 1).
  EXPECT_NE(toText(*result.graph).find("f32[s0,1]"), std::string::npos) << toText(*result.graph);
}

// The variance of one element is 0, and so is the faulted one: the reduced dim keeps 2 elements.
TEST(Reducer, ShrinksADimOnlyAsFarAsTheDivergenceAllows) {
  auto graph = parseGraph(R"(graph @spread(%x: f32[4,6]) -> (f32[4]) {
  %v = aten.var.correction(%x) {dim=[1], correction=0, keepdim=false} : f32[4]
  return %v
})");
  std::vector<Tensor> inputs = testing::reduceInputs(3); // f32[3,8]: 24 numbers to take from
  Tensor x = Tensor::empty(DType::F32, {4, 6});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, inputs[0].at(i));
  ReduceOptions options = faultOptions(1);
  ReduceResult result = reduce(*graph, {x}, options);
  ASSERT_TRUE(result.diverged);
  EXPECT_EQ(result.dims, (std::vector<DimChange>{{4, 1}, {6, 2}}));
  EXPECT_EQ(result.graph->input(0)->type().str(), "f32[1,2]");
  EXPECT_TRUE(divergesOnItsOwn(result, options));
}

TEST(Reducer, LeavesAGraphThatDoesNotDivergeAsItIs) {
  auto graph = testing::reduceGraph();
  ReduceOptions options;
  options.pipeline = defaultPipeline();
  ReduceResult result = reduce(*graph, testing::reduceInputs(), options);
  EXPECT_FALSE(result.diverged);
  EXPECT_EQ(result.reducedNodes, 24u);
  EXPECT_EQ(result.pipeline, defaultPipeline());
}

TEST(Reducer, RefusesAnEmptyPipeline) {
  auto graph = testing::reduceGraph();
  EXPECT_THROW(reduce(*graph, testing::reduceInputs(), ReduceOptions{}), Error);
}

TEST(Reducer, DescribesProgressInOneLine) {
  EXPECT_EQ(describeProgress({37, 12, 14, 9.4}), "reduce: 37 -> 12 nodes, 14 trials, 9 s");
  EXPECT_EQ(describeProgress({37, 3, 30, 11, {{8, 1}, {32, 32}, {768, 2}}}),
            "reduce: 37 -> 3 nodes, dims 8 -> 1, 768 -> 2, 30 trials, 11 s");
}

} // namespace
} // namespace loupe
