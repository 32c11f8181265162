// shape-propagation on graphs whose inputs changed after they were built: the case a .lir file
// cannot show, since the verifier rejects stale types on input.
#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "compiler/pass/pass_manager.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

// Whether the pass changed the graph, as the pass manager tells it.
bool runShapePropagation(Graph& graph) {
  PipelineOptions options;
  PassInstrumentation none;
  Plan plan;
  PassContext ctx(options, none, plan);
  PassManager manager(PassManagerOptions{.verifyEach = false});
  manager.add(createPass("shape-propagation"));
  return manager.run(graph, ctx);
}

const char* kMlp = R"(
graph @mlp(%x: f32[8,4], %w: f32[4,16]) -> (f32[8,16]) {
  %0 = aten.mm(%x, %w) : f32[8,16]
  %1 = aten.relu(%0) : f32[8,16]
  %2 = aten.sum.dim_IntList(%1) {dim=[1], keepdim=true} : f32[8,1]
  %3 = custom.op(%2) : f32[3]
  return %1
}
)";

TEST(ShapePropagation, CarriesSymbolicBatchThroughEveryNode) {
  auto graph = parseGraph(kMlp);
  graph->input(0)->setType(TensorType{DType::F32, {SymExpr::symbol("s0"), 4}});
  EXPECT_TRUE(runShapePropagation(*graph));
  auto nodes = graph->nodes();
  Shape batchBy16{SymExpr::symbol("s0"), 16};
  EXPECT_EQ(nodes[0]->result()->tensorType().shape, batchBy16);
  EXPECT_EQ(nodes[1]->result()->tensorType().shape, batchBy16);
  EXPECT_EQ(nodes[2]->result()->tensorType().shape, (Shape{SymExpr::symbol("s0"), 1}));
  // An opaque op's type is what it was given: nothing can recompute it.
  EXPECT_EQ(nodes[3]->result()->tensorType().shape, Shape{3});
}

TEST(ShapePropagation, CarriesDTypeChanges) {
  auto graph = parseGraph(kMlp);
  graph->input(0)->setType(TensorType{DType::F64, {8, 4}});
  graph->input(1)->setType(TensorType{DType::F64, {4, 16}});
  EXPECT_TRUE(runShapePropagation(*graph));
  EXPECT_EQ(graph->outputs()[0]->tensorType().dtype, DType::F64);
}

TEST(ShapePropagation, ReportsNoChangeOnConsistentGraph) {
  auto graph = parseGraph(kMlp);
  EXPECT_FALSE(runShapePropagation(*graph));
}

TEST(ShapePropagation, NamesTheNodeWhoseInferenceFails) {
  auto graph = parseGraph(kMlp);
  graph->input(1)->setType(TensorType{DType::F32, {5, 16}});
  try {
    runShapePropagation(*graph);
    FAIL() << "an inner-dimension mismatch must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.context().node, "%0 = aten.mm");
  }
}

} // namespace
} // namespace loupe
