// The compile driver: a good graph compiles to an ok result with its plan and executable; a
// failure at import, in a pass or in building the target's executable becomes the result's
// error naming what failed; the instrumentation, pass manager options and bisect limit of the
// options reach the pipeline.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "driver/compile_graph.h"

#include "compiler/runtime/cuda_backend.h"
#include "passes/pipeline.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// A rewrite (the multiplication by one), a duplicate for CSE, then pointwise ops to fuse.
constexpr const char* kGraph = R"lir(
graph @model(%x: f32[4,8], %y: f32[4,8]) -> (f32[4,8]) {
  %one = loupe.constant() {data=[1.0], dtype=f32, shape=[]} : f32[]
  %0 = aten.mul.Tensor(%x, %one) : f32[4,8]
  %1 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]
  %2 = aten.add.Tensor(%0, %y) {alpha=1} : f32[4,8]
  %3 = aten.mul.Tensor(%1, %2) : f32[4,8]
  %4 = aten.relu(%3) : f32[4,8]
  return %4
}
)lir";

CompileOptions runnable() {
  CompileOptions options;
  options.pipeline = defaultPipeline();
  options.buildExecutable = true;
  options.executable.compiler.cacheDir = testCacheDir();
  return options;
}

// Names the passes it sees start, and the decisions it is told of.
class PassLog : public PassInstrumentation {
public:
  void runBeforePass(const Pass& pass, const Graph&) override { passes.emplace_back(pass.name()); }
  void onDecision(const Decision& decision) override { decisions.push_back(decision); }
  std::vector<std::string> passes;
  std::vector<Decision> decisions;
};

TEST(CompileGraph, GoodGraphCompilesToAnOkResultWithPlanAndExecutable) {
  CompileResult result = compileGraph(kGraph, "model.lir", runnable());
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_NO_THROW(result.throwIfFailed());
  ASSERT_NE(result.graph, nullptr);
  EXPECT_FALSE(result.plan.kernels.empty());
  EXPECT_GT(result.compileMs, 0);
  ASSERT_NE(result.executable, nullptr);

  Tensor x = randomTensor(DType::F32, {4, 8}, 1), y = randomTensor(DType::F32, {4, 8}, 2);
  std::vector<Tensor> outputs = result.executable->run({x, y});
  ASSERT_EQ(outputs.size(), 1u);
  for (int64_t k = 0; k < x.numel(); ++k) {
    double sum = x.at(k) + y.at(k);
    EXPECT_NEAR(outputs[0].at(k), sum * sum, 1e-4) << "element " << k;
  }
}

TEST(CompileGraph, WithoutBuildExecutableThereIsNone) {
  CompileOptions options;
  options.pipeline = defaultPipeline();
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result.plan.kernels.empty());
  EXPECT_EQ(result.executable, nullptr);
}

TEST(CompileGraph, UnparsableTextFailsAtImportWithTheParseError) {
  CompileResult result = compileGraph("graph @bad(%x: f32[4]", "bad.lir", runnable());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error->pass, "import");
  EXPECT_NE(result.error->message.find("bad.lir:1:"), std::string::npos) << result.error->message;
  EXPECT_NE(result.error->message.find("parse error"), std::string::npos) << result.error->message;
  EXPECT_EQ(result.graph, nullptr); // nothing parsed
  EXPECT_EQ(result.executable, nullptr);
  try {
    result.throwIfFailed();
    FAIL() << "throwIfFailed did not throw";
  } catch (const Error& e) { // rethrown as thrown: a loupe::Error that keeps its kind
    EXPECT_EQ(e.kind(), "parse");
    EXPECT_EQ(e.what(), result.error->message);
  }
}

TEST(CompileGraph, GraphThatFailsToVerifyFailsAtImportAndIsKept) {
  CompileResult result =
      compileGraph("graph @bad(%x: f32[4]) -> (f32[4]) { %0 = aten.mm(%x, %x) : f32[4] return %0 }",
                   "bad.lir", runnable());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error->pass, "import");
  EXPECT_NE(result.error->message.find("aten.mm"), std::string::npos) << result.error->message;
  ASSERT_NE(result.graph, nullptr); // the graph the failure is about
  EXPECT_EQ(result.graph->name(), "bad");
}

