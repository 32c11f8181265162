// Training dropout's library kernel: the reference's masks exactly (one stream of draws, replayed
// from the same position, across the stream's 2^32 boundary too), the same masks at any thread
// count, the rate and scaling of kept elements, NaN for a dropped infinity as in torch, masks
// independent at any distance, a fresh mask per call, and dropout off as the identity.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ops/dropout_mask.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

std::unique_ptr<Graph> dropoutGraph(DType dtype, const std::vector<int64_t>& shape, double p,
                                    bool train = true) {
  auto graph = std::make_unique<Graph>("dropout");
  Value* x = graph->addInput(tensorType(dtype, Shape(shape.begin(), shape.end())), "x");
  GraphBuilder builder(*graph, nullptr);
  AttrMap attrs;
  attrs.set("p", p);
  attrs.set("train", train);
  std::vector<Value*> results = builder.opResults("aten.native_dropout", {x}, attrs);
  graph->setOutputs({results[0], results[1]});
  return graph;
}

// Runs `graph` once from stream position `start` (0 unless given): as the library kernel, or
// (`library` false) as the reference.
std::vector<Tensor> runFromStart(Graph& graph, const Tensor& input, bool library,
                                 uint64_t start = 0) {
  ExecutableOptions options;
  options.compiler.cacheDir = testCacheDir();
  std::unique_ptr<Executable> executable =
      library ? libraryExecutable(graph, "aten.native_dropout")
              : std::make_unique<Executable>(graph, Plan{}, options);
  resetDropoutDraws(start);
  std::vector<Tensor> outputs = executable->run({input});
  if (library) {
    EXPECT_EQ(executable->stats().kernels.at("lib").implementation, "library:aten.native_dropout");
  }
  return outputs;
}

class DropoutLibraryKernel : public ::testing::TestWithParam<DType> {};

TEST_P(DropoutLibraryKernel, DrawsTheReferencesMasks) {
  DType dtype = GetParam();
  std::vector<int64_t> shape = {4, 37, 129}; // enough elements to be split across the threads
  auto graph = dropoutGraph(dtype, shape, 0.3);
  std::optional<CpuLibraryKernel> kernel =
      findCpuLibraryKernel(*graph->outputs()[0]->definingNode(), nullptr);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->implementation, "dropout:" + std::string(dtypeName(dtype)));
  Tensor x = transposedRandom(dtype, shape, 3);
  std::vector<Tensor> library = runFromStart(*graph, x, true);
  std::vector<Tensor> reference = runFromStart(*graph, x, false);
  ASSERT_EQ(library[1].dtype(), DType::Bool);
  EXPECT_EQ(library[1].toDoubles(), reference[1].toDoubles());
  EXPECT_EQ(library[0].toDoubles(), reference[0].toDoubles());
}

INSTANTIATE_TEST_SUITE_P(DTypes, DropoutLibraryKernel, ::testing::Values(DType::F32, DType::F64),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

TEST(DropoutLibraryKernelMasks, AreTheSameAtAnyThreadCount) {
  auto graph = dropoutGraph(DType::F32, {256, 512}, 0.1);
  Tensor x = transposedRandom(DType::F32, {256, 512}, 5);
  setCpuLibraryThreads(1);
  std::vector<Tensor> one = runFromStart(*graph, x, true);
  setCpuLibraryThreads(2);
  std::vector<Tensor> two = runFromStart(*graph, x, true);
  EXPECT_EQ(one[1].toDoubles(), two[1].toDoubles());
}

TEST(DropoutLibraryKernelMasks, KeepTheRateScaleTheKeptAndChangeEveryCall) {
  const double p = 0.25;
  std::vector<int64_t> shape = {200, 500};
  auto graph = dropoutGraph(DType::F32, shape, p);
  std::unique_ptr<Executable> executable = libraryExecutable(*graph, "aten.native_dropout");
  Tensor x = transposedRandom(DType::F32, shape, 9);
  std::vector<double> input = x.toDoubles();
  std::vector<Tensor> first = executable->run({x}), second = executable->run({x});
  std::vector<double> out = first[0].toDoubles(), mask = first[1].toDoubles();
  double kept = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    kept += mask[i];
    EXPECT_FLOAT_EQ(out[i], mask[i] != 0 ? input[i] / (1 - p) : 0.0) << "element " << i;
  }
  // 100000 draws: the kept share is within 1% of 1 - p (about six standard deviations).
  EXPECT_NEAR(kept / double(mask.size()), 1 - p, 0.01);
  EXPECT_NE(mask, second[1].toDoubles());
}

