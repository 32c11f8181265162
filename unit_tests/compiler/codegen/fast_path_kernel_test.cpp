// The contiguous fast paths of generated kernels (a vectorised innermost loop, blocked reduction
// lanes) and their strided fallback give the reference results on the layouts and sizes that
// choose between them: odd lengths that leave a tail after the vector lanes, size-1 and empty
// dims, broadcast operands, transposed and sliced views; reductions over the innermost dim (row
// lanes) and over outer dims (column chunks).
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// One fused group `x * y + x` with y broadcast from `yShape`, run on the given input tensors.
void checkPointwise(const std::vector<int64_t>& shape, const std::vector<int64_t>& yShape,
                    const Tensor& x, const Tensor& y) {
  SCOPED_TRACE("x " + x.describe() + ", y " + y.describe());
  Graph graph("pointwise");
  auto body = std::make_unique<Graph>("body");
  Shape xs(shape.begin(), shape.end()), ys(yShape.begin(), yShape.end());
  std::vector<Value*> outer{graph.addInput(tensorType(DType::F32, xs), "x"),
                            graph.addInput(tensorType(DType::F32, ys), "y")};
  Value* bx = body->addInput(tensorType(DType::F32, xs), "bx");
  Value* by = body->addInput(tensorType(DType::F32, ys), "by");
  GraphBuilder b(*body, nullptr);
  body->setOutputs({b.op("aten.add.Tensor", {b.op("aten.mul.Tensor", {bx, by}), bx})});
  graph.setOutputs(addFused(graph, std::move(body), outer, "pointwise")->results());
  expectGeneratedMatchesReference(graph, {x, y});
}

// Row sum (and amax, NaN-propagating) over the last dim with an epilogue, on input `x`.
void checkRowReduction(const std::string& op, const std::vector<int64_t>& shape, const Tensor& x) {
  SCOPED_TRACE(op + " on " + x.describe());
  Graph graph("reduction");
  auto body = std::make_unique<Graph>("body");
  Shape xs(shape.begin(), shape.end());
  std::vector<Value*> outer{graph.addInput(tensorType(DType::F32, xs), "x")};
  Value* bx = body->addInput(tensorType(DType::F32, xs), "bx");
  GraphBuilder b(*body, nullptr);
  AttrMap attrs;
  attrs.set("dim", IntList{SymExpr(-1)});
  attrs.set("keepdim", true);
  Value* reduced = b.op(op, {b.op("aten.mul.Tensor", {bx, bx})}, attrs);
  AttrMap epsilon;
  epsilon.set("other", 0.5);
  body->setOutputs({b.op("aten.add.Scalar", {reduced}, epsilon)});
  graph.setOutputs(addFused(graph, std::move(body), outer, "reduction")->results());
  expectGeneratedMatchesReference(graph, {x});
}

// (x - c)^2 reduced over `dims` with keepdim, then + c: a reduction whose prologue and epilogue
// both read c, of the kept shape. With the innermost dim kept it is a column reduction.
void checkColumnReduction(const std::string& op, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& dims, const Tensor& x) {
  SCOPED_TRACE(op + " on " + x.describe());
  std::vector<int64_t> keptSizes = shape;
  for (int64_t d : dims)
    keptSizes[static_cast<size_t>(d)] = 1;
  Graph graph("columns");
  auto body = std::make_unique<Graph>("body");
  Shape xs(shape.begin(), shape.end()), cs(keptSizes.begin(), keptSizes.end());
  std::vector<Value*> outer{graph.addInput(tensorType(DType::F32, xs), "x"),
                            graph.addInput(tensorType(DType::F32, cs), "c")};
  Value* bx = body->addInput(tensorType(DType::F32, xs), "bx");
  Value* bc = body->addInput(tensorType(DType::F32, cs), "bc");
  GraphBuilder b(*body, nullptr);
  Value* d = b.op("aten.sub.Tensor", {bx, bc});
  AttrMap attrs;
  attrs.set("dim", IntList(dims.begin(), dims.end()));
  attrs.set("keepdim", true);
  Value* reduced = b.op(op, {b.op("aten.mul.Tensor", {d, d})}, attrs);
  body->setOutputs({b.op("aten.add.Tensor", {reduced, bc})});
  graph.setOutputs(addFused(graph, std::move(body), outer, "reduction")->results());
  expectGeneratedMatchesReference(graph, {x, randomTensor(DType::F32, keptSizes, 40)});
}