TEST(CompileGraph, PassErrorNamesThePass) {
  CompileOptions options = runnable();
  options.pipelineOptions.target = "abacus"; // kernel selection knows cpu and cuda only
  PassLog log;
  options.instrumentation.push_back(&log);
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error->pass, "kernel-selection");
  EXPECT_NE(result.error->message.find("unknown target 'abacus'"), std::string::npos)
      << result.error->message;
  EXPECT_EQ(log.passes.back(), "kernel-selection"); // the passes before it ran
  EXPECT_NE(result.graph, nullptr);                 // as far as it got
  EXPECT_EQ(result.executable, nullptr);
  EXPECT_THROW(result.throwIfFailed(), Error);
}

TEST(CompileGraph, DeviceWithoutARuntimeFailsBuildingTheExecutable) {
  std::string why;
  if (cudaBackendAvailable(&why)) GTEST_SKIP() << "CUDA runs here";
  CompileOptions options = runnable();
  options.pipelineOptions.target = "cuda";
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error->pass, ""); // every pass succeeded; the runtime is missing
  EXPECT_NE(result.error->message.find("is compiled for cuda:0, where Loupe cannot run: " + why),
            std::string::npos)
      << result.error->message;
  EXPECT_FALSE(result.plan.kernels.empty()); // planned for cuda all the same

  options.buildExecutable = false;
  EXPECT_TRUE(compileGraph(kGraph, "model.lir", options).ok());
}

TEST(CompileGraph, InstrumentationSeesThePassesInOrder) {
  CompileOptions options;
  options.pipeline = {"shape-propagation", "algebraic-simplification", "cse", "dce", "layout"};
  options.manager.disabled = {"cse"};
  options.manager.stopAfter = "dce";
  PassLog first, second;
  options.instrumentation = {&first, &second};
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_TRUE(result.ok()) << result.error->message;
  std::vector<std::string> expected = {"shape-propagation", "algebraic-simplification", "dce"};
  EXPECT_EQ(first.passes, expected);
  EXPECT_EQ(second.passes, expected);
  EXPECT_FALSE(first.decisions.empty());
}

bool hasFusedNode(const Graph& graph) {
  for (const Node* node : graph.nodes())
    if (node->hasBody()) return true;
  return false;
}

TEST(CompileGraph, BisectLimitIsHonoured) {
  CompileOptions options;
  options.pipeline = defaultPipeline();
  PassLog all;
  options.instrumentation.push_back(&all);
  CompileResult unlimited = compileGraph(kGraph, "model.lir", options);
  ASSERT_TRUE(unlimited.ok()) << unlimited.error->message;
  ASSERT_GE(all.decisions.size(), 2u);
  EXPECT_TRUE(hasFusedNode(*unlimited.graph));

  options.pipelineOptions.bisectLimit = 1;
  PassLog limited;
  options.instrumentation.assign(1, &limited); // instead of `all`
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_GE(limited.decisions.size(), 2u);
  for (const Decision& decision : limited.decisions)
    EXPECT_EQ(decision.applied, decision.ordinal <= 1) << decision.description;
  EXPECT_EQ(limited.decisions.front().description, all.decisions.front().description);
  EXPECT_FALSE(hasFusedNode(*result.graph)); // every fusion came after decision 1, refused
}

TEST(CompileGraph, BackgroundKernelBuildAddsItsTimeOnce) {
  CompileOptions options = runnable();
  options.executable.buildKernelsInBackground = true;
  CompileResult result = compileGraph(kGraph, "model.lir", options);
  ASSERT_TRUE(result.ok()) << result.error->message;
  double beforeBuild = result.compileMs;
  EXPECT_TRUE(result.finishKernelBuild());
  double afterBuild = result.compileMs;
  EXPECT_GE(afterBuild, beforeBuild);
  // (a + b) - a is b up to rounding: compared within a relative 1e-12.
  EXPECT_NEAR(afterBuild - beforeBuild, result.executable->kernelBuildMs(), 1e-12 * afterBuild);
  EXPECT_TRUE(result.finishKernelBuild());
  EXPECT_EQ(result.compileMs, afterBuild);
}

} // namespace
} // namespace loupe::testing