TEST(DropoutLibraryKernelMasks, AreTheReferencesAcrossAChangeOfTheStreamsHighWord) {
  // The kernel hashes a run of positions with one high word: a draw across 2^32 is two runs.
  std::vector<int64_t> shape = {3, 700};
  auto graph = dropoutGraph(DType::F32, shape, 0.4);
  Tensor x = transposedRandom(DType::F32, shape, 4);
  const uint64_t start = (uint64_t(1) << 32) - 1000;
  std::vector<Tensor> library = runFromStart(*graph, x, true, start);
  std::vector<Tensor> reference = runFromStart(*graph, x, false, start);
  EXPECT_EQ(library[1].toDoubles(), reference[1].toDoubles());
  EXPECT_EQ(library[0].toDoubles(), reference[0].toDoubles());
}

TEST(DropoutLibraryKernelMasks, DroppedInfinitiesAreNaNAsInTorch) {
  // torch computes input * mask * scale: a dropped infinity is inf * 0.
  auto graph = dropoutGraph(DType::F32, {64}, 0.5);
  Tensor x = Tensor::fromDoubles(std::vector<double>(64, INFINITY), DType::F32, {64});
  std::vector<Tensor> outputs = runFromStart(*graph, x, true);
  std::vector<double> out = outputs[0].toDoubles(), mask = outputs[1].toDoubles();
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_TRUE(mask[i] != 0 ? std::isinf(out[i]) : std::isnan(out[i])) << "element " << i;
}

TEST(DropoutMasks, OfElementsAtAnyDistanceAreIndependent) {
  // 2^24 positions at p = 0.9: the share of pairs d apart both kept is (1 - p)^2 within six
  // standard errors, for distances from neighbours to 2^16 (a two-round hash failed at 1024).
  const double p = 0.9;
  const uint32_t threshold = dropoutThreshold(p);
  const int64_t count = int64_t(1) << 24;
  std::vector<uint8_t> keep(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    keep[static_cast<size_t>(i)] = dropoutKeeps(static_cast<uint64_t>(i), threshold);
  const double both = (1 - p) * (1 - p);
  for (int64_t distance : {1, 2, 3, 4, 7, 8, 16, 64, 256, 1024, 4096, 65536}) {
    int64_t pairs = count - distance, kept = 0;
    for (int64_t i = 0; i < pairs; ++i)
      kept += keep[static_cast<size_t>(i)] & keep[static_cast<size_t>(i + distance)];
    double error = std::sqrt(both * (1 - both) / static_cast<double>(pairs));
    EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(pairs), both, 6 * error)
        << "distance " << distance;
  }
}

TEST(DropoutLibraryKernelMasks, DropoutOffKeepsEverything) {
  auto graph = dropoutGraph(DType::F32, {33, 65}, 0.5, /*train=*/false);
  Tensor x = transposedRandom(DType::F32, {33, 65}, 2);
  std::vector<Tensor> outputs = runFromStart(*graph, x, true);
  EXPECT_EQ(outputs[0].toDoubles(), x.toDoubles());
  EXPECT_EQ(outputs[1].toDoubles(), std::vector<double>(33 * 65, 1.0));
}

} // namespace
} // namespace loupe::testing
