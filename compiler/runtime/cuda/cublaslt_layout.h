// How torch's row-major, strided view of a matmul maps onto cuBLASLt's column-major one.
// cuBLASLt computes D = op(A) op(B) with column-major matrices. A torch matrix with unit row
// stride is column-major as it stands; one with unit column stride is its transpose, column-major.
// When C has unit column stride the product runs transposed: C^T = B^T A^T, so cuBLASLt's A is
// torch's B and the bias (one value per torch column) runs along D's rows, as cuBLASLt adds it.
// Otherwise C = A B as it stands (no bias then). Pure host logic, separate so tests reach it.
#pragma once

#include "compiler/runtime/cuda/cublaslt_matmul.h"

#include <cstdint>
#include <string>

namespace loupe {

struct CublasLtMatrix {
  bool transposed = false;     // op(X) = X^T (CUBLAS_OP_T)
  uint64_t rows = 0, cols = 0; // of the column-major matrix in memory
  int64_t ld = 0;              // elements between its columns
  int64_t batchStride = 0;     // elements between batches (0 when there is one batch)
};

struct CublasLtLayout {
  bool transposedProduct = false; // computes C^T = B^T A^T
  uint64_t m = 0, n = 0, k = 0;   // cuBLASLt's: D is m x n, op(A) is m x k
  CublasLtMatrix a, b, c;         // cuBLASLt's operands (a is torch's B in a transposed product)
  CublasLtMatrix aux;             // the epilogue's auxiliary matrix, laid out as c (hasAux)
};

// Fills *layout and returns "", or returns why the strides cannot be expressed.
std::string cublasLtLayout(const MatmulProblem& problem, CublasLtLayout* layout);

} // namespace loupe
