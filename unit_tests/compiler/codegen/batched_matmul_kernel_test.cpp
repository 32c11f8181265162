// aten.bmm's library kernel against the float64 reference at each library thread count, for
// batches that are split across the threads (a multiple of them, or many) and batches that are
// not (each product split instead), with a transposed operand and one that must be packed.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

class BatchedMatmulLibraryKernel
    : public ::testing::TestWithParam<std::tuple<int64_t, int, DType>> {
protected:
  void TearDown() override { library::setGemmThreads(0); } // back to OpenMP's default
};

TEST_P(BatchedMatmulLibraryKernel, MatchesTheReference) {
  const auto& [batch, threads, dtype] = GetParam();
  setCpuLibraryThreads(threads);
  // The first operand's matrices are neither row- nor column-major (the batch is innermost in
  // memory), so they are packed; the second's are transposed, which BLAS reads in place.
  std::vector<Tensor> inputs = {permutedRandom(dtype, {batch, 37, 24}, {1, 2, 0}, 1),
                                transposedRandom(dtype, {batch, 24, 40}, 2)};
  auto graph = singleOp("aten.bmm", typesOf(inputs), AttrMap());
  KernelStats stats = runLibraryKernel(*graph, "aten.bmm", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.bmm");
  EXPECT_LT(stats.maxAbsError, dtype == DType::F32 ? 1e-4 : 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Batches, BatchedMatmulLibraryKernel,
                         ::testing::Combine(::testing::Values(1, 3, 4, 9),
                                            ::testing::Values(1, 2, 3),
                                            ::testing::Values(DType::F32, DType::F64)),
                         [](const auto& info) {
                           return "batch" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "threads_" +
                                  std::string(dtypeName(std::get<2>(info.param)));
                         });

} // namespace
} // namespace loupe::testing
