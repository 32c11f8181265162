// The mapping of torch's row-major, strided matmul onto cuBLASLt's column-major one, and the
// reasons cuBLASLt cannot run a problem: pure host logic, checked without a GPU.
#include "compiler/runtime/cuda/cublaslt_layout.h"

#include <gtest/gtest.h>

namespace loupe {
namespace {

// m x k @ k x n, every operand contiguous row-major, `batch` matrices each.
MatmulProblem rowMajor(int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatmulProblem p;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  int64_t a[3] = {m * k, k, 1}, b[3] = {k * n, n, 1}, c[3] = {m * n, n, 1};
  std::copy(a, a + 3, p.aStrides);
  std::copy(b, b + 3, p.bStrides);
  std::copy(c, c + 3, p.cStrides);
  return p;
}

void expectMatrix(const CublasLtMatrix& got, bool transposed, uint64_t rows, uint64_t cols,
                  int64_t ld, int64_t batchStride) {
  EXPECT_EQ(got.transposed, transposed);
  EXPECT_EQ(got.rows, rows);
  EXPECT_EQ(got.cols, cols);
  EXPECT_EQ(got.ld, ld);
  EXPECT_EQ(got.batchStride, batchStride);
}

TEST(CudaCublasLtLayout, RowMajorRunsAsTransposedProduct) {
  // C^T (n x m) = B^T (n x k) A^T (k x m): each row-major matrix is its transpose column-major.
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(rowMajor(1, 3, 5, 7), &layout), "");
  EXPECT_TRUE(layout.transposedProduct);
  EXPECT_EQ(layout.m, 5u);
  EXPECT_EQ(layout.n, 3u);
  EXPECT_EQ(layout.k, 7u);
  expectMatrix(layout.a, false, 5, 7, 5, 0);
  expectMatrix(layout.b, false, 7, 3, 7, 0);
  expectMatrix(layout.c, false, 5, 3, 5, 0);
}

TEST(CudaCublasLtLayout, TransposedOperandsAreJustStrides) {
  MatmulProblem p = rowMajor(1, 3, 5, 7);
  int64_t aT[3] = {21, 1, 3}, bT[3] = {35, 1, 7}; // A = X^T with X 7 x 3; B = Y^T with Y 5 x 7
  std::copy(aT, aT + 3, p.aStrides);
  std::copy(bT, bT + 3, p.bStrides);
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(p, &layout), "");
  EXPECT_TRUE(layout.transposedProduct);
  expectMatrix(layout.a, true, 7, 5, 7, 0); // B in memory is B column-major: op = T gives B^T
  expectMatrix(layout.b, true, 3, 7, 3, 0);
}

TEST(CudaCublasLtLayout, ColumnMajorOutputRunsAsItStands) {
  MatmulProblem p = rowMajor(2, 3, 5, 7);
  int64_t c[3] = {15, 1, 3};
  std::copy(c, c + 3, p.cStrides);
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(p, &layout), "");
  EXPECT_FALSE(layout.transposedProduct);
  EXPECT_EQ(layout.m, 3u);
  EXPECT_EQ(layout.n, 5u);
  expectMatrix(layout.a, true, 7, 3, 7, 21);
  expectMatrix(layout.b, true, 5, 7, 5, 35);
  expectMatrix(layout.c, false, 3, 5, 3, 15);
}

TEST(CudaCublasLtLayout, PaddedRowsAndBroadcastBatch) {
  MatmulProblem p = rowMajor(4, 3, 5, 7);
  int64_t a[3] = {0, 9, 1}; // one A for every batch, rows 9 apart
  std::copy(a, a + 3, p.aStrides);
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(p, &layout), "");
  expectMatrix(layout.b, false, 7, 3, 9, 0);
  expectMatrix(layout.a, false, 5, 7, 5, 35);
  expectMatrix(layout.c, false, 5, 3, 5, 15);
}

TEST(CudaCublasLtLayout, StridesAlongAnExtentOfOneDoNotCount) {
  MatmulProblem p = rowMajor(1, 1, 5, 7);
  p.aStrides[1] = 12345; // the one row of A
  p.cStrides[1] = 0;
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(p, &layout), "");
  expectMatrix(layout.b, false, 7, 1, 7, 0);
  expectMatrix(layout.c, false, 5, 1, 5, 0);
}

TEST(CudaCublasLtLayout, RefusesWhatStridesCannotExpress) {
  MatmulProblem p = rowMajor(1, 3, 5, 7);
  p.aStrides[1] = 2;
  p.aStrides[2] = 3;
  EXPECT_NE(cublasLtLayout(p, nullptr).find("A (3 x 7, strides [21, 2, 3]) has neither"),
            std::string::npos);

  p = rowMajor(1, 3, 5, 7);
  p.bStrides[1] = 4; // rows of 5 elements only 4 apart overlap
  EXPECT_NE(cublasLtLayout(p, nullptr).find("B (7 x 5"), std::string::npos);

  p = rowMajor(2, 3, 5, 7);
  p.cStrides[0] = 10;
  EXPECT_NE(cublasLtLayout(p, nullptr).find("C's batch stride 10 makes its matrices overlap"),
            std::string::npos);

  p = rowMajor(1, 3, 5, 7);
  p.bStrides[2] = -1;
  EXPECT_NE(cublasLtLayout(p, nullptr).find("B has a negative stride"), std::string::npos);

  EXPECT_NE(cublasLtLayout(rowMajor(1, 3, 0, 7), nullptr).find("empty"), std::string::npos);
}

