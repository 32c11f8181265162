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
  std::vector<int64_t> shape = {4, 3, 5, 6};
};

class BatchNormLibraryKernel : public ::testing::TestWithParam<BatchNormCase> {};

TEST_P(BatchNormLibraryKernel, MatchesTheReferenceOnRandomInputs) {
  const BatchNormCase& form = GetParam();
  int64_t channels = form.shape[1];
  Graph graph("batch_norm");
  std::vector<Value*> operands = {
      graph.addInput(tensorType(DType::F32, Shape(form.shape.begin(), form.shape.end())), "x")};
  // The form without running statistics (instance norm's) has no operands for them.
  bool statsOperands = !form.op.ends_with(".no_stats");
  for (const char* name : {"weight", "bias", "running_mean", "running_var"})
    if (statsOperands || name[0] != 'r')
      operands.push_back(graph.addInput(tensorType(DType::F32, {channels}), name));
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
  Tensor runningVar = randomTensor(DType::F32, {channels}, 5);
  for (int64_t c = 0; c < channels; ++c) // a variance is positive
    runningVar.set(c, 0.5 + std::abs(runningVar.at(c)));
  std::vector<Tensor> inputs = {randomTensor(DType::F32, form.shape, 1),
                                randomTensor(DType::F32, {channels}, 2),
                                randomTensor(DType::F32, {channels}, 3)};
  if (statsOperands) {
    inputs.push_back(randomTensor(DType::F32, {channels}, 4));
    inputs.push_back(runningVar);
  }
  executable.run(inputs);
  const KernelStats& stats = executable.stats().kernels.at("bn");
  EXPECT_EQ(stats.implementation, "library:" + form.op);
  EXPECT_EQ(stats.calls, 1);
  EXPECT_LT(stats.maxAbsError, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, BatchNormLibraryKernel,
    ::testing::Values(
        BatchNormCase{"aten._native_batch_norm_legit_no_training", std::nullopt, 3},
        BatchNormCase{"aten._native_batch_norm_legit_functional", true, 5},
        BatchNormCase{"aten._native_batch_norm_legit_functional", false, 5},
        BatchNormCase{"aten.native_batch_norm", true, 3},
        // Instance norm's form (torch's over [1, N*C, H, W]), and BatchNorm without running
        // statistics: the batch's own, in training and in eval mode alike.
        BatchNormCase{"aten._native_batch_norm_legit.no_stats", true, 3, {1, 12, 7, 9}},
        // Enough work to split the channels (an odd count) across the library's
        // threads; planes of an odd size, no multiple of any vector width.
        BatchNormCase{"aten._native_batch_norm_legit_functional", true, 5, {6, 7, 33, 29}},
        BatchNormCase{
            "aten._native_batch_norm_legit_no_training", std::nullopt, 3, {6, 7, 33, 29}}),
    [](const auto& info) {
      return std::to_string(info.index) + "_" + std::to_string(info.param.results) + "results";
    });

class CloneLibraryKernel : public ::testing::TestWithParam<DType> {};

TEST_P(CloneLibraryKernel, CopiesStridedInputsExactly) {
  Tensor input = transposedRandom(GetParam(), {3, 5, 7}, 11);
  auto graph = singleOp("aten.clone", typesOf({input}), AttrMap());
  KernelStats stats = runLibraryKernel(*graph, "aten.clone", {input});
  EXPECT_EQ(stats.implementation, "library:aten.clone");
  EXPECT_EQ(stats.maxAbsError, 0.0);
}

// aten.copy (a functionalized copy_: an optimizer step's parameter updates) of a source of the
// result's shape and dtype is the same copy; one that broadcasts runs the reference, and says so.
TEST_P(CloneLibraryKernel, CopyOfASameShapedSourceIsTheCopyKernel) {
  Tensor self = randomTensor(GetParam(), {3, 5, 7}, 12),
         src = transposedRandom(GetParam(), {3, 5, 7}, 13);
  auto graph = singleOp("aten.copy", typesOf({self, src}), AttrMap());
  KernelStats stats = runLibraryKernel(*graph, "aten.copy", {self, src});
  EXPECT_EQ(stats.implementation, "library:aten.copy");
  EXPECT_EQ(stats.maxAbsError, 0.0);
  auto broadcast =
      singleOp("aten.copy", typesOf({self, randomTensor(GetParam(), {7}, 14)}), AttrMap());
  std::string whyNot;
  EXPECT_FALSE(hasCpuLibraryKernel(*broadcast->nodes().front(), &whyNot));
  EXPECT_EQ(whyNot, "aten.copy broadcasts or converts its source");
}

INSTANTIATE_TEST_SUITE_P(DTypes, CloneLibraryKernel,
                         ::testing::Values(DType::F32, DType::I64, DType::F16, DType::Bool),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

} // namespace
} // namespace loupe::testing
