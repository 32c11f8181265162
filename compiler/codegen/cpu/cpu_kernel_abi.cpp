// The host side of the kernel ABI (cpu_kernel_abi.h): a group's signature from its analysis,
// and the arguments a launch builds from concrete tensors.
#include "compiler/codegen/cpu/cpu_kernel_abi.h"

#include "compiler/codegen/cpu/group_analysis.h"
#include "compiler/ir/error.h"

namespace loupe {

CpuKernelSignature describeCpuKernel(const Node& node, const OpRegistry& registry) {
  try {
    cpu_codegen::GroupAnalysis group = cpu_codegen::analyzeGroup(node, registry);
    CpuKernelSignature signature{group.iterationShape, {}, group.scalars};
    for (const Value* input : group.inputs)
      signature.operandDims.push_back(cpu_codegen::operandDims(group, input));
    for (const Value* output : group.outputs)
      signature.operandDims.push_back(cpu_codegen::operandDims(group, output));
    return signature;
  } catch (const cpu_codegen::Unsupported& unsupported) {
    throw Error("codegen", "cannot generate a CPU kernel: " + unsupported.why,
                ErrorContext{.node = node.describe()});
  }
}

CpuKernelBinding bindCpuKernel(const CpuKernelSignature& signature,
                               const SymbolBindings& bindings) {
  CpuKernelBinding bound{evaluateShape(signature.iterationShape, bindings), {}};
  bound.scalars.reserve(signature.scalars.size());
  for (const SymExpr& scalar : signature.scalars)
    bound.scalars.push_back(scalar.evaluate(bindings));
  return bound;
}

void launchCpuKernel(CpuKernelFn kernel, const CpuKernelSignature& signature,
                     const CpuKernelBinding& bound, const std::vector<const Tensor*>& inputs,
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
    bool isInput = p < inputs.size();
    const Tensor& tensor = isInput ? *inputs[p] : *outputs[p - inputs.size()];
    const std::vector<size_t>& dims = signature.operandDims[p];
    // Built only on failure: it costs more than launching a small kernel.
    auto which = [&] {
      return (isInput ? "input " : "output ") + std::to_string(isInput ? p : p - inputs.size()) +
             " (" + tensor.describe() + ")";
    };
    if (tensor.rank() != dims.size())
      throw Error("runtime",
                  "kernel " + which() + " should have rank " + std::to_string(dims.size()));
    int64_t* operandStrides = strides.data() + p * rank;
    for (size_t j = 0; j < dims.size(); ++j) {
      bool walks = dims[j] != kNoIterationDim;
      if (walks && tensor.size(j) == sizes[dims[j]])
        operandStrides[dims[j]] = tensor.strides()[j];
      else if (tensor.size(j) != 1 || (!isInput && walks && sizes[dims[j]] != 1))
        throw Error("runtime", "kernel " + which() + " dim " + std::to_string(j) + " has size " +
                                   std::to_string(tensor.size(j)) +
                                   " where the iteration space has " +
                                   (walks ? std::to_string(sizes[dims[j]]) : std::string("1")));
    }
    data[p] = tensor.data();
    stridePointers[p] = operandStrides;
  }
  LoupeKernelArgs args{static_cast<int64_t>(rank), sizes.data(), data.data(), stridePointers.data(),
                       bound.scalars.data()};
  kernel(&args);
}

void launchCpuKernel(CpuKernelFn kernel, const CpuKernelSignature& signature,
                     const SymbolBindings& bindings, const std::vector<const Tensor*>& inputs,
                     const std::vector<Tensor*>& outputs) {
  launchCpuKernel(kernel, signature, bindCpuKernel(signature, bindings), inputs, outputs);
}

} // namespace loupe
