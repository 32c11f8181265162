// 2-D average pooling's and adaptive average pooling's library kernels (forward and backward)
// against the float64 reference: windows, padding with and without count_include_pad,
// divisor_override, ceil mode (a last window that starts in the padding), odd sizes, unbatched
// inputs, strided inputs, and sizes large enough to be split across the library's threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

struct AvgPoolCase {
  std::string name;
  std::vector<int64_t> input;
  int64_t kernel, stride, padding;
  bool ceilMode = false, countIncludePad = true;
  std::optional<int64_t> divisorOverride = std::nullopt;
};

AttrMap avgPoolAttrs(const AvgPoolCase& form) {
  AttrMap attrs;
  attrs.set("kernel_size", IntList{SymExpr(form.kernel)});
  attrs.set("stride", IntList{SymExpr(form.stride)});
  attrs.set("padding", IntList{SymExpr(form.padding)});
  attrs.set("ceil_mode", form.ceilMode);
  attrs.set("count_include_pad", form.countIncludePad);
  if (form.divisorOverride)
    attrs.set("divisor_override", *form.divisorOverride);
  else
    attrs.set("divisor_override", NoneAttr{});
  return attrs;
}

// The forward and its backward in one graph (the backward given the forward's result as its
// gradient), both run as the library kernel "lib".
std::unique_ptr<Graph> forwardAndBackward(const std::string& forward, const std::string& backward,
                                          const std::vector<int64_t>& input, DType dtype,
                                          const AttrMap& forwardAttrs,
                                          const AttrMap& backwardAttrs) {
  auto graph = std::make_unique<Graph>("avg_pool");
  Value* x = graph->addInput(tensorType(dtype, Shape(input.begin(), input.end())), "x");
  GraphBuilder builder(*graph, nullptr);
  Value* pooled = builder.opResults(forward, {x}, forwardAttrs)[0];
  Value* gradIn = builder.opResults(backward, {pooled, x}, backwardAttrs)[0];
  graph->setOutputs({pooled, gradIn});
  return graph;
}

class AvgPoolLibraryKernel : public ::testing::TestWithParam<std::tuple<AvgPoolCase, DType>> {};

TEST_P(AvgPoolLibraryKernel, ForwardAndBackwardMatchTheReference) {
  const auto& [form, dtype] = GetParam();
  AttrMap attrs = avgPoolAttrs(form);
  auto graph = forwardAndBackward("aten.avg_pool2d", "aten.avg_pool2d_backward", form.input, dtype,
                                  attrs, attrs);
  std::optional<CpuLibraryKernel> kernel =
      findCpuLibraryKernel(*graph->outputs()[0]->definingNode(), nullptr);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->implementation, "avg-pool:" + std::string(dtypeName(dtype)));
  KernelStats stats =
      runLibraryKernel(*graph, "aten.avg_pool2d", {transposedRandom(dtype, form.input, 11)});
  EXPECT_EQ(stats.calls, 2);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AvgPoolLibraryKernel,
    ::testing::Combine(
        ::testing::Values(AvgPoolCase{"square", {2, 3, 8, 8}, 2, 2, 0},
                          AvgPoolCase{"padded_odd", {1, 5, 9, 7}, 3, 2, 1},
                          AvgPoolCase{"padded_excluded", {1, 5, 9, 7}, 3, 2, 1, false, false},
                          AvgPoolCase{"overlapping_unbatched", {4, 10, 11}, 3, 1, 1},
                          AvgPoolCase{"ceil_mode", {2, 3, 10, 9}, 3, 2, 1, true},
                          AvgPoolCase{"ceil_mode_excluded", {2, 3, 10, 9}, 2, 2, 1, true, false},
                          AvgPoolCase{"divisor_override", {1, 2, 7, 7}, 3, 2, 1, false, true, 5},
                          // Enough windows to be split across the library's threads.
                          AvgPoolCase{"threaded", {4, 16, 33, 31}, 3, 2, 1}),
        ::testing::Values(DType::F32, DType::F64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtypeName(std::get<1>(info.param)));
    });

struct AdaptiveCase {
  std::string name;
  std::vector<int64_t> input;
  int64_t outH, outW;
};

class AdaptiveAvgPoolLibraryKernel
    : public ::testing::TestWithParam<std::tuple<AdaptiveCase, DType>> {};

TEST_P(AdaptiveAvgPoolLibraryKernel, ForwardAndBackwardMatchTheReference) {
  const auto& [form, dtype] = GetParam();
  AttrMap attrs;
  attrs.set("output_size", IntList{SymExpr(form.outH), SymExpr(form.outW)});
  auto graph = forwardAndBackward("aten._adaptive_avg_pool2d", "aten._adaptive_avg_pool2d_backward",
                                  form.input, dtype, attrs, AttrMap{});
  KernelStats stats = runLibraryKernel(*graph, "aten._adaptive_avg_pool2d",
                                       {transposedRandom(dtype, form.input, 13)});
  EXPECT_EQ(stats.calls, 2);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AdaptiveAvgPoolLibraryKernel,
    ::testing::Combine(::testing::Values(AdaptiveCase{"global", {2, 6, 9, 7}, 1, 1},
                                         AdaptiveCase{"uneven_cells", {1, 3, 10, 7}, 3, 4},
                                         AdaptiveCase{"upsampling", {3, 4, 5}, 7, 6},
                                         AdaptiveCase{"threaded", {8, 32, 28, 28}, 7, 7}),
                       ::testing::Values(DType::F32, DType::F64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtypeName(std::get<1>(info.param)));
    });

} // namespace
} // namespace loupe::testing
