// Matrix products on the GPU through cuBLASLt (loaded at run time, like the driver): torch's
// row-major, strided view of a batched matmul with an optional bias and activation fused into the
// product's epilogue. docs/cuda-runtime.md, "cuBLASLt", says what runs and what falls back.
#pragma once

#include "compiler/ir/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loupe {

// The activation is cuBLASLt's GELU, the tanh approximation (torch's gelu(approximate="tanh")).
// GeluAux and BiasGeluAux also store the GELU's input (the product, plus the bias) into the
// auxiliary matrix; DGelu multiplies the product by GELU's derivative at the auxiliary matrix
// (GELU's backward, the pre-activation saved by the forward).
enum class MatmulEpilogue {
  None,
  Bias,
  Relu,
  BiasRelu,
  Gelu,
  BiasGelu,
  GeluAux,
  BiasGeluAux,
  DGelu
};

// Whether the epilogue adds a bias.
bool hasBias(MatmulEpilogue epilogue);
// Whether the epilogue writes (GeluAux, BiasGeluAux) or reads (DGelu) the auxiliary matrix.
bool hasAux(MatmulEpilogue epilogue);

// C[b] = A[b] (m x k) @ B[b] (k x n) (+ bias[n], broadcast over rows and batches) (activation),
// row-major as torch sees it.
struct MatmulProblem {
  // F32 (computed in exact fp32: no TF32, like torch's default), BF16 or F16 (fp32 accumulation).
  DType dtype = DType::F32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  // Element strides per operand, torch-style: batch, row, column. One of row and column stride
  // must be 1 (a transposed operand is just strides); the other at least the extent it spans.
  int64_t aStrides[3] = {0, 0, 1}, bStrides[3] = {0, 0, 1}, cStrides[3] = {0, 0, 1};
  MatmulEpilogue epilogue = MatmulEpilogue::None;
  DType biasDType = DType::F32; // must be dtype (cuBLASLt adds a bias of the output's type)
  // The auxiliary matrix (hasAux): m x n of `dtype`, laid out as C is (unit column stride when C
  // has it), its leading dimension and batch stride multiples of 8 elements (cuBLASLt's rule).
  int64_t auxStrides[3] = {0, 0, 1};
};

// The workspace runCublasLtMatmul is best given: cuBLASLt's heuristic picks among the algorithms
// that fit in the workspace it is offered.
inline constexpr size_t kCublasLtWorkspaceBytes = 32u << 20;

// Whether cuBLASLt can run here (driver and library load); when not, *why says what was tried.
bool cublasLtAvailable(std::string* why);

// Why cuBLASLt cannot run this problem, empty when it can: a dtype or bias dtype it does not take,
// an operand with no unit stride, overlapping output batches, ... Pure host logic.
std::string cublasLtCannotRun(const MatmulProblem& problem);

// Runs the problem on `stream` (device `device`'s primary context is made current). Plans
// (descriptors and the heuristic's algorithm) are cached per problem, pointer alignment and
// workspace size. `bias` is read when the epilogue has one; `aux`, the auxiliary matrix, is
// written or read when it has one (hasAux). Returns the algorithm chosen, for the trace:
// "cublasLt algo 23, tile id 20, splitK 1, stages id 9". Throws a CudaError when the problem
// cannot run (cublasLtCannotRun) or cuBLASLt fails.
std::string runCublasLtMatmul(const MatmulProblem& problem, const void* a, const void* b, void* c,
                              const void* bias, void* stream, void* workspace,
                              size_t workspaceBytes, int device, void* aux = nullptr);

} // namespace loupe
