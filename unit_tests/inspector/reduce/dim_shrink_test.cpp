// The reducer's dims phase: each concrete input dim value is one variable, shrunk everywhere it
// appears (a matmul's K in both operands), in the attributes that hold sizes too; symbolic dims
// stay; the inputs are prefix slices of the given ones; a size the divergence needs is kept; a
// product of dims (a flattening view) keeps its dims.

#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/verifier.h"
#include "inspector/reduce/dim_shrink.h"

namespace loupe {
namespace {

std::vector<Tensor> randomInputs(const Graph& graph, int64_t s0 = 3) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(0.1, 0.9);
  std::vector<Tensor> inputs;
  for (const auto& input : graph.inputs()) {
    Tensor t = Tensor::empty(DType::F32, evaluateShape(input->tensorType().shape, {{"s0", s0}}));
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, dist(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Every candidate counts as diverging unless `needs` says otherwise; the candidates seen.
struct Predicate {
  std::function<bool(const Graph&)> needs = [](const Graph&) { return true; };
  int trials = 0;
  DimShrinkOptions options() {
    DimShrinkOptions options;
    options.diverges = [this](std::unique_ptr<Graph> graph, const std::vector<Tensor>&) {
      ++trials;
      verify(*graph);
      return needs(*graph);
    };
    options.outOfTime = [] { return false; };
    return options;
  }
};

constexpr const char* kMatmul = R"(graph @mm(%x: f32[s0,12], %w: f32[12,10]) -> (f32[s0,10]) {
  %p = aten.mm(%x, %w) : f32[s0,10]
  return %p
})";

TEST(DimShrink, TiedDimsShrinkTogetherAndSymbolicDimsStay) {
  auto graph = parseGraph(kMatmul);
  EXPECT_EQ(dimVariables(*graph), (std::vector<int64_t>{10, 12}));
  auto inputs = randomInputs(*graph);
  Predicate predicate;
  ShrunkDims shrunk = shrinkDims(*graph, inputs, predicate.options());
  EXPECT_EQ(shrunk.dims, (std::vector<DimChange>{{10, 1}, {12, 1}}));
  EXPECT_EQ(describeDimChanges(shrunk.dims), "10 -> 1, 12 -> 1");
  verify(*shrunk.graph);
  EXPECT_EQ(toText(*shrunk.graph).substr(0, 55),
            "graph @mm(%x: f32[s0,1], %w: f32[1,1]) -> (f32[s0,1]) {")
      << toText(*shrunk.graph);
  // The inputs are the first elements of the given ones; the symbolic batch keeps its size.
  ASSERT_EQ(shrunk.inputs.size(), 2u);
  EXPECT_EQ(shrunk.inputs[0].shape(), (std::vector<int64_t>{3, 1}));
  for (int64_t row = 0; row < 3; ++row)
    EXPECT_EQ(shrunk.inputs[0].at(row), inputs[0].at(row * 12));
  EXPECT_EQ(shrunk.inputs[1].at(0), inputs[1].at(0));
}

TEST(DimShrink, ASizeTheDivergenceNeedsIsKept) {
  auto graph = parseGraph(kMatmul);
  Predicate predicate;
  predicate.needs = [](const Graph& candidate) {
    return *candidate.input(1)->tensorType().shape[0].constant() >= 5; // K
  };
  ShrunkDims shrunk = shrinkDims(*graph, randomInputs(*graph), predicate.options());
  // K tries 1, 2 and 3 and stays at 6 (half of 12); N goes to 1.
  EXPECT_EQ(shrunk.dims, (std::vector<DimChange>{{10, 1}, {12, 6}}));
  EXPECT_EQ(shrunk.graph->input(0)->tensorType().shape[1], SymExpr(6));
}

TEST(DimShrink, SizeAttributesFollowTheirDims) {
  auto graph = parseGraph(R"(graph @bias(%x: f32[4,6], %b: f32[6]) -> (f32[4,6]) {
  %e = aten.expand(%b) {size=[4, 6]} : f32[4,6]<strides=[0,1]>
  %y = aten.add.Tensor(%x, %e) : f32[4,6]
  %s = aten.slice.Tensor(%y) {dim=1, start=0, end=6} : f32[4,6]
  return %s
})");
  Predicate predicate;
  ShrunkDims shrunk = shrinkDims(*graph, randomInputs(*graph), predicate.options());
  EXPECT_EQ(describeDimChanges(shrunk.dims), "4 -> 1, 6 -> 1");
  std::string text = toText(*shrunk.graph);
  EXPECT_NE(text.find("aten.expand(%b) {size=[1, 1]} : f32[1,1]"), std::string::npos) << text;
  EXPECT_NE(text.find("{dim=1, end=1, start=0} : f32[1,1]"), std::string::npos) << text;
}

TEST(DimShrink, AProductOfDimsKeepsItsDims) {
  auto graph = parseGraph(R"(graph @flat(%x: f32[4,6]) -> (f32[24]) {
  %v = aten.view(%x) {size=[24]} : f32[24]
  return %v
})");
  Predicate predicate;
  ShrunkDims shrunk = shrinkDims(*graph, randomInputs(*graph), predicate.options());
  EXPECT_EQ(describeDimChanges(shrunk.dims), "");
  EXPECT_EQ(predicate.trials, 0); // no candidate verified: none was checked
  EXPECT_EQ(toText(*shrunk.graph), toText(*graph));
}

TEST(DimShrink, AnInputWithStridesOfItsOwnPinsItsDims) {
  auto graph = parseGraph(R"(graph @t(%x: f32[4,6]<strides=[1,4]>, %y: f32[4,6]) -> (f32[4,6]) {
  %z = aten.add.Tensor(%x, %y) : f32[4,6]
  return %z
})");
  EXPECT_TRUE(dimVariables(*graph).empty());
}

} // namespace
} // namespace loupe
