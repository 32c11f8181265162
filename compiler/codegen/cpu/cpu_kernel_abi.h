// The calling convention between the runtime and a generated CPU kernel: one struct of pointers
// to the iteration space's sizes, each operand's data and strides in that space, and the scalar
// arguments (compiler/codegen/kernel_signature.h says what they are).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/codegen/kernel_signature.h"
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
  const int64_t* scalars;        // symbolic attribute values, as KernelSignature::scalars
};

using CpuKernelFn = void (*)(const LoupeKernelArgs*);

// Builds the arguments from concrete tensors (any strides; a size-1 dim broadcasts) and calls
// the kernel. Throws Error("runtime", ...) naming the operand when a size does not fit.
void launchCpuKernel(CpuKernelFn kernel, const KernelSignature& signature,
                     const KernelBinding& bound, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs);
// The same, binding the signature first.
void launchCpuKernel(CpuKernelFn kernel, const KernelSignature& signature,
                     const SymbolBindings& bindings, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs);

} // namespace loupe
