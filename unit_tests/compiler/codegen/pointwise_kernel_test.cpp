// Generated pointwise kernels agree with the reference implementations: chains, diamonds,
// broadcasting, strided inputs, every compute precision, symbolic shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/codegen/cpu/kernel_prelude.h"
#include "compiler/ir/error.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"
#include "unit_tests/compiler/codegen/cuda/fused_graph.h"

namespace loupe::testing {
namespace {

struct FusedGraph {
  Graph graph{"pointwise"};
  std::unique_ptr<Graph> body = std::make_unique<Graph>("body");
  std::vector<Value*> outerInputs;
  std::vector<Value*> bodyInputs;

  Value* input(const TensorType& type, const std::string& name) {
    outerInputs.push_back(graph.addInput(type, name));
    bodyInputs.push_back(body->addInput(type, name + "_b"));
    return bodyInputs.back();
  }
  Value* op(const std::string& name, std::vector<Value*> operands, AttrMap attrs = {}) {
    return GraphBuilder(*body, nullptr).op(name, std::move(operands), std::move(attrs));
  }
  // Yields `outputs` from the body and returns them from the graph through one fused node.
  void finish(std::vector<Value*> outputs, const std::string& kind = "pointwise") {
    body->setOutputs(std::move(outputs));
    Node* fused = addFused(graph, std::move(body), outerInputs, kind);
    graph.setOutputs(fused->results());
  }
};

AttrMap scalarAttr(const std::string& name, double value) {
  AttrMap attrs;
  attrs.set(name, value);
  return attrs;
}

TEST(PointwiseKernel, ChainOfUnaryAndBinaryOps) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F32, {4, 5}), "x");
  Value* y = g.input(tensorType(DType::F32, {4, 5}), "y");
  Value* t = g.op("aten.mul.Tensor", {g.op("aten.exp", {x}), y});
  g.finish({g.op("aten.relu", {g.op("aten.add.Scalar", {t}, scalarAttr("other", -1.5))})});
  expectGeneratedMatchesReference(
      g.graph, {randomTensor(DType::F32, {4, 5}, 1), randomTensor(DType::F32, {4, 5}, 2)});
}

// pow with a constant exponent takes the multiply / sqrt / reciprocal forms torch's CPU kernel
// uses for 2, 3, 0.5, -1 and -2, and std::pow otherwise; every form matches the reference, and a
// tensor exponent still goes through the general path.
TEST(PointwiseKernel, PowTakesTheSpecialFormsOfConstantExponents) {
  for (double exponent : {2.0, 3.0, 0.5, -1.0, -2.0, 2.5, 0.0}) {
    SCOPED_TRACE("exponent " + std::to_string(exponent));
    FusedGraph g;
    Value* x = g.input(tensorType(DType::F32, {5, 9}), "x");
    Value* positive = g.op("aten.add.Scalar", {g.op("aten.abs", {x})}, scalarAttr("other", 0.25));
    g.finish({g.op("aten.pow.Tensor_Scalar", {positive}, scalarAttr("exponent", exponent))});
    expectGeneratedMatchesReference(g.graph, {randomTensor(DType::F32, {5, 9}, 21)});
  }
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F32, {5, 9}), "x");
  Value* e = g.input(tensorType(DType::F32, {5, 9}), "e");
  Value* positive = g.op("aten.add.Scalar", {g.op("aten.abs", {x})}, scalarAttr("other", 0.25));
  g.finish({g.op("aten.pow.Tensor_Tensor", {positive, e})});
  expectGeneratedMatchesReference(
      g.graph, {randomTensor(DType::F32, {5, 9}, 22), randomTensor(DType::F32, {5, 9}, 23)});
}

TEST(PointwiseKernel, DiamondWithTwoOutputs) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F32, {6, 7}), "x");
  Value* negated = g.op("aten.neg", {x});
  Value* exp = g.op("aten.exp", {negated});
  Value* sigmoid = g.op("aten.sigmoid", {negated});
  g.finish({exp, g.op("aten.add.Tensor", {exp, sigmoid})});
  expectGeneratedMatchesReference(g.graph, {randomTensor(DType::F32, {6, 7}, 3)});
}

