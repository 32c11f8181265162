// The calling convention between the runtime and a generated CPU kernel.
//
// A kernel walks one iteration space: the output shape for a pointwise group, the shape of the
// reduced tensor for a reduction group. Every operand (inputs, then outputs) is described by
// its strides in that space, in elements, with 0 along dims it is broadcast over (and, for
// values after the reduction, along the reduced dims). Kernels are generated once per graph,
// so sizes and symbolic attribute values are run-time arguments: symbolic shapes need no
// recompilation.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// Mirrored field for field in the prelude of every generated translation unit (kernel_prelude.cpp).
struct LoupeKernelArgs {
  int64_t rank;                  // of the iteration space
  const int64_t* sizes;          // [rank]
  void* const* data;             // inputs then outputs, element 0 of each
  const int64_t* const* strides; // per operand: [rank] strides in the iteration space
  const int64_t* scalars;        // symbolic attribute values, as CpuKernelSignature::scalars
};

using CpuKernelFn = void (*)(const LoupeKernelArgs*);

// Operand dims of size 1 that index no iteration dim (kept reduced dims with keepdim=true).
constexpr size_t kNoIterationDim = std::numeric_limits<size_t>::max();

struct CpuKernelSignature {
  Shape iterationShape;
  // Inputs then outputs: for each dim of the operand, the iteration dim it is indexed by, or
  // kNoIterationDim.
  std::vector<std::vector<size_t>> operandDims;
  // Symbolic attributes of the group's ops (aten.div.Scalar {other=24*s0}), evaluated with the
  // run's bindings into LoupeKernelArgs::scalars.
  std::vector<SymExpr> scalars;
};

// Throws Error("codegen", ...) when the node is not supported (see canGenerateCpuKernel).
CpuKernelSignature describeCpuKernel(const Node& node,
                                     const OpRegistry& registry = OpRegistry::global());

// A signature's sizes and scalars under one binding of the graph's symbols; an executable works
// them out once per binding instead of once per call.
struct CpuKernelBinding {
  std::vector<int64_t> sizes;   // of the iteration space
  std::vector<int64_t> scalars; // CpuKernelSignature::scalars evaluated
};
CpuKernelBinding bindCpuKernel(const CpuKernelSignature& signature, const SymbolBindings& bindings);

// Builds the arguments from concrete tensors (any strides; a size-1 dim broadcasts) and calls
// the kernel. Throws Error("runtime", ...) naming the operand when a size does not fit.
void launchCpuKernel(CpuKernelFn kernel, const CpuKernelSignature& signature,
                     const CpuKernelBinding& bound, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs);
// The same, binding the signature first.
void launchCpuKernel(CpuKernelFn kernel, const CpuKernelSignature& signature,
                     const SymbolBindings& bindings, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs);

} // namespace loupe
