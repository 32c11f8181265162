// Gathers read in the generated kernel that consumes them (compiler/ops/in_place_gather.h):
// bilinear upsampling's four gathers and their weighted sum as one loop, against the reference,
// through a strided input with a symbolic gathered size; negative indices counted from the end
// and indices out of range clamped, constant ones within range read as they are; what generated
// code refuses, with the reason.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/ir/parser.h"
#include "compiler/pass/fusion_group.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"
#include "unit_tests/compiler/codegen/cuda/fused_graph.h"

namespace loupe::testing {
namespace {

Tensor indices(const std::vector<double>& values, std::vector<int64_t> shape,
               DType dtype = DType::I64) {
  return Tensor::fromDoubles(values, dtype, std::move(shape));
}

TEST(GatherKernel, BilinearUpsamplingIsOneLoopMatchingTheReference) {
  std::unique_ptr<Graph> graph = fusedGraph(kBilinearUpsamplingGraph);
  const Node* fused = onlyFusedNode(*graph);
  ASSERT_NE(fused, nullptr);
  const auto& inner = fused->body()->nodes();
  EXPECT_EQ(std::count_if(inner.begin(), inner.end(),
                          [](const Node* n) { return n->op() == "aten._unsafe_index.Tensor"; }),
            4);
  EXPECT_EQ(fused->numResults(), 1u); // no gather is written out
  std::string why;
  ASSERT_TRUE(canGenerateCpuKernel(*fused, &why)) << why;
  for (int64_t height : {4, 6}) {
    SCOPED_TRACE("height " + std::to_string(height));
    std::vector<double> h0, h1, w0, w1;
    for (int64_t i = 0; i < 8; ++i) {
      h0.push_back(static_cast<double>(i * height / 8));
      h1.push_back(static_cast<double>(std::min<int64_t>(i * height / 8 + 1, height - 1)));
    }
    for (int64_t j = 0; j < 10; ++j) {
      w0.push_back(static_cast<double>(j / 2));
      w1.push_back(static_cast<double>(std::min<int64_t>(j / 2 + 1, 4)));
    }
    expectGeneratedMatchesReference(
        *graph, {transposedRandom(DType::F32, {2, 3, height, 5}, 1), indices(h0, {8, 1}),
                 indices(h1, {8, 1}), indices(w0, {10}, DType::I32), indices(w1, {10}, DType::I32),
                 randomTensor(DType::F32, {8, 1}, 2), randomTensor(DType::F32, {10}, 3)});
  }
}

// The reference checks every index (an error out of range); the kernel cannot raise, so it
// counts a negative index from the end and clamps what is still out of range, never reading
// outside its input.
TEST(GatherKernel, NegativeIndicesCountFromTheEndAndOutOfRangeOnesAreClamped) {
  std::unique_ptr<Graph> graph = fusedGraph(R"(
graph @clamped(%x: f32[3,4], %i: i64[6], %z: f32[3,6]) -> (f32[3,6]) {
  %g = aten._unsafe_index.Tensor(%x, none, %i) : f32[3,6]
  %y = aten.add.Tensor(%g, %z) {alpha=1} : f32[3,6]
  return %y
})",
                                            {"pointwise-fusion"});
  ASSERT_NE(onlyFusedNode(*graph), nullptr);
  Plan plan = generatedPlan(*graph);
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Executable executable(*graph, plan, options);
  Tensor x = transposedRandom(DType::F32, {3, 4}, 4);
  Tensor zeros = Tensor::fromDoubles(std::vector<double>(18, 0.0), DType::F32, {3, 6});
  Tensor y = executable.run({x, indices({-1, -4, 2, 9, -9, 0}, {6}), zeros})[0];
  const int64_t expectedColumn[] = {3, 0, 2, 3, 0, 0};
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_EQ(y.at(row * 6 + j), x.at(row * 4 + expectedColumn[j]))
          << "row " << row << " column " << j;
}

// Constant indices (what constant folding leaves of upsampling's index arithmetic) that are all
// within their dim are read as they are: no clamp, which more than doubled the time of a
// bilinear upsampling's loop, and match the reference. One constant out of range, or an index
// the kernel reads from a graph input, keeps the clamp.
TEST(GatherKernel, ConstantIndicesWithinTheirDimAreReadWithoutAClamp) {
  auto lir = [](const std::string& data) {
    return R"(
graph @constant_indices(%x: f32[3,4], %z: f32[3,6], %j: i64[6]) -> (f32[3,6], f32[3,6]) {
  %i = loupe.constant() {data=)" +
           data + R"(, dtype=i64, shape=[6]} : i64[6]
  %g = aten._unsafe_index.Tensor(%x, none, %i) : f32[3,6]
  %y = aten.add.Tensor(%g, %z) {alpha=1} : f32[3,6]
  %h = aten._unsafe_index.Tensor(%x, none, %j) : f32[3,6]
  %w = aten.add.Tensor(%h, %z) {alpha=1} : f32[3,6]
  return %y, %w
})";
  };
  for (auto [data, inBounds] :
       {std::pair<std::string, bool>{"[3.0, 0.0, 2.0, 3.0, 1.0, 0.0]", true},
        {"[3.0, 0.0, 2.0, 4.0, 1.0, 0.0]", false},
        {"[3.0, 0.0, -1.0, 3.0, 1.0, 0.0]", false}}) {
    SCOPED_TRACE(data);
    std::unique_ptr<Graph> graph = fusedGraph(lir(data), {"pointwise-fusion"});
    std::vector<const Node*> fused;
    for (const Node* node : graph->nodes())
      if (node->op() == "loupe.fused") fused.push_back(node);
    ASSERT_EQ(fused.size(), 2u);
    for (const Node* group : fused) {
      // The group reading %i has it as an operand the constant defines; the other reads %j, a
      // graph input, as all its operands are.
      bool constantIndex =
          std::any_of(group->operands().begin(), group->operands().end(),
                      [](const Value* operand) { return operand->definingNode() != nullptr; });
      std::string source = generateCpuKernel(*group, "k").source;
      bool clamps = source.find("loupe_gather_index(static_cast") != std::string::npos;
      EXPECT_EQ(clamps, !(constantIndex && inBounds)) << source;
    }
    // The reference raises on an index out of range (the clamping test above covers those).
    if (inBounds)
      expectGeneratedMatchesReference(*graph, {transposedRandom(DType::F32, {3, 4}, 5),
                                               randomTensor(DType::F32, {3, 6}, 6),
                                               indices({1, 3, 0, 2, 2, 1}, {6})});
  }
}