TEST(PointwiseKernel, BroadcastsOperandsIntoTheOutputShape) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F32, {4, 1, 5}), "x");
  Value* y = g.input(tensorType(DType::F32, {3, 1}), "y");
  Value* z = g.input(tensorType(DType::F32, {}), "z");
  g.finish({g.op("aten.mul.Tensor", {g.op("aten.sub.Tensor", {x, y}), z})});
  expectGeneratedMatchesReference(g.graph, {randomTensor(DType::F32, {4, 1, 5}, 4),
                                            randomTensor(DType::F32, {3, 1}, 5),
                                            randomTensor(DType::F32, {}, 6)});
}

TEST(PointwiseKernel, ReadsPermutedAndSlicedInputsThroughTheirStrides) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F32, {3, 4}), "x");
  Value* y = g.input(tensorType(DType::F32, {3, 4}), "y");
  g.finish({g.op("aten.sub.Tensor", {x, y})});
  Tensor base = randomTensor(DType::F32, {4, 3}, 7);
  Tensor transposed = base.view({3, 4}, {1, 3}, 0);
  Tensor wide = randomTensor(DType::F32, {3, 8}, 8);
  Tensor everyOther = wide.view({3, 4}, {8, 2}, 1);
  expectGeneratedMatchesReference(g.graph, {transposed, everyOther});
}

TEST(PointwiseKernel, ComputesInDoubleForF64) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::F64, {5}), "x");
  g.finish({g.op("aten.mul.Scalar", {g.op("aten.exp", {x})}, scalarAttr("other", 1.0 / 3.0))});
  expectGeneratedMatchesReference(g.graph, {randomTensor(DType::F64, {5}, 9)}, 1e-14);
}

TEST(PointwiseKernel, ConvertsHalfTypesOnLoadAndStore) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    FusedGraph g;
    Value* x = g.input(tensorType(dtype, {33}), "x");
    Value* y = g.input(tensorType(dtype, {33}), "y");
    g.finish({g.op("aten.mul.Tensor", {g.op("aten.tanh", {x}), y})});
    double ulp = dtype == DType::F16 ? 1e-3 : 8e-3;
    expectGeneratedMatchesReference(
        g.graph, {randomTensor(dtype, {33}, 10), randomTensor(dtype, {33}, 11)}, ulp);
  }
}

TEST(PointwiseKernel, IntegerAndBoolOps) {
  FusedGraph g;
  Value* x = g.input(tensorType(DType::I64, {10}), "x");
  Value* y = g.input(tensorType(DType::I64, {10}), "y");
  Value* flag = g.input(tensorType(DType::Bool, {10}), "flag");
  Value* sum = g.op("aten.add.Tensor", {g.op("aten.mul.Tensor", {x, y}), x});
  Value* positive = g.op("aten.gt.Scalar", {sum}, scalarAttr("other", 0.0));
  g.finish({sum, g.op("aten.logical_and", {positive, g.op("aten.logical_not", {flag})})});
  expectGeneratedMatchesReference(g.graph,
                                  {randomTensor(DType::I64, {10}, 12),
                                   randomTensor(DType::I64, {10}, 13),
                                   randomTensor(DType::Bool, {10}, 14)},
                                  0);
}

