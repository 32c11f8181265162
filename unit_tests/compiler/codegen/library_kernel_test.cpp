// Library kernels that replace double-precision references: each form runs through the
// executable's Library step in check mode, which measures it against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

struct BatchNormCase {
  std::string op;
  std::optional<bool> training; // absent for the inference-only form
  size_t results;
};

class BatchNormLibraryKernel : public ::testing::TestWithParam<BatchNormCase> {};

TEST_P(BatchNormLibraryKernel, MatchesTheReferenceOnRandomInputs) {
  const BatchNormCase& form = GetParam();
  Graph graph("batch_norm");
  std::vector<Value*> operands = {graph.addInput(tensorType(DType::F32, {4, 3, 5, 6}), "x")};
  for (const char* name : {"weight", "bias", "running_mean", "running_var"})
    operands.push_back(graph.addInput(tensorType(DType::F32, {3}), name));
  AttrMap attrs;
  if (form.training) attrs.set("training", *form.training);
  attrs.set("momentum", 0.1);
  attrs.set("eps", 1e-5);
  std::vector<Value*> results = GraphBuilder(graph, nullptr).opResults(form.op, operands, attrs);
  ASSERT_EQ(results.size(), form.results);
  graph.setOutputs(results);
  Node* node = results[0]->definingNode();
  node->attrs().set("kernel", "bn");
  Plan plan;
  plan.kernels.push_back({.name = "bn", .op = form.op, .kind = KernelKind::Library});
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  options.check = true;
  Executable executable(graph, plan, options);
  Tensor runningVar = randomTensor(DType::F32, {3}, 5);
  for (int64_t c = 0; c < 3; ++c) // a variance is positive
    runningVar.set(c, 0.5 + std::abs(runningVar.at(c)));
  executable.run({randomTensor(DType::F32, {4, 3, 5, 6}, 1), randomTensor(DType::F32, {3}, 2),
                  randomTensor(DType::F32, {3}, 3), randomTensor(DType::F32, {3}, 4), runningVar});
  const KernelStats& stats = executable.stats().kernels.at("bn");
  EXPECT_EQ(stats.implementation, "library:" + form.op);
  EXPECT_EQ(stats.calls, 1);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, BatchNormLibraryKernel,
    ::testing::Values(BatchNormCase{"aten._native_batch_norm_legit_no_training", std::nullopt, 3},
                      BatchNormCase{"aten._native_batch_norm_legit_functional", true, 5},
                      BatchNormCase{"aten._native_batch_norm_legit_functional", false, 5},
                      BatchNormCase{"aten.native_batch_norm", true, 3}),
    [](const auto& info) {
      return std::to_string(info.index) + "_" + std::to_string(info.param.results) + "results";
    });

struct ConvolutionCase {
  std::string name;
  std::vector<int64_t> input, weight;
  int64_t stride, padding, dilation, groups;
  BoolList mask;
};

class ConvolutionBackwardLibraryKernel : public ::testing::TestWithParam<ConvolutionCase> {};

