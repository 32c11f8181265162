// aten.addmm's library kernel (oneDNN's matmul with the bias in its epilogue where the build has
// it and alpha and beta are 1; else the product accumulated onto its bias, block by block)
// against the float64 reference at each library thread count: every way the bias broadcasts, a
// strided bias and factors, scaled forms, and beta 0, where the bias is not read.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// 37 x 40 results: split by columns over 2 and 3 threads, in uneven blocks; K = 24.
constexpr int64_t kRows = 37, kCols = 40, kInner = 24;

struct BiasCase {
  std::string name;
  std::vector<int64_t> shape;
  bool transposed = false; // a [rows, cols] bias stored column by column
};

class BiasedMatmulLibraryKernel
    : public ::testing::TestWithParam<std::tuple<BiasCase, int, DType>> {
protected:
  void TearDown() override { library::setGemmThreads(0); } // back to OpenMP's default
};

KernelStats runAddmm(const std::vector<Tensor>& inputs, double beta, double alpha) {
  AttrMap attrs;
  attrs.set("beta", beta);
  attrs.set("alpha", alpha);
  auto graph = singleOp("aten.addmm", typesOf(inputs), attrs);
  return runLibraryKernel(*graph, "aten.addmm", inputs);
}

TEST_P(BiasedMatmulLibraryKernel, MatchesTheReference) {
  const auto& [bias, threads, dtype] = GetParam();
  setCpuLibraryThreads(threads);
  Tensor biasTensor =
      bias.transposed ? transposedRandom(dtype, bias.shape, 3) : randomTensor(dtype, bias.shape, 3);
  // The first factor is packed (its rows are neither row- nor column-major), the second is a
  // transpose BLAS reads in place.
  std::vector<Tensor> inputs = {biasTensor, permutedRandom(dtype, {kRows, kInner}, {1, 0}, 1),
                                transposedRandom(dtype, {kInner, kCols}, 2)};
  double tolerance = dtype == DType::F32 ? 1e-4 : 1e-10;
  for (auto [beta, alpha] : {std::pair{1.0, 1.0}, std::pair{0.5, -2.0}}) {
    KernelStats stats = runAddmm(inputs, beta, alpha);
    EXPECT_EQ(stats.implementation, "library:aten.addmm");
    EXPECT_LT(stats.maxAbsError, tolerance) << "beta " << beta << ", alpha " << alpha;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Biases, BiasedMatmulLibraryKernel,
    ::testing::Combine(::testing::Values(BiasCase{"row", {kCols}}, BiasCase{"row2d", {1, kCols}},
                                         BiasCase{"column", {kRows, 1}},
                                         BiasCase{"matrix", {kRows, kCols}, true},
                                         BiasCase{"scalar", {}}),
                       ::testing::Values(1, 2, 3), ::testing::Values(DType::F32, DType::F64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param)) +
             "threads_" + std::string(dtypeName(std::get<2>(info.param)));
    });

// Which kernel a product names: oneDNN's f32 matmul for unit scales where the build has it (it
// beat OpenBLAS at every size measured, docs/cpu-codegen.md), OpenBLAS for scaled forms and f64.
TEST(BiasedMatmulLibraryKernelChoice, UnitScaledF32ProductsRunOnOneDnnWhereItIsBuiltIn) {
  auto implementation = [](DType dtype, double beta) {
    std::vector<Tensor> inputs = {randomTensor(dtype, {kCols}, 3),
                                  randomTensor(dtype, {kRows, kInner}, 1),
                                  randomTensor(dtype, {kInner, kCols}, 2)};
    AttrMap attrs;
    attrs.set("beta", beta);
    auto graph = singleOp("aten.addmm", typesOf(inputs), attrs);
    return findCpuLibraryKernel(*graph->nodes().front(), nullptr)->implementation;
  };
  EXPECT_EQ(implementation(DType::F32, 1.0),
            cpuLibraryHasF32Matmul() ? "onednn:matmul:f32" : "openblas:sgemm+bias");
  EXPECT_EQ(implementation(DType::F32, 0.5), "openblas:sgemm+bias");
  EXPECT_EQ(implementation(DType::F64, 1.0), "openblas:dgemm+bias");
}

TEST(BiasedMatmulLibraryKernelBeta0, DoesNotReadTheBias) {
  Tensor bias = randomTensor(DType::F32, {kCols}, 3);
  for (int64_t j = 0; j < kCols; ++j)
    bias.set(j, std::numeric_limits<double>::quiet_NaN());
  KernelStats stats = runAddmm({bias, randomTensor(DType::F32, {kRows, kInner}, 1),
                                randomTensor(DType::F32, {kInner, kCols}, 2)},
                               0.0, 1.0);
  EXPECT_LT(stats.maxAbsError, 1e-4); // NaN compares false
}

TEST(BiasedMatmulLibraryKernelEmpty, AnEmptyInnerDimGivesTheScaledBias) {
  KernelStats stats =
      runAddmm({randomTensor(DType::F64, {kCols}, 3), randomTensor(DType::F64, {kRows, 0}, 1),
                randomTensor(DType::F64, {0, kCols}, 2)},
               2.0, 1.0);
  EXPECT_LT(stats.maxAbsError, 1e-12);
}

} // namespace
} // namespace loupe::testing
