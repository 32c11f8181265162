#include "compiler/runtime/cuda/cublaslt_layout.h"

#include <algorithm>
#include <climits>
#include <optional>

namespace loupe {
namespace {

// A torch matrix as it lies in memory: column-major, either the matrix itself or its transpose.
struct InMemory {
  CublasLtMatrix matrix;
  bool holdsTranspose = false;
};

// Torch's r x c matrix with row stride rs and column stride cs, as a column-major matrix. A stride
// along an extent of 1 is never used, so it does not count; the leading dimension must reach past
// a column so that columns do not overlap.
std::optional<InMemory> inMemory(int64_t r, int64_t c, int64_t rs, int64_t cs) {
  if (cs == 1 || c == 1) { // row-major: X^T is column-major, c x r
    int64_t ld = r == 1 ? c : rs;
    if (ld >= c) return InMemory{{false, uint64_t(c), uint64_t(r), ld, 0}, true};
  }
  if (rs == 1 || r == 1) { // column-major as it stands
    int64_t ld = c == 1 ? r : cs;
    if (ld >= r) return InMemory{{false, uint64_t(r), uint64_t(c), ld, 0}, false};
  }
  return std::nullopt;
}

// The operand cuBLASLt multiplies: `wantTranspose` asks for X^T, which is op(stored).
CublasLtMatrix operand(const InMemory& stored, bool wantTranspose, int64_t batchStride) {
  CublasLtMatrix matrix = stored.matrix;
  matrix.transposed = stored.holdsTranspose != wantTranspose;
  matrix.batchStride = batchStride;
  return matrix;
}

std::string stridesText(const int64_t strides[3]) {
  return "[" + std::to_string(strides[0]) + ", " + std::to_string(strides[1]) + ", " +
         std::to_string(strides[2]) + "]";
}

std::string noUnitStride(const char* name, int64_t rows, int64_t cols, const int64_t strides[3]) {
  return std::string(name) + " (" + std::to_string(rows) + " x " + std::to_string(cols) +
         ", strides " + stridesText(strides) +
         ") has neither a unit row stride nor a unit column stride with the other stride spanning "
         "a whole row or column";
}

} // namespace

std::string cublasLtLayout(const MatmulProblem& p, CublasLtLayout* layout) {
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 1)
    return "the product is empty (batch " + std::to_string(p.batch) + ", m " + std::to_string(p.m) +
           ", n " + std::to_string(p.n) + ", k " + std::to_string(p.k) + ")";
  if (p.batch > INT_MAX) return "the batch has more than 2^31 - 1 matrices";
  const std::pair<const char*, const int64_t*> operands[] = {
      {"A", p.aStrides}, {"B", p.bStrides}, {"C", p.cStrides}};
  bool aux = hasAux(p.epilogue);
  for (auto [name, strides] : operands)
    if (std::any_of(strides, strides + 3, [](int64_t s) { return s < 0; }))
      return std::string(name) + " has a negative stride " + stridesText(strides);
  if (aux && std::any_of(p.auxStrides, p.auxStrides + 3, [](int64_t s) { return s < 0; }))
    return "the auxiliary matrix has a negative stride " + stridesText(p.auxStrides);

  auto a = inMemory(p.m, p.k, p.aStrides[1], p.aStrides[2]);
  auto b = inMemory(p.k, p.n, p.bStrides[1], p.bStrides[2]);
  auto c = inMemory(p.m, p.n, p.cStrides[1], p.cStrides[2]);
  if (!a) return noUnitStride("A", p.m, p.k, p.aStrides);
  if (!b) return noUnitStride("B", p.k, p.n, p.bStrides);
  if (!c) return noUnitStride("C", p.m, p.n, p.cStrides);
  bool batched = p.batch > 1;
  if (batched) {
    const CublasLtMatrix& out = c->matrix;
    int64_t span = out.ld * int64_t(out.cols - 1) + int64_t(out.rows);
    if (p.cStrides[0] < span)
      return "C's batch stride " + std::to_string(p.cStrides[0]) +
             " makes its matrices overlap (each spans " + std::to_string(span) + " elements)";
  }

  CublasLtLayout result;
  result.transposedProduct = c->holdsTranspose;
  result.k = uint64_t(p.k);
  int64_t aBatch = batched ? p.aStrides[0] : 0, bBatch = batched ? p.bStrides[0] : 0;
  if (result.transposedProduct) { // C^T = B^T A^T
    result.m = uint64_t(p.n);
    result.n = uint64_t(p.m);
    result.a = operand(*b, true, bBatch);
    result.b = operand(*a, true, aBatch);
  } else {
    result.m = uint64_t(p.m);
    result.n = uint64_t(p.n);
    result.a = operand(*a, false, aBatch);
    result.b = operand(*b, false, bBatch);
  }
  result.c = operand(*c, c->holdsTranspose, batched ? p.cStrides[0] : 0);
  if (aux) {
    // cuBLASLt describes it by a leading dimension alone, as it describes D: the same
    // orientation as C.
    auto x = inMemory(p.m, p.n, p.auxStrides[1], p.auxStrides[2]);
    if (!x) return noUnitStride("the auxiliary matrix", p.m, p.n, p.auxStrides);
    if (x->holdsTranspose != c->holdsTranspose)
      return "the auxiliary matrix (strides " + stridesText(p.auxStrides) +
             ") does not lie as C does (strides " + stridesText(p.cStrides) + ")";
    result.aux = operand(*x, x->holdsTranspose, batched ? p.auxStrides[0] : 0);
  }
  if (layout) *layout = result;
  return "";
}

} // namespace loupe