// The kernel prelude has its own math (no standard header): every function of it, in both
// floating precisions, agrees with the reference, and so do integer abs and pow, and literals of
// infinity.
TEST(PointwiseKernel, EveryMathFunctionOfThePreludeMatchesTheReference) {
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dtype));
    FusedGraph g;
    Value* x = g.input(tensorType(dtype, {37}), "x");
    Value* y = g.input(tensorType(dtype, {37}), "y");
    Value* positive = g.op("aten.add.Scalar", {g.op("aten.abs", {x})}, scalarAttr("other", 0.25));
    std::vector<Value*> outputs;
    for (const char* unary :
         {"aten.exp", "aten.log1p", "aten.expm1", "aten.sin", "aten.cos", "aten.tanh", "aten.erf",
          "aten.floor", "aten.ceil", "aten.round", "aten.abs", "aten.sigmoid", "aten.gelu"})
      outputs.push_back(g.op(unary, {x}));
    for (const char* ofPositive : {"aten.log", "aten.sqrt", "aten.rsqrt"})
      outputs.push_back(g.op(ofPositive, {positive}));
    for (const char* binary : {"aten.fmod.Tensor", "aten.remainder.Tensor"})
      outputs.push_back(g.op(binary, {x, positive}));
    for (const char* mode : {"floor", "trunc"}) {
      AttrMap rounding;
      rounding.set("rounding_mode", std::string(mode));
      outputs.push_back(g.op("aten.div.Tensor_mode", {x, positive}, rounding));
    }
    outputs.push_back(g.op("aten.pow.Tensor_Tensor", {positive, y}));
    outputs.push_back(g.op("aten.pow.Tensor_Scalar", {positive}, scalarAttr("exponent", 2.5)));
    outputs.push_back(g.op("aten.clamp_min", {x}, scalarAttr("min", -INFINITY)));
    g.finish(outputs);
    double tolerance = dtype == DType::F32 ? 1e-5 : 1e-13;
    expectGeneratedMatchesReference(
        g.graph, {randomTensor(dtype, {37}, 40), randomTensor(dtype, {37}, 41)}, tolerance);
  }
  for (DType dtype : {DType::I64, DType::I32, DType::I8}) {
    SCOPED_TRACE(dtypeName(dtype));
    FusedGraph g;
    Value* x = g.input(tensorType(dtype, {37}), "x");
    g.finish(
        {g.op("aten.abs", {x}), g.op("aten.pow.Tensor_Scalar", {x}, scalarAttr("exponent", 2))});
    expectGeneratedMatchesReference(g.graph, {randomTensor(dtype, {37}, 42)}, 0);
  }
}

// Readers of a kernel's source (the viewer's kernels panel) take the first bare "#endif" line as
// the end of the shared prelude: it is the guard's, the last line of the prelude.
TEST(PointwiseKernel, ThePreludeEndsAtItsFirstBareEndif) {
  std::string_view prelude = cpu_codegen::kernelPrelude();
  EXPECT_TRUE(prelude.starts_with("#ifndef LOUPE_KERNEL_PRELUDE\n"));
  EXPECT_EQ(prelude.find("\n#endif\n") + std::string_view("\n#endif\n").size(), prelude.size());
}

TEST(PointwiseKernel, OneSymbolicKernelRunsAtSeveralSizes) {
  FusedGraph g;
  SymExpr s0 = SymExpr::symbol("s0");
  Value* x = g.input(tensorType(DType::F32, {s0, 8}), "x");
  Value* bias = g.input(tensorType(DType::F32, {8}), "bias");
  g.finish({g.op("aten.relu", {g.op("aten.add.Tensor", {x, bias})})});
  for (int64_t rows : {3, 17})
    expectGeneratedMatchesReference(
        g.graph, {randomTensor(DType::F32, {rows, 8}, 15), randomTensor(DType::F32, {8}, 16)});
  std::string source = generateCpuKernel(*g.graph.nodes().front(), "k").source;
  EXPECT_EQ(source.find("17"), std::string::npos) << "sizes must come from the arguments";
}

// A one-loop kernel shares its loop between threads only above the parallel threshold, and
// vectorises at every size: the threshold's `if` names `parallel`, since a bare one applies to
// `simd` too, and below the threshold the loop and its vector math ran scalar (27 ns an element
// against 1.3). 4099 elements are below it, 40000 above: both agree with the reference.
TEST(PointwiseKernel, TheParallelThresholdGatesThreadsAndNeverVectorisation) {
  FusedGraph g;
  SymExpr s0 = SymExpr::symbol("s0");
  Value* x = g.input(tensorType(DType::F32, {s0}), "x");
  g.finish({g.op("aten.mul.Tensor", {g.op("aten.tanh", {x}), g.op("aten.sigmoid", {x})})});
  for (int64_t size : {4099, 40000})
    expectGeneratedMatchesReference(g.graph, {randomTensor(DType::F32, {size}, 19)}, 1e-6);
  std::string source = generateCpuKernel(*g.graph.nodes().front(), "k").source;
  EXPECT_NE(source.find("#pragma omp parallel for simd if (parallel: total > "), std::string::npos)
      << source;
  EXPECT_EQ(source.find("simd if (total"), std::string::npos) << source;
}