TEST(FastPathKernel, ContiguousOperandsOfOddLengths) {
  for (int64_t n : {1, 7, 8, 9, 31, 33, 257})
    checkPointwise({3, n}, {3, n}, randomTensor(DType::F32, {3, n}, 1),
                   randomTensor(DType::F32, {3, n}, 2));
}

TEST(FastPathKernel, OperandBroadcastAlongTheInnermostDim) {
  checkPointwise({5, 19}, {5, 1}, randomTensor(DType::F32, {5, 19}, 3),
                 randomTensor(DType::F32, {5, 1}, 4));
  checkPointwise({5, 19}, {19}, randomTensor(DType::F32, {5, 19}, 5),
                 randomTensor(DType::F32, {19}, 6));
  checkPointwise({5, 19}, {}, randomTensor(DType::F32, {5, 19}, 7),
                 randomTensor(DType::F32, {}, 8));
}

TEST(FastPathKernel, StridedViewsTakeTheGeneralLoop) {
  Tensor base = randomTensor(DType::F32, {19, 5}, 9);
  Tensor transposed = base.view({5, 19}, {1, 5}, 0);
  Tensor wide = randomTensor(DType::F32, {5, 40}, 10);
  Tensor everyOther = wide.view({5, 19}, {40, 2}, 1);
  checkPointwise({5, 19}, {5, 19}, transposed, everyOther);
  checkPointwise({5, 19}, {5, 19}, randomTensor(DType::F32, {5, 19}, 11), everyOther);
  // Expanded at run time: a size-1 dim declared as full size reaches the kernel with stride 0.
  Tensor column = randomTensor(DType::F32, {5, 1}, 12);
  checkPointwise({5, 19}, {5, 19}, transposed, column.view({5, 19}, {1, 0}, 0));
}

TEST(FastPathKernel, SizeOneAndEmptyDims) {
  checkPointwise({1, 1}, {1, 1}, randomTensor(DType::F32, {1, 1}, 13),
                 randomTensor(DType::F32, {1, 1}, 14));
  checkPointwise({4, 1}, {4, 1}, randomTensor(DType::F32, {4, 1}, 15),
                 randomTensor(DType::F32, {4, 1}, 16).view({4, 1}, {1, 7}, 0));
  checkPointwise({0, 9}, {9}, randomTensor(DType::F32, {0, 9}, 17),
                 randomTensor(DType::F32, {9}, 18));
  checkPointwise({3, 0}, {3, 0}, randomTensor(DType::F32, {3, 0}, 19),
                 randomTensor(DType::F32, {3, 0}, 20));
  checkPointwise({40000}, {40000}, randomTensor(DType::F32, {40000}, 21),
                 randomTensor(DType::F32, {40000}, 22));
}

TEST(FastPathKernel, RowReductionsWithATailAfterTheLanes) {
  for (const std::string op : {"aten.sum.dim_IntList", "aten.amax"})
    for (int64_t n : {1, 7, 8, 9, 23, 1000})
      checkRowReduction(op, {3, n}, randomTensor(DType::F32, {3, n}, 23));
}

TEST(FastPathKernel, RowReductionsOfStridedAndEmptyInputs) {
  Tensor base = randomTensor(DType::F32, {21, 4}, 24);
  checkRowReduction("aten.sum.dim_IntList", {4, 21}, base.view({4, 21}, {1, 4}, 0));
  checkRowReduction("aten.amax", {4, 21}, base.view({4, 21}, {1, 4}, 0));
  checkRowReduction("aten.sum.dim_IntList", {4, 0}, randomTensor(DType::F32, {4, 0}, 25));
}

