// What the runtime needs to know to call a generated kernel, whatever the device: the iteration
// space it walks and how each operand is indexed in it.
//
// A kernel walks one iteration space: the output shape for a pointwise group, the shape of the
// reduced tensor for a reduction group. Every operand (inputs, then outputs) is described by its
// strides in that space, in elements, with 0 along dims it is broadcast over (and, for values
// after the reduction, along the reduced dims). Kernels are generated once per graph, so sizes
// and symbolic attribute values are run-time arguments: symbolic shapes need no recompilation.
// The CPU ABI (cpu/cpu_kernel_abi.h) and the CUDA one (cuda/cuda_kernel_abi.h) pass these.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// Operand dims of size 1 that index no iteration dim (kept reduced dims with keepdim=true).
constexpr size_t kNoIterationDim = std::numeric_limits<size_t>::max();

struct KernelSignature {
  Shape iterationShape;
  // Inputs then outputs: for each dim of the operand, the iteration dim it is indexed by, or
  // kNoIterationDim.
  std::vector<std::vector<size_t>> operandDims;
  // Symbolic attributes of the group's ops (aten.div.Scalar {other=24*s0}), evaluated with the
  // run's bindings into the kernel's scalar arguments.
  std::vector<SymExpr> scalars;
  // Per input: read by in-place gathers at computed addresses (codegen/group_analysis.h), so
  // passed with its own strides, its sizes unchecked against the space (the kernel clamps).
  std::vector<bool> gathered;
};

namespace codegen {
struct GroupAnalysis;
}
// The signature of an analysed group: every device's generator describes its kernels this way.
KernelSignature signatureOf(const codegen::GroupAnalysis& group);

// Throws Error("codegen", ...) when the group is not one generated code supports (see
// canGenerateCpuKernel).
KernelSignature describeKernel(const Node& node, const OpRegistry& registry = OpRegistry::global());

// A signature's sizes and scalars under one binding of the graph's symbols; an executable works
// them out once per binding instead of once per call.
struct KernelBinding {
  std::vector<int64_t> sizes;   // of the iteration space
  std::vector<int64_t> scalars; // KernelSignature::scalars evaluated
};
KernelBinding bindKernel(const KernelSignature& signature, const SymbolBindings& bindings);

// Operand `p`'s strides in the iteration space of `sizes` (rank entries written to `strides`,
// 0 where it broadcasts): `tensor` is input p, or output p - numInputs. A size-1 dim broadcasts.
// Throws Error("runtime", ...) naming the operand when its rank or a size does not fit.
void iterationStrides(const KernelSignature& signature, const std::vector<int64_t>& sizes, size_t p,
                      size_t numInputs, const Tensor& tensor, int64_t* strides);

} // namespace loupe
