// The host side of the CPU kernel ABI (cpu_kernel_abi.h): the arguments a launch builds from
// concrete tensors.
#include "compiler/codegen/cpu/cpu_kernel_abi.h"

#include "compiler/ir/error.h"

namespace loupe {

void launchCpuKernel(CpuKernelFn kernel, const KernelSignature& signature,
                     const KernelBinding& bound, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs) {
  const std::vector<int64_t>& sizes = bound.sizes;
  size_t count = inputs.size() + outputs.size(), rank = sizes.size();
  if (count != signature.operandDims.size())
    throw Error("runtime", "kernel expects " + std::to_string(signature.operandDims.size()) +
                               " operands, got " + std::to_string(count));
  std::vector<int64_t> strides(count * rank, 0);
  std::vector<void*> data(count);
  std::vector<const int64_t*> stridePointers(count);
  for (size_t p = 0; p < count; ++p) {
    const Tensor& tensor = p < inputs.size() ? *inputs[p] : *outputs[p - inputs.size()];
    iterationStrides(signature, sizes, p, inputs.size(), tensor, strides.data() + p * rank);
    data[p] = tensor.data();
    stridePointers[p] = strides.data() + p * rank;
  }
  LoupeKernelArgs args{static_cast<int64_t>(rank), sizes.data(), data.data(), stridePointers.data(),
                       bound.scalars.data()};
  kernel(&args);
}

void launchCpuKernel(CpuKernelFn kernel, const KernelSignature& signature,
                     const SymbolBindings& bindings, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs) {
  launchCpuKernel(kernel, signature, bindKernel(signature, bindings), inputs, outputs);
}

} // namespace loupe
