// BLAS gemms on strided 2-D views: a view goes to BLAS as itself or as a transpose when its
// layout allows, and is packed otherwise. The products run through gemm (parallel_gemm.h).
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/tensor/tensor.h"

namespace loupe::library {

// A 2-D view as BLAS sees it: row-major with a leading dimension, or the transpose of one.
struct BlasMatrix {
  const void* data;
  CBLAS_TRANSPOSE transpose;
  int leading;
  Tensor packed; // keeps a packed copy alive when the view fits neither form

  // The same storage read as the transposed matrix.
  BlasMatrix transposed() const {
    return {data, transpose == CblasNoTrans ? CblasTrans : CblasNoTrans, leading, packed};
  }

  // Where row `row` of the matrix (as BLAS reads it, after `transpose`) starts, so that a
  // block of rows is a matrix with the same leading dimension.
  template <typename T>
  const T* fromRow(int64_t row) const {
    return static_cast<const T*>(data) + (transpose == CblasNoTrans ? row * leading : row);
  }
};

inline BlasMatrix asBlasMatrix(const Tensor& m) {
  int64_t rows = m.size(0), cols = m.size(1);
  // The stride of a size-1 dim is never used, so any value fits.
  int64_t rowStride = rows == 1 ? std::max<int64_t>(cols, 1) : m.strides()[0];
  int64_t colStride = cols == 1 ? 1 : m.strides()[1];
  if (colStride == 1 && rowStride >= std::max<int64_t>(cols, 1))
    return {m.data(), CblasNoTrans, static_cast<int>(rowStride), {}};
  rowStride = rows == 1 ? 1 : m.strides()[0];
  colStride = cols == 1 ? std::max<int64_t>(rows, 1) : m.strides()[1];
  if (rowStride == 1 && colStride >= std::max<int64_t>(rows, 1))
    return {m.data(), CblasTrans, static_cast<int>(colStride), {}};
  Tensor packed = m.clone();
  return {packed.data(), CblasNoTrans, static_cast<int>(std::max<int64_t>(cols, 1)), packed};
}

// c = alpha * a @ b (+ c with `accumulate`) for row blocks of BLAS matrices: rows [aRow,
// aRow + m) of a and [bRow, bRow + k) of b; c is row-major with leading dimension ldc.
template <typename T>
void gemmBlocks(const BlasMatrix& a, int64_t aRow, const BlasMatrix& b, int64_t bRow, int64_t m,
                int64_t n, int64_t k, T* c, int64_t ldc, bool accumulate = false,
                double alpha = 1.0) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i)
        std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  gemm(a.transpose, b.transpose, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
       a.fromRow<T>(aRow), a.leading, b.fromRow<T>(bRow), b.leading, c, static_cast<int>(ldc),
       accumulate ? 1.0 : 0.0, alpha);
}

// c = a @ b for 2-D views; c is contiguous.
template <typename T>
void matmul(const Tensor& a, const Tensor& b, const Tensor& c) {
  gemmBlocks<T>(asBlasMatrix(a), 0, asBlasMatrix(b), 0, a.size(0), b.size(1), a.size(1),
                c.dataAs<T>(), b.size(1));
}

} // namespace loupe::library
