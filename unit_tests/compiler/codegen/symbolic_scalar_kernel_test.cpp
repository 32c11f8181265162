// Generated kernels whose ops have symbolic attributes (the divisor of a mean over a symbolic
// dim, a symbolic alpha): one compiled kernel serves every binding, the values arriving at run
// time, and it agrees with the reference at each binding.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/ir/parser.h"
#include "compiler/ops/pointwise.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

using InputsFn = std::function<std::vector<Tensor>(int64_t s0)>;

// Runs `lir` at each binding of s0 through one executable with generated kernels and one with
// reference implementations, expecting the same outputs and every fused group generated.
void expectGeneratedMatchesReferenceAt(const std::string& lir, const std::vector<int64_t>& s0s,
                                       const InputsFn& inputsFor) {
  std::unique_ptr<Graph> graph = parseGraph(lir);
  Plan plan = generatedPlan(*graph);
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Executable generated(*graph, plan, options);
  Executable reference(*graph, Plan{}, options);
  for (int64_t s0 : s0s) {
    SCOPED_TRACE("s0 = " + std::to_string(s0));
    std::vector<Tensor> inputs = inputsFor(s0);
    std::vector<Tensor> actual = generated.run(inputs), expected = reference.run(inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      ASSERT_EQ(actual[i].shape(), expected[i].shape()) << "output " << i;
      for (int64_t j = 0; j < expected[i].numel(); ++j)
        EXPECT_NEAR(actual[i].at(j), expected[i].at(j), 1e-5 * (1 + std::fabs(expected[i].at(j))))
            << "output " << i << " element " << j;
    }
  }
  for (const KernelChoice& choice : plan.kernels) {
    const KernelStats& stats = generated.stats().kernels.at(choice.name);
    EXPECT_EQ(stats.implementation, "generated:" + choice.op);
    EXPECT_EQ(stats.calls, static_cast<int64_t>(s0s.size()));
  }
}

TEST(SymbolicScalarKernel, MeanOverASymbolicDimDividesByTheBoundCount) {
  // What the decomposition of x.mean() makes of a [s0,24] input.
  expectGeneratedMatchesReferenceAt(R"(graph @mean(%x: f32[s0,24]) -> (f32[]) {
  %m = loupe.fused(%x) {kind="reduction"} : f32[] {
    ^(%a: f32[s0,24]):
      %s = aten.sum.dim_IntList(%a) {dim=[0,1], keepdim=false} : f32[]
      %d = aten.div.Scalar(%s) {other=24*s0} : f32[]
      yield %d
  }
  return %m
})",
                                    {1, 3, 8, 3}, [](int64_t s0) {
                                      return std::vector{randomTensor(DType::F32, {s0, 24}, 1)};
                                    });
}

TEST(SymbolicScalarKernel, FloatAndIntegerOpsShareAndCombineSymbolicValues) {
  // s0 appears in three attributes (one run-time scalar), floor division follows Python.
  expectGeneratedMatchesReferenceAt(
      R"(graph @scale(%x: f32[s0,3], %i: i64[s0,3]) -> (f32[s0,3], i64[s0,3]) {
  %y, %j = loupe.fused(%x, %i) {kind="pointwise"} : (f32[s0,3], i64[s0,3]) {
    ^(%a: f32[s0,3], %b: i64[s0,3]):
      %c = aten.mul.Scalar(%a) {other=2*s0 + 1} : f32[s0,3]
      %d = aten.add.Tensor(%c, %a) {alpha=s0} : f32[s0,3]
      %e = aten.mul.Scalar(%b) {other=s0} : i64[s0,3]
      %f = aten.sub.Scalar(%e) {other=(s0 - 7)//2, alpha=1} : i64[s0,3]
      yield %d, %f
  }
  return %y, %j
})",
      {2, 5, 2}, [](int64_t s0) {
        return std::vector{randomTensor(DType::F32, {s0, 3}, 2),
                           randomTensor(DType::I64, {s0, 3}, 3)};
      });
}

// An op whose scalar expression is worked out from an attribute's value while generating
// cannot take that value at run time; one that spells the value as a literal can.
TEST(SymbolicScalarKernel, OpsThatComputeWithTheAttributeWhileGeneratingAreRefused) {
  OpRegistry registry;
  auto addScale = [&](const std::string& name, ScalarEmitFn emit) {
    OpInfo info;
    info.name = name;
    info.kind = OpKind::Elementwise;
    info.operands = {{"self"}};
    info.attrs = {{"k", std::nullopt}};
    info.emitScalar = std::move(emit);
    registry.add(std::move(info));
  };
  addScale("test.scale",
           [](const std::vector<std::string>& args, const AttrMap& attrs, DType compute) {
             return expandScalarTemplate("($0 * @k)", args, compute, attrs);
           });
  addScale("test.inverse_scale",
           [](const std::vector<std::string>& args, const AttrMap& attrs, DType) {
             return "(" + args[0] + " * " + formatFloat(1.0 / attrs.getFloat("k")) + ")";
           });

  Graph graph("scales");
  TensorType type = tensorType(DType::F32, {SymExpr::symbol("s0")});
  Value* x = graph.addInput(type, "x");
  AttrMap attrs;
  attrs.set("k", SymExpr::symbol("s0") * 2);
  Node* scale = graph.createNode("test.scale", {x}, {type}, attrs);
  Node* inverse = graph.createNode("test.inverse_scale", {x}, {type}, attrs);

  std::string why;
  EXPECT_TRUE(canGenerateCpuKernel(*scale, &why, registry)) << why;
  EXPECT_FALSE(canGenerateCpuKernel(*inverse, &why, registry));
  EXPECT_NE(why.find("test.inverse_scale cannot take its symbolic attribute k at run time"),
            std::string::npos)
      << why;
}

} // namespace
} // namespace loupe::testing
