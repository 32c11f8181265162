// Generated reduction kernels (with pointwise prologues and epilogues) agree with the reference
// implementations over inner, outer, middle and all dims, with and without keepdim.
#include <gtest/gtest.h>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

AttrMap reduceAttrs(std::vector<int64_t> dims, bool keepdim) {
  AttrMap attrs;
  attrs.set("dim", IntList(dims.begin(), dims.end()));
  attrs.set("keepdim", keepdim);
  return attrs;
}

// x → exp(x) * y → <reduction> → result + bias: a prologue reading two inputs and an epilogue
// reading a third one broadcast over the reduced shape.
void checkReductionGroup(const std::string& op, std::vector<int64_t> dims, bool keepdim) {
  SCOPED_TRACE(op + " keepdim=" + std::to_string(keepdim));
  const Shape shape{3, 4, 5};
  Graph graph("reduction");
  auto body = std::make_unique<Graph>("body");
  std::vector<Value*> outer{graph.addInput(tensorType(DType::F32, shape), "x"),
                            graph.addInput(tensorType(DType::F32, shape), "y")};
  Value* x = body->addInput(tensorType(DType::F32, shape), "bx");
  Value* y = body->addInput(tensorType(DType::F32, shape), "by");
  GraphBuilder b(*body, nullptr);
  Value* reduced =
      b.op(op, {b.op("aten.mul.Tensor", {b.op("aten.exp", {x}), y})}, reduceAttrs(dims, keepdim));
  Shape biasShape = reduced->tensorType().shape;
  if (!biasShape.empty()) biasShape.front() = 1; // broadcast along the first kept dim
  outer.push_back(graph.addInput(tensorType(DType::F32, biasShape), "bias"));
  Value* bias = body->addInput(tensorType(DType::F32, biasShape), "bbias");
  body->setOutputs({b.op("aten.add.Tensor", {reduced, bias})});
  Node* fused = addFused(graph, std::move(body), outer, "reduction");
  graph.setOutputs(fused->results());

  std::vector<int64_t> biasSizes;
  for (const SymExpr& d : biasShape)
    biasSizes.push_back(*d.constant());
  expectGeneratedMatchesReference(graph, {randomTensor(DType::F32, {3, 4, 5}, 1),
                                          randomTensor(DType::F32, {3, 4, 5}, 2),
                                          randomTensor(DType::F32, biasSizes, 3)});
}

TEST(ReductionKernel, InnerDim) {
  checkReductionGroup("aten.sum.dim_IntList", {2}, false);
  checkReductionGroup("aten.amax", {-1}, true);
}

TEST(ReductionKernel, OuterDim) {
  checkReductionGroup("aten.sum.dim_IntList", {0}, true);
  checkReductionGroup("aten.amin", {0}, false);
}

TEST(ReductionKernel, MiddleDim) {
  checkReductionGroup("aten.mean.dim", {1}, false);
  checkReductionGroup("aten.amax", {1}, true);
}

TEST(ReductionKernel, SeveralAndAllDims) {
  checkReductionGroup("aten.sum.dim_IntList", {0, 2}, true);
  checkReductionGroup("aten.mean.dim", {0, 1, 2}, false);
  checkReductionGroup("aten.sum.dim_IntList", {}, false); // aten's [] means every dim
}

TEST(ReductionKernel, LoneReductionOverIntegers) {
  Graph graph("sum");
  Value* x = graph.addInput(tensorType(DType::I32, {4, 6}), "x");
  AttrMap all;
  graph.setOutputs({GraphBuilder(graph, nullptr).op("aten.sum", {x}, all)});
  expectGeneratedMatchesReference(graph, {randomTensor(DType::I32, {4, 6}, 4)}, 0);
}

TEST(ReductionKernel, SymbolicReducedDim) {
  Graph graph("softmax_denominator");
  SymExpr s0 = SymExpr::symbol("s0");
  Value* x = graph.addInput(tensorType(DType::F32, {2, s0}), "x");
  graph.setOutputs(
      {GraphBuilder(graph, nullptr).op("aten.sum.dim_IntList", {x}, reduceAttrs({1}, true))});
  for (int64_t n : {1, 9, 1000})
    expectGeneratedMatchesReference(graph, {randomTensor(DType::F32, {2, n}, 5)});
}

// Two reductions over different rows are refused; a value of the rows read after the
// reduction (softmax's e - max(e)) is a second pass over each row, which is generated.
TEST(ReductionKernel, RefusesReductionsOverDifferentRowsAndWalksARowTwice) {
  const Shape shape{4, 5};
  auto makeFused = [&](bool twoReductions) {
    auto graph = std::make_unique<Graph>("g");
    auto body = std::make_unique<Graph>("body");
    Value* outer = graph->addInput(tensorType(DType::F32, shape), "x");
    Value* x = body->addInput(tensorType(DType::F32, shape), "bx");
    GraphBuilder b(*body, nullptr);
    Value* e = b.op("aten.exp", {x});
    Value* m = b.op("aten.amax", {e}, reduceAttrs({1}, true));
    Value* out = twoReductions ? b.op("aten.sum.dim_IntList", {m}, reduceAttrs({0}, true))
                               : b.op("aten.sub.Tensor", {e, m}); // softmax-style
    body->setOutputs({out});
    addFused(*graph, std::move(body), {outer}, "reduction");
    return graph;
  };
  auto graph = makeFused(true);
  std::string why;
  EXPECT_FALSE(canGenerateCpuKernel(*graph->nodes().front(), &why));
  EXPECT_NE(why.find("more than one reduction"), std::string::npos) << why;
  graph = makeFused(false);
  EXPECT_TRUE(canGenerateCpuKernel(*graph->nodes().front(), &why)) << why;
}

} // namespace
} // namespace loupe::testing