TEST(CudaCublasLtLayout, CannotRunNamesDtypeAndBiasProblems) {
  MatmulProblem p = rowMajor(1, 3, 5, 7);
  EXPECT_EQ(cublasLtCannotRun(p), "");
  p.dtype = DType::F64;
  EXPECT_NE(cublasLtCannotRun(p).find("not f64"), std::string::npos) << cublasLtCannotRun(p);
  p.dtype = DType::I64;
  EXPECT_NE(cublasLtCannotRun(p).find("not i64"), std::string::npos);

  p.dtype = DType::BF16;
  p.epilogue = MatmulEpilogue::BiasGelu;
  p.biasDType = DType::F32;
  EXPECT_NE(cublasLtCannotRun(p).find("bias of the output's dtype bf16, not f32"),
            std::string::npos)
      << cublasLtCannotRun(p);
  p.biasDType = DType::BF16;
  EXPECT_EQ(cublasLtCannotRun(p), "");

  p.cStrides[1] = 1; // column-major C: the bias would run along the wrong dimension
  p.cStrides[2] = 3;
  EXPECT_NE(cublasLtCannotRun(p).find("bias only to an output with unit column stride"),
            std::string::npos)
      << cublasLtCannotRun(p);
  p.epilogue = MatmulEpilogue::Relu;
  EXPECT_EQ(cublasLtCannotRun(p), "");
}

TEST(CudaCublasLtLayout, AuxiliaryMatrixLiesAsCWithRowsOfEight) {
  // GELU's saved input (GeluAux writes it, DGelu reads it): described to cuBLASLt by a leading
  // dimension alone, as D is, so it must lie as C does, its rows a multiple of 8 elements apart.
  MatmulProblem p = rowMajor(1, 3, 16, 7);
  p.dtype = p.biasDType = DType::BF16;
  p.epilogue = MatmulEpilogue::BiasGeluAux;
  int64_t dense[3] = {0, 16, 1};
  std::copy(dense, dense + 3, p.auxStrides);
  CublasLtLayout layout;
  ASSERT_EQ(cublasLtLayout(p, &layout), "");
  expectMatrix(layout.aux, false, 16, 3, 16, 0);
  EXPECT_EQ(cublasLtCannotRun(p), "");

  p.auxStrides[1] = 24; // rows padded to 24 elements: still a multiple of 8
  EXPECT_EQ(cublasLtCannotRun(p), "");
  p.auxStrides[1] = 20;
  EXPECT_NE(cublasLtCannotRun(p).find("multiples of 8 elements, not 20 and 0"), std::string::npos)
      << cublasLtCannotRun(p);

  p.auxStrides[1] = 1; // column-major, against C's rows
  p.auxStrides[2] = 8;
  EXPECT_NE(cublasLtLayout(p, nullptr).find("does not lie as C does"), std::string::npos)
      << cublasLtLayout(p, nullptr);
  p.auxStrides[1] = 32;
  p.auxStrides[2] = 2;
  EXPECT_NE(cublasLtLayout(p, nullptr).find("the auxiliary matrix (3 x 16"), std::string::npos)
      << cublasLtLayout(p, nullptr);

  // The backward's epilogue reads it with the same rule; rows of 12 elements do not do.
  p = rowMajor(1, 3, 12, 7);
  p.dtype = p.biasDType = DType::BF16;
  p.epilogue = MatmulEpilogue::DGelu;
  int64_t twelve[3] = {0, 12, 1};
  std::copy(twelve, twelve + 3, p.auxStrides);
  EXPECT_NE(cublasLtCannotRun(p).find("not 12 and 0"), std::string::npos) << cublasLtCannotRun(p);
  // A batch stride that is not a multiple of 8 is refused too.
  p = rowMajor(2, 3, 16, 7);
  p.dtype = p.biasDType = DType::BF16;
  p.epilogue = MatmulEpilogue::GeluAux;
  int64_t batched[3] = {52, 16, 1};
  std::copy(batched, batched + 3, p.auxStrides);
  EXPECT_NE(cublasLtCannotRun(p).find("not 16 and 52"), std::string::npos) << cublasLtCannotRun(p);
  p.auxStrides[0] = 48;
  EXPECT_EQ(cublasLtCannotRun(p), "");
  // Without an auxiliary epilogue its strides are never looked at.
  p.epilogue = MatmulEpilogue::Gelu;
  p.auxStrides[1] = -1;
  EXPECT_EQ(cublasLtCannotRun(p), "");
}

} // namespace
} // namespace loupe