TEST_P(ConvolutionBackwardLibraryKernel, MatchesTheReferenceOnRandomInputs) {
  const ConvolutionCase& form = GetParam();
  AttrMap forward;
  forward.set("stride", IntList{SymExpr(form.stride)});
  forward.set("padding", IntList{SymExpr(form.padding)});
  forward.set("dilation", IntList{SymExpr(form.dilation)});
  forward.set("transposed", false);
  forward.set("output_padding", IntList{SymExpr(0)});
  forward.set("groups", SymExpr(form.groups));
  // The gradient has the forward's output shape.
  auto shapes = singleOp("aten.convolution",
                         {tensorType(DType::F32, Shape(form.input.begin(), form.input.end())),
                          tensorType(DType::F32, Shape(form.weight.begin(), form.weight.end()))},
                         forward);
  std::vector<int64_t> out;
  for (const SymExpr& d : shapes->outputs()[0]->tensorType().shape)
    out.push_back(*d.constant());
  AttrMap attrs = forward;
  attrs.set("bias_sizes", IntList{SymExpr(form.weight[0])});
  attrs.set("output_mask", form.mask);
  // grad_output arrives transposed in memory, as autograd often hands it over.
  std::vector<Tensor> inputs = {transposedRandom(DType::F32, out, 1),
                                randomTensor(DType::F32, form.input, 2),
                                randomTensor(DType::F32, form.weight, 3)};
  auto graph = singleOp("aten.convolution_backward", typesOf(inputs), attrs);
  KernelStats stats = runLibraryKernel(*graph, "aten.convolution_backward", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.convolution_backward");
  EXPECT_LT(stats.maxAbsError, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvolutionBackwardLibraryKernel,
    ::testing::Values(
        ConvolutionCase{"plain", {2, 3, 8, 8}, {4, 3, 3, 3}, 1, 1, 1, 1, {true, true, true}},
        ConvolutionCase{"strided_odd", {3, 4, 9, 7}, {6, 2, 3, 2}, 2, 1, 1, 2, {true, true, true}},
        ConvolutionCase{"dilated", {1, 2, 11, 10}, {3, 2, 3, 3}, 1, 2, 2, 1, {true, true, false}},
        ConvolutionCase{
            "weight_only", {2, 3, 5, 6}, {5, 3, 1, 1}, 1, 0, 1, 1, {false, true, true}}),
    [](const auto& info) { return info.param.name; });

TEST(ConvolutionBackwardLibraryKernelChoice, OneDimensionalConvolutionKeepsTheReference) {
  AttrMap attrs;
  attrs.set("stride", IntList{SymExpr(1)});
  attrs.set("padding", IntList{SymExpr(0)});
  attrs.set("dilation", IntList{SymExpr(1)});
  attrs.set("transposed", false);
  attrs.set("output_padding", IntList{SymExpr(0)});
  attrs.set("groups", SymExpr(1));
  attrs.set("bias_sizes", IntList{SymExpr(2)});
  attrs.set("output_mask", BoolList{true, true, true});
  auto graph = singleOp("aten.convolution_backward",
                        {tensorType(DType::F32, {1, 2, 4}), tensorType(DType::F32, {1, 3, 6}),
                         tensorType(DType::F32, {2, 3, 3})},
                        attrs);
  std::string whyNot;
  EXPECT_FALSE(hasCpuLibraryKernel(*graph->nodes().front(), &whyNot));
  EXPECT_EQ(whyNot, "only 2-D convolution has a library kernel");
}

struct PoolCase {
  std::string name;
  std::vector<int64_t> input;
  int64_t kernel, stride, padding, dilation;
};

class MaxPoolLibraryKernel : public ::testing::TestWithParam<PoolCase> {};

// The forward and its backward in one graph, so the backward scatters through real indices.
TEST_P(MaxPoolLibraryKernel, ForwardAndBackwardMatchTheReference) {
  const PoolCase& form = GetParam();
  AttrMap attrs;
  attrs.set("kernel_size", IntList{SymExpr(form.kernel)});
  attrs.set("stride", IntList{SymExpr(form.stride)});
  attrs.set("padding", IntList{SymExpr(form.padding)});
  attrs.set("dilation", IntList{SymExpr(form.dilation)});
  attrs.set("ceil_mode", false);
  Graph graph("max_pool");
  Value* x =
      graph.addInput(tensorType(DType::F32, Shape(form.input.begin(), form.input.end())), "x");
  GraphBuilder builder(graph, nullptr);
  std::vector<Value*> pooled = builder.opResults("aten.max_pool2d_with_indices", {x}, attrs);
  Value* gradIn = builder.opResults("aten.max_pool2d_with_indices_backward",
                                    {pooled[0], x, pooled[1]}, attrs)[0];
  graph.setOutputs({pooled[0], pooled[1], gradIn});
  // Forward and backward share the stats entry "lib": its error covers both. Overlapping
  // windows sum gradients in f32 where the reference sums in double.
  KernelStats stats = runLibraryKernel(graph, "aten.max_pool2d_with_indices",
                                       {transposedRandom(DType::F32, form.input, 7)});
  EXPECT_EQ(stats.calls, 2);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MaxPoolLibraryKernel,
                         ::testing::Values(PoolCase{"square", {2, 3, 8, 8}, 2, 2, 0, 1},
                                           PoolCase{"padded_odd", {1, 5, 9, 7}, 3, 2, 1, 1},
                                           PoolCase{"dilated_unbatched", {4, 10, 11}, 3, 1, 1, 2}),
                         [](const auto& info) { return info.param.name; });

class CloneLibraryKernel : public ::testing::TestWithParam<DType> {};

TEST_P(CloneLibraryKernel, CopiesStridedInputsExactly) {
  Tensor input = transposedRandom(GetParam(), {3, 5, 7}, 11);
  auto graph = singleOp("aten.clone", typesOf({input}), AttrMap());
  KernelStats stats = runLibraryKernel(*graph, "aten.clone", {input});
  EXPECT_EQ(stats.implementation, "library:aten.clone");
  EXPECT_EQ(stats.maxAbsError, 0.0);
}

INSTANTIATE_TEST_SUITE_P(DTypes, CloneLibraryKernel,
                         ::testing::Values(DType::F32, DType::I64, DType::F16, DType::Bool),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

} // namespace
} // namespace loupe::testing
