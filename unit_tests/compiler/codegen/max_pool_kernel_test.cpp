// 2-D max pooling's library kernels (forward with torch's indices, and the backward through
// them) against the float64 reference: windows, padding, dilation, ceil mode, odd sizes, inputs
// large enough to be split across threads, and torch's rules for ties, -inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

struct PoolCase {
  std::string name;
  std::vector<int64_t> input;
  int64_t kernel, stride, padding, dilation;
  bool ceilMode = false;
};

AttrMap poolAttrs(const PoolCase& form) {
  AttrMap attrs;
  attrs.set("kernel_size", IntList{SymExpr(form.kernel)});
  attrs.set("stride", IntList{SymExpr(form.stride)});
  attrs.set("padding", IntList{SymExpr(form.padding)});
  attrs.set("dilation", IntList{SymExpr(form.dilation)});
  attrs.set("ceil_mode", form.ceilMode);
  return attrs;
}

// The forward and its backward in one graph, so the backward scatters through real indices.
std::unique_ptr<Graph> poolGraph(const PoolCase& form, DType dtype) {
  auto graph = std::make_unique<Graph>("max_pool");
  Value* x = graph->addInput(tensorType(dtype, Shape(form.input.begin(), form.input.end())), "x");
  GraphBuilder builder(*graph, nullptr);
  AttrMap attrs = poolAttrs(form);
  std::vector<Value*> pooled = builder.opResults("aten.max_pool2d_with_indices", {x}, attrs);
  Value* gradIn = builder.opResults("aten.max_pool2d_with_indices_backward",
                                    {pooled[0], x, pooled[1]}, attrs)[0];
  graph->setOutputs({pooled[0], pooled[1], gradIn});
  return graph;
}

class MaxPoolLibraryKernel : public ::testing::TestWithParam<std::tuple<PoolCase, DType>> {};

TEST_P(MaxPoolLibraryKernel, ForwardAndBackwardMatchTheReference) {
  const auto& [form, dtype] = GetParam();
  auto graph = poolGraph(form, dtype);
  // Forward and backward share the stats entry "lib": its error covers both, indices included.
  // Overlapping windows sum gradients in the input's precision where the reference sums in
  // double.
  KernelStats stats = runLibraryKernel(*graph, "aten.max_pool2d_with_indices",
                                       {transposedRandom(dtype, form.input, 7)});
  EXPECT_EQ(stats.calls, 2);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

// An inference graph reads only the maxima: the kernel leaves the indices out, and says so.
TEST_P(MaxPoolLibraryKernel, MaximaAloneMatchTheReferenceWhenNothingReadsTheIndices) {
  const auto& [form, dtype] = GetParam();
  auto graph = std::make_unique<Graph>("max_pool_values");
  Value* x = graph->addInput(tensorType(dtype, Shape(form.input.begin(), form.input.end())), "x");
  GraphBuilder builder(*graph, nullptr);
  std::vector<Value*> pooled =
      builder.opResults("aten.max_pool2d_with_indices", {x}, poolAttrs(form));
  graph->setOutputs({pooled[0]});
  std::optional<CpuLibraryKernel> kernel =
      findCpuLibraryKernel(*pooled[0]->definingNode(), nullptr);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->implementation, "max-pool-values:" + std::string(dtypeName(dtype)));
  KernelStats stats = runLibraryKernel(*graph, "aten.max_pool2d_with_indices",
                                       {transposedRandom(dtype, form.input, 7)});
  EXPECT_EQ(stats.calls, 1);
  EXPECT_EQ(stats.maxAbsError, 0); // a maximum is one of the inputs, exactly
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MaxPoolLibraryKernel,
    ::testing::Combine(
        ::testing::Values(PoolCase{"square", {2, 3, 8, 8}, 2, 2, 0, 1},
                          PoolCase{"padded_odd", {1, 5, 9, 7}, 3, 2, 1, 1},
                          PoolCase{"dilated_unbatched", {4, 10, 11}, 3, 1, 1, 2},
                          PoolCase{"ceil_mode", {2, 3, 10, 9}, 3, 2, 1, 1, true},
                          PoolCase{"wide_padded_dilated", {1, 2, 13, 17}, 5, 3, 2, 2, true},
                          // Enough windows to be split across the library's threads.
                          PoolCase{"threaded", {4, 16, 33, 31}, 3, 2, 1, 1}),
        ::testing::Values(DType::F32, DType::F64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtypeName(std::get<1>(info.param)));
    });

// Each window of a 4x6 plane, 2x2 with stride 2, holds one of torch's rules: the first of equal
// maxima wins; an all -inf window reports its first position; NaN wins, and a later NaN over an
// earlier one.
TEST(MaxPoolLibraryKernelRules, TiesNegativeInfinityAndNanFollowTorch) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::fromDoubles({1, 1, -inf, -inf, nan, 2,   //
                                  0, 1, -inf, -inf, 3,   nan, //
                                  5, 5, 4,    7,    2,   2,   //
                                  5, 5, 7,    1,    2,   2},
                                 DType::F32, {1, 1, 4, 6});
  PoolCase form{"", {1, 1, 4, 6}, 2, 2, 0, 1};
  auto graph = poolGraph(form, DType::F32);
  for (Node* node : graph->nodes())
    node->attrs().set("kernel", "lib");
  Plan plan;
  plan.kernels.push_back(
      {.name = "lib", .op = "aten.max_pool2d_with_indices", .kind = KernelKind::Library});
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  Executable executable(*graph, plan, options);
  std::vector<Tensor> outputs = executable.run({x});
  std::vector<double> values = outputs[0].toDoubles(), indices = outputs[1].toDoubles();
  EXPECT_EQ(indices, (std::vector<double>{0, 2, 11, 12, 15, 16}));
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(values[1], -inf);
  EXPECT_TRUE(std::isnan(values[2]));
  EXPECT_EQ((std::vector<double>{values[3], values[4], values[5]}), (std::vector<double>{5, 7, 2}));
  // Both steps share the stats entry "lib", which names the last one's implementation.
  EXPECT_TRUE(executable.stats().kernels.at("lib").implementation.starts_with("library:"));
}

} // namespace
} // namespace loupe::testing
