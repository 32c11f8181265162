// BLAS products split across threads (compiler/codegen/cpu/library/parallel_gemm.h): how many
// threads a product uses follows the embedder's setting or OpenMP's, the split covers the whole
// result in blocks of useful size, and every split gives the unsplit product.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_gemm.h"

namespace loupe::library {
namespace {

// Restores the process-wide settings a test changes.
class ParallelGemm : public ::testing::Test {
protected:
  void TearDown() override {
    setGemmThreads(0);
    omp_set_num_threads(ompDefault_);
  }
  int ompDefault_ = omp_get_max_threads();
};

TEST_F(ParallelGemm, ThreadsFollowTheEmbeddersSettingElseOpenMPs) {
  setGemmThreads(3);
  EXPECT_EQ(gemmThreads(), 3);
  setGemmThreads(0); // back to OpenMP's default, which follows omp_set_num_threads (and
                     // OMP_NUM_THREADS) on the calling thread
  omp_set_num_threads(5);
  EXPECT_EQ(gemmThreads(), 5);
  omp_set_num_threads(1);
  EXPECT_EQ(gemmThreads(), 1);
}

TEST(GemmSplit, TakesTheLongerDimAndKeepsBlocksAtLeastTheMinimumWide) {
  auto expectSplit = [](int m, int n, int threads, bool byRows, int blocks) {
    GemmSplit split = gemmSplit(m, n, threads);
    EXPECT_EQ(split.byRows, byRows) << m << "x" << n << " on " << threads;
    EXPECT_EQ(split.blocks, blocks) << m << "x" << n << " on " << threads;
  };
  expectSplit(64, 1024, 2, false, 2); // an MLP layer's product: columns of the weight
  expectSplit(1024, 64, 2, true, 2);  // its transpose: rows
  expectSplit(64, 1024, 1, false, 1); // one thread: one call
  expectSplit(64, 1024, 0, false, 1); // no threads asked for: still one call
  expectSplit(40, 40, 8, true, 2);    // 40 rows make two blocks of at least 16, not 8
  expectSplit(4, 8, 2, false, 1);     // too small to split
  expectSplit(1024, 1024, 64, true, 64);
}

// Row-major op(x) element (r, c) of a matrix with leading dimension ld.
double element(const std::vector<double>& x, bool transposed, int ld, int r, int c) {
  return transposed ? x[static_cast<size_t>(c) * ld + r] : x[static_cast<size_t>(r) * ld + c];
}

template <typename T>
void expectSplitsMatchTheReference(bool ta, bool tb, int m, int n, int k) {
  std::mt19937 random(static_cast<unsigned>(m * 131 + n * 17 + k + ta * 2 + tb));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto randomMatrix = [&](size_t size) {
    std::vector<double> values(size);
    for (double& value : values)
      value = uniform(random);
    return values;
  };
  int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1; // padded rows
  std::vector<double> a = randomMatrix(static_cast<size_t>(ta ? k : m) * lda);
  std::vector<double> b = randomMatrix(static_cast<size_t>(tb ? n : k) * ldb);
  std::vector<double> c0 = randomMatrix(static_cast<size_t>(m) * ldc);
  const double alpha = 0.5, beta = 1.0; // accumulates into c, scaled
  std::vector<T> at(a.begin(), a.end()), bt(b.begin(), b.end());
  for (int threads : {1, 2, 3, 4}) {
    setGemmThreads(threads);
    std::vector<T> c(c0.begin(), c0.end());
    gemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, at.data(), lda,
         bt.data(), ldb, c.data(), ldc, beta, alpha);
    double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-12;
    for (int r = 0; r < m; ++r)
      for (int col = 0; col < ldc; ++col) {
        double expected = c0[static_cast<size_t>(r) * ldc + col];
        if (col < n) { // the padding past n stays as it was
          double product = 0;
          for (int i = 0; i < k; ++i)
            product += element(a, ta, lda, r, i) * element(b, tb, ldb, i, col);
          expected = alpha * product + beta * expected;
        }
        ASSERT_NEAR(c[static_cast<size_t>(r) * ldc + col], expected, tolerance)
            << "threads " << threads << ", ta " << ta << ", tb " << tb << ", " << m << "x" << n
            << "x" << k << " at (" << r << ", " << col << ")";
      }
  }
}

TEST_F(ParallelGemm, EverySplitGivesTheProductInBothPrecisionsAndLayouts) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      expectSplitsMatchTheReference<float>(ta, tb, 37, 70, 19);  // columns, uneven blocks
      expectSplitsMatchTheReference<double>(ta, tb, 70, 37, 19); // rows, uneven blocks
      expectSplitsMatchTheReference<float>(ta, tb, 5, 9, 4);     // one block
    }
}

} // namespace
} // namespace loupe::library
