#include "compiler/codegen/cpu/library/parallel_gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace loupe::library {

namespace {

std::atomic<int> requestedThreads{0}; // 0: OpenMP's default

// OpenBLAS runs each call on the calling thread: its own pool stays asleep. Once per process,
// before the first product (OpenBLAS has no per-call setting).
void useSingleThreadedBlas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc, double beta, double alpha) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
              static_cast<float>(beta), c, ldc);
}

void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
              const double* b, int ldb, double* c, int ldc, double beta, double alpha) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// `start`, when given, writes each block of c before its product accumulates into it.
template <typename T>
void splitGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const T* a, int lda,
               const T* b, int ldb, T* c, int ldc, double beta, double alpha,
               const GemmBlockStart* start = nullptr) {
  useSingleThreadedBlas();
  GemmSplit split = gemmSplit(m, n, gemmThreads());
  int extent = split.byRows ? m : n;
#pragma omp parallel for num_threads(split.blocks) schedule(static, 1) if (split.blocks > 1)
  for (int block = 0; block < split.blocks; ++block) {
    int first = static_cast<int>(int64_t{extent} * block / split.blocks);
    int last = static_cast<int>(int64_t{extent} * (block + 1) / split.blocks);
    if (start) {
      if (split.byRows)
        (*start)(first, last - first, 0, n);
      else
        (*start)(0, m, first, last - first);
    }
    if (split.byRows) // rows of op(a) and of c
      blasGemm(ta, tb, last - first, n, k,
               a + (ta == CblasNoTrans ? int64_t{first} * lda : int64_t{first}), lda, b, ldb,
               c + int64_t{first} * ldc, ldc, beta, alpha);
    else // columns of op(b) and of c
      blasGemm(ta, tb, m, last - first, k, a, lda,
               b + (tb == CblasNoTrans ? int64_t{first} : int64_t{first} * ldb), ldb, c + first,
               ldc, beta, alpha);
  }
}

} // namespace

void setGemmThreads(int threads) {
  requestedThreads.store(std::max(threads, 0), std::memory_order_relaxed);
}

int gemmThreads() {
  if (omp_in_parallel()) return 1;
  int requested = requestedThreads.load(std::memory_order_relaxed);
  return requested > 0 ? requested : omp_get_max_threads();
}

GemmSplit gemmSplit(int m, int n, int threads) {
  bool byRows = m >= n;
  int extent = byRows ? m : n;
  return {byRows, std::clamp(extent / kMinGemmBlock, 1, std::max(threads, 1))};
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc, double beta, double alpha) {
  splitGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, beta, alpha);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc, double beta, double alpha) {
  splitGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, beta, alpha);
}

void gemmOnto(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc, double alpha,
              const GemmBlockStart& start) {
  splitGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 1.0, alpha, &start);
}

void gemmOnto(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
              const double* b, int ldb, double* c, int ldc, double alpha,
              const GemmBlockStart& start) {
  splitGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 1.0, alpha, &start);
}

} // namespace loupe::library
