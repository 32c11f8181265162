// How a BLAS product uses the cores: the longer of the result's two dims is split into blocks
// across OpenMP's threads, each block one single-threaded OpenBLAS call. OpenMP's pool is the one
// the generated kernels run on and, inside torch, torch's intra-op pool (torch's wheel and the
// host compiler's code share one libgomp.so.1), so Loupe's steps and torch's ops take turns on
// the same threads. OpenBLAS's own pthreads, left on, would run beside that pool's spinning
// workers on the same cores: an MLP's forward ran 2 to 3.5 times slower that way
// (docs/cpu-codegen.md, "Threads").
#pragma once

#include <cblas.h>

#include <functional>

namespace loupe::library {

// How many threads products are split across from now on, for every calling thread: an
// embedder passes its own setting (torch.get_num_threads()) so that Loupe wakes no thread the
// caller did not ask for. 0 (the start) means OpenMP's default: OMP_NUM_THREADS, else one per
// core.
void setGemmThreads(int threads);

// The threads a product started now may use: the setting above, and one inside a parallel
// region (the region's threads are the split already).
int gemmThreads();

// How gemm splits an m x n result over `threads`: along rows (of op(a) and c) or columns (of
// op(b) and c), into `blocks` blocks of nearly equal size, each at least kMinGemmBlock wide
// unless the dim is smaller.
constexpr int kMinGemmBlock = 16; // smaller blocks cost more in BLAS's packing than they save
struct GemmSplit {
  bool byRows;
  int blocks;
};
GemmSplit gemmSplit(int m, int n, int threads);

// c = alpha * op(a) @ op(b) + beta * c, row-major, split over gemmThreads() threads.
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc, double beta = 0.0, double alpha = 1.0);
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc, double beta = 0.0, double alpha = 1.0);

// Writes the block of c at rows [row, row + rows) and columns [col, col + cols) before a product
// accumulates into it.
using GemmBlockStart = std::function<void(int row, int rows, int col, int cols)>;

// c = alpha * op(a) @ op(b) + start, where each thread first writes its block of c with `start`
// and then accumulates its product into it (BLAS's beta = 1) while the block is in its cache: a
// bias costs no pass of its own over c (aten.addmm, library_kernels.cpp).
void gemmOnto(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc, double alpha,
              const GemmBlockStart& start);
void gemmOnto(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
              const double* b, int ldb, double* c, int ldc, double alpha,
              const GemmBlockStart& start);

} // namespace loupe::library