TEST(GatherKernel, RefusesAGatherOfAValueTheGroupComputesOrReadsInPlace) {
  auto check = [](const std::string& lir, const std::string& expected) {
    std::unique_ptr<Graph> graph = parseGraph(lir);
    // The fusion pass keeps such groups apart; built by hand they are refused with the reason.
    std::vector<Node*> members = graph->nodes();
    Node* fused = createFusedGroup(members, "pointwise");
    std::string why;
    EXPECT_FALSE(canGenerateCpuKernel(*fused, &why));
    EXPECT_NE(why.find(expected), std::string::npos) << why;
  };
  check(R"(
graph @computed(%x: f32[3,4], %i: i64[4]) -> (f32[3,4]) {
  %r = aten.relu(%x) : f32[3,4]
  %g = aten._unsafe_index.Tensor(%r, none, %i) : f32[3,4]
  return %g
})",
        "reads %r, which the group computes");
  check(R"(
graph @in_place(%x: f32[3,4], %i: i64[4]) -> (f32[3,4]) {
  %g = aten._unsafe_index.Tensor(%x, none, %i) : f32[3,4]
  %y = aten.add.Tensor(%g, %x) {alpha=1} : f32[3,4]
  return %y
})",
        "is gathered from and also read in place");
}

} // namespace
} // namespace loupe::testing