TEST(PointwiseKernel, ASingleElementwiseNodeIsAGroupOfOne) {
  Graph graph("single");
  Value* x = graph.addInput(tensorType(DType::F32, {2, 3}), "x");
  Value* y = graph.addInput(tensorType(DType::F32, {3}), "y");
  graph.setOutputs({GraphBuilder(graph, nullptr).op("aten.div.Tensor", {x, y})});
  expectGeneratedMatchesReference(
      graph, {randomTensor(DType::F32, {2, 3}, 17), randomTensor(DType::F32, {3}, 18)});
}

// prims.fma (Dynamo's addcmul with a value: every compiled Adam step) rounds once: where the
// product alone rounds, a * b + c keeps what a multiply then an add would lose. 37 elements: the
// vector loop and its tail; the first three are such cases, exactly as the reference has them.
TEST(PointwiseKernel, FusedMultiplyAddRoundsOnce) {
  const double ulp = std::ldexp(1.0, -23); // one f32 step above 1
  std::vector<double> a(37), b(37), c(37);
  for (int i = 0; i < 37; ++i) {
    a[i] = 1.0 + ulp * (i % 5 + 1);
    b[i] = 1.0 + ulp * (i % 3 + 1);
    c[i] = -(float)(a[i] * b[i]); // minus the product rounded to f32
  }
  Graph graph("fma");
  std::vector<Tensor> inputs = {Tensor::fromDoubles(a, DType::F32, {37}),
                                Tensor::fromDoubles(b, DType::F32, {37}),
                                Tensor::fromDoubles(c, DType::F32, {37})};
  std::vector<Value*> operands;
  for (const char* name : {"a", "b", "c"})
    operands.push_back(graph.addInput(tensorType(DType::F32, {37}), name));
  graph.setOutputs({GraphBuilder(graph, nullptr).op("prims.fma", operands)});
  expectGeneratedMatchesReference(graph, inputs, 0.0);
  // The reference's own value for the first: (1 + u)^2 - (1 + 2u) = u^2, which a multiply and an
  // add would give as 0.
  Executable reference(graph, Plan{}, {});
  EXPECT_EQ(reference.run(inputs)[0].at(0), ulp * ulp);
}

// A broadcast view inside a group (pointwise fusion puts an expand read only by pointwise ops
// there): the kernel reads the unexpanded value, one per channel, on its contiguous path; in a
// reduction group too (the same value summed over the rows).
TEST(PointwiseKernel, ExpandedValuesAreReadUnexpanded) {
  std::unique_ptr<Graph> graph = fusedGraph(R"(
graph @pool_backward(%t: f32[2,5,3,7], %g: f32[2,5,1,1]) -> (f32[2,5,3,7], f32[2,5]) {
  %e = aten.expand(%g) {size=[2, 5, 3, 7]} : f32[2,5,3,7]<strides=[5,1,0,0]>
  %d = aten.div.Scalar(%e) {other=21} : f32[2,5,3,7]
  %y = aten.mul.Tensor(%t, %d) : f32[2,5,3,7]
  %s = aten.sum.dim_IntList(%d) {dim=[2, 3], keepdim=false} : f32[2,5]
  return %y, %s
})");
  size_t groups = 0;
  for (const Node* node : graph->nodes()) {
    if (node->op() != "loupe.fused") continue;
    ++groups;
    for (const auto& input : node->body()->inputs())
      EXPECT_TRUE(input->tensorType().isContiguous())
          << "group input " << input->name() << " is a strided view";
  }
  EXPECT_GE(groups, 1u);
  expectGeneratedMatchesReference(*graph, {randomTensor(DType::F32, {2, 5, 3, 7}, 21),
                                           randomTensor(DType::F32, {2, 5, 1, 1}, 22)});
}

TEST(PointwiseKernel, RefusesGroupsItCannotGenerateAndSaysWhy) {
  FusedGraph g;
  Value* a = g.input(tensorType(DType::F32, {2, 3}), "a");
  Value* b = g.input(tensorType(DType::F32, {3, 4}), "b");
  g.finish({g.op("aten.relu", {g.op("aten.mm", {a, b})})});
  std::string why;
  const Node& fused = *g.graph.nodes().front();
  EXPECT_FALSE(canGenerateCpuKernel(fused, &why));
  EXPECT_NE(why.find("aten.mm"), std::string::npos) << why;
  EXPECT_THROW(generateCpuKernel(fused, "k"), Error);
}

} // namespace
} // namespace loupe::testing
