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

// The strides that read `bias` (rank 0 to 2, broadcastable to rows x cols) as a rows x cols
// matrix: 0 along a dim it broadcasts, as in torch's right-aligned broadcasting.
struct BroadcastStrides {
  int64_t row, col;
};

inline BroadcastStrides broadcastStrides(const Tensor& bias, int64_t rows, int64_t cols) {
  auto along = [&](size_t fromRight, int64_t extent) -> int64_t {
    if (bias.rank() < fromRight) return 0;
    size_t dim = bias.rank() - fromRight;
    return bias.size(dim) == 1 && extent != 1 ? 0 : bias.strides()[dim];
  };
  return {along(2, rows), along(1, cols)};
}

// c = alpha * a @ b + beta * bias for 2-D views (torch's aten.addmm), `bias` broadcast to c,
// which is contiguous. Each thread writes beta * bias into its block of c and accumulates its
// product onto it there, so the bias costs no pass over c of its own. With beta 0 the bias is
// not read (its NaNs do not propagate, as in torch).
template <typename T>
void biasedMatmul(const Tensor& bias, const Tensor& a, const Tensor& b, const Tensor& c,
                  double beta, double alpha) {
  int64_t m = a.size(0), n = b.size(1), k = a.size(1);
  T* out = c.dataAs<T>();
  if (beta == 0.0)
    return gemmBlocks<T>(asBlasMatrix(a), 0, asBlasMatrix(b), 0, m, n, k, out, n, false, alpha);
  if (m == 0 || n == 0) return;
  const T* biasData = bias.dataAs<T>();
  BroadcastStrides stride = broadcastStrides(bias, m, n);
  const T scale = static_cast<T>(beta);
  auto start = [&](int row, int rows, int col, int cols) {
    for (int64_t i = row; i < row + rows; ++i) {
      const T* from = biasData + i * stride.row;
      T* to = out + i * n;
      for (int64_t j = col; j < col + cols; ++j)
        to[j] = scale * from[j * stride.col];
    }
  };
  if (k == 0) return start(0, static_cast<int>(m), 0, static_cast<int>(n));
  BlasMatrix am = asBlasMatrix(a), bm = asBlasMatrix(b);
  gemmOnto(am.transpose, bm.transpose, static_cast<int>(m), static_cast<int>(n),
           static_cast<int>(k), am.fromRow<T>(0), am.leading, bm.fromRow<T>(0), bm.leading, out,
           static_cast<int>(n), alpha, start);
}

} // namespace loupe::library
