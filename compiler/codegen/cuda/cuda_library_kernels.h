// The ops the CUDA backend runs as library kernels (cuBLASLt, the row gather), decided from the IR
// alone so that the decomposition pass (which keeps such an op whole), kernel selection and the
// runtime agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/ir/graph.h"

namespace loupe {

// aten.mm and aten.bmm in f32, bf16 and f16; aten.addmm whose bias cuBLASLt adds in its
// epilogue: beta = alpha = 1 and a bias of the product's dtype repeated along its rows (shape
// [n] or [1, n]). When not, *whyNot says why.
bool runsAsCudaLibraryKernel(const Node& node, std::string* whyNot);

// An aten.mm or aten.addmm that runsAsCudaLibraryKernel: a product cuBLASLt's epilogue can
// extend (an activation, GELU's auxiliary matrix, a split into aligned columns).
bool isCudaEpilogueProduct(const Node& node);

// Whether the library kernel of `node` adds the bias in cuBLASLt's epilogue (aten.addmm).
bool cudaLibraryKernelAddsBias(const Node& node);

// aten.embedding (a lookup of rows: a model's token and position embeddings) whose table is 2-D
// and whose indices are int64 or int32: the runtime's row gather kernel
// (compiler/runtime/cuda_fixed_kernels.h). When not, *whyNot says why.
bool isCudaGatherOp(const Node& node, std::string* whyNot);

// aten.index_put (self with values written, or added with accumulate, at self[indices...]) with
// int64 or int32 index tensors, an indexed shape of rank 8 at most and, with accumulate, a dtype
// the GPU adds atomically (f32, f64, i32, i64): the runtime's scatter kernel
// (compiler/runtime/cuda_fixed_kernels.h) into a copy of self. When not, *whyNot says why.
bool isCudaScatterOp(const Node& node, std::string* whyNot);

// The shape the scatter kernel of an aten.index_put iterates: its rank (self's dims that no index
// tensor indexes, and the block the index tensors broadcast to, of the longest one's rank) and
// the number of index tensors. The runtime's scatter picks its entry by both.
struct CudaScatterShape {
  size_t rank = 0;
  size_t indexCount = 0;
};
CudaScatterShape cudaScatterShape(const Node& node);

// A factory op whose every element is one value (fillsOneValue, compiler/ops/factory.h:
// zeros_like, full, new_zeros, ...) as a memset of the value's bytes: words of 1, 2 or 4 bytes, or
// of 8 when the value's two 4-byte halves are the same (any 0), filled as twice as many 4-byte
// words. `attrs` are the node's, bound or not; when not such a fill (arange, loupe.constant's
// data, a symbolic fill value, an 8-byte value of two halves), nullopt and *whyNot says why.
struct CudaFill {
  unsigned wordBytes = 4; // 1, 2 or 4
  uint32_t word = 0;      // the value's bytes, in the low wordBytes
  int64_t wordsPerElement = 1;
};
std::optional<CudaFill> cudaFillOf(const Node& node, const AttrMap& attrs, std::string* whyNot);

// An activation cuBLASLt's epilogue computes on a product: aten.relu, or aten.gelu with
// approximate="tanh" in bf16 or f16 (the epilogue's GELU is the tanh approximation, not erf, and
// too coarse for f32).
bool isCudaEpilogueActivation(const Node& node);

// aten.gelu_backward with approximate="tanh" in bf16 or f16: what cuBLASLt's DGELU epilogue
// computes on a product (the gradient) with the pre-activation as its auxiliary input.
bool isCudaEpilogueGeluBackward(const Node& node);

// Why cuBLASLt cannot keep a product's result of this type as the auxiliary matrix of a GELU
// epilogue (written beside the activation, or read back by the DGELU epilogue), or "" when it
// can. The matrix is a dense row-major [m, n] buffer whose rows are cuBLASLt's leading dimension,
// which must be a multiple of 8 elements: n must be a constant multiple of 8.
std::string cudaEpilogueAuxRefusal(const TensorType& product);

// A product whose activation cuBLASLt applies in its epilogue: a loupe.fused {kind="epilogue"}
// group (passes/epilogue_fusion.cpp) of an aten.mm or aten.addmm that runsAsCudaLibraryKernel
// and the one node that reads it in the epilogue:
// - Relu, Gelu: an isCudaEpilogueActivation, the group's one result;
// - GeluAux: a tanh-GELU whose input, the product, is read elsewhere too (saved for GELU's
//   backward): the group yields both, and cuBLASLt writes the product from the epilogue's
//   auxiliary output beside the activation;
// - GeluBackward: an isCudaEpilogueGeluBackward whose gradient is the product (an aten.mm), its
//   pre-activation a group input that cuBLASLt reads as the epilogue's auxiliary input.
struct CudaMatmulEpilogue {
  enum class Kind { Relu, Gelu, GeluAux, GeluBackward };
  const Node* product = nullptr; // in the group's body
  Kind kind = Kind::Relu;
  size_t result = 0;    // the group's result cuBLASLt's epilogue stores (its D)
  size_t auxResult = 0; // GeluAux: the group's result that is the product before the GELU
  size_t auxInput = 0;  // GeluBackward: the group's input that is the pre-activation
};
std::optional<CudaMatmulEpilogue> cudaMatmulEpilogueOf(const Node& node);

// A bf16 or f16 product C (m x n) = A B whose n is not a multiple of 8 gets one of cuBLASLt's
// pre-Hopper kernels: its Hopper kernels store C with the tensor memory accelerator, which needs
// 16-byte aligned rows. GPT-2's logits, 512x768x50257 in bf16 on an H100, took 421 us that way
// and 63 us for n = 50256 (a C with 50257-element rows written in place still took 416 us).
// Such a product runs as two calls, the first cudaMatmulAlignedColumns(...) columns and the rest,
// into a buffer whose rows are padded to a multiple of 8 elements, then copied into C's rows.
// Returns those first columns, or 0 where the product runs as one call: other dtypes, batched
// products, and sizes below those measured (m >= 128, n >= 8192), where the copy may cost more
// than the kernel saves.
int64_t cudaMatmulAlignedColumns(DType dtype, int64_t batch, int64_t m, int64_t n);

// The row pitch, in elements, of the buffer such a split product writes: n rounded up past the
// aligned columns, so that both calls' rows start at 16-byte boundaries.
inline int64_t cudaMatmulStagingPitch(int64_t n) {
  return n / 8 * 8 + 8;
}

// The bytes of that buffer for a product (aten.mm or aten.addmm; a result of m x n): m rows of
// cudaMatmulStagingPitch(n) elements, where the product splits at its m, or for a symbolic m
// where it splits at some m (the rule is applied per call: a call at m < 128 leaves the buffer
// unused). Zero where it never splits. Kernel selection asks for it as the kernel's scratch
// (KernelChoice::scratchBytes), so memory planning places it in the arena.
SymExpr cudaMatmulStagingBytes(const Node& product);

} // namespace loupe