TEST(FastPathKernel, AmaxPropagatesANaNFromAnyLane) {
  for (int64_t position : {0, 5, 8, 18}) {
    Tensor x = randomTensor(DType::F32, {2, 19}, 26);
    x.set(19 + position, NAN);
    checkRowReduction("aten.amax", {2, 19}, x);
  }
}

TEST(FastPathKernel, ColumnReductionsOfOddWidthsAndThreadedSizes) {
  // Widths around the vector and chunk sizes; 300 x 1500 is threaded, in chunks of 512 and a
  // tail chunk.
  for (const std::string op : {"aten.sum.dim_IntList", "aten.amax", "aten.mean.dim"})
    for (int64_t rows : {1, 3, 300})
      for (int64_t width : {1, 7, 16, 17, 513, 1500})
        checkColumnReduction(op, {rows, width}, {0}, randomTensor(DType::F32, {rows, width}, 41));
}

TEST(FastPathKernel, ColumnReductionsWithOuterKeptDims) {
  checkColumnReduction("aten.sum.dim_IntList", {6, 50, 40}, {1},
                       randomTensor(DType::F32, {6, 50, 40}, 42));
  checkColumnReduction("aten.sum.dim_IntList", {6, 50, 40}, {0, 1},
                       randomTensor(DType::F32, {6, 50, 40}, 43));
  checkColumnReduction("aten.amin", {4, 9, 5, 33}, {0, 2},
                       randomTensor(DType::F32, {4, 9, 5, 33}, 44));
  // More rows than threads: each chunk is a whole row of the kept innermost dim.
  checkColumnReduction("aten.sum.dim_IntList", {64, 200, 24}, {1},
                       randomTensor(DType::F32, {64, 200, 24}, 45));
}

TEST(FastPathKernel, ColumnReductionsOfStridedEmptyAndNaNInputs) {
  Tensor base = randomTensor(DType::F32, {21, 40}, 46);
  checkColumnReduction("aten.sum.dim_IntList", {40, 21}, {0}, base.view({40, 21}, {1, 40}, 0));
  checkColumnReduction("aten.sum.dim_IntList", {0, 9}, {0}, randomTensor(DType::F32, {0, 9}, 47));
  checkColumnReduction("aten.sum.dim_IntList", {9, 0}, {0}, randomTensor(DType::F32, {9, 0}, 48));
  Tensor x = randomTensor(DType::F32, {30, 19}, 49);
  x.set(19 * 17 + 5, NAN);
  checkColumnReduction("aten.amax", {30, 19}, {0}, x);
}

TEST(FastPathKernel, ExecutableRunsThePlansSource) {
  // The plan records the source of `exp(x)` under the kernel name of a `neg(x)` node: what the
  // trace shows is what runs.
  auto singleOpGraph = [](const std::string& op) {
    auto graph = std::make_unique<Graph>("g");
    Value* x = graph->addInput(tensorType(DType::F32, {2, 3}), "x");
    graph->setOutputs({GraphBuilder(*graph, nullptr).op(op, {x})});
    return graph;
  };
  auto expGraph = singleOpGraph("aten.exp");
  auto negGraph = singleOpGraph("aten.neg");
  Plan plan = generatedPlan(*negGraph);
  ASSERT_EQ(plan.kernels.size(), 1u);
  plan.kernels[0].source = generateCpuKernel(*expGraph->nodes()[0], plan.kernels[0].name).source;
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Tensor x = randomTensor(DType::F32, {2, 3}, 27);
  Tensor y = Executable(*negGraph, plan, options).run({x})[0];
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(y.at(i)), std::exp(static_cast<float>(x.at(i))));
}

} // namespace
} // namespace loupe::testing
