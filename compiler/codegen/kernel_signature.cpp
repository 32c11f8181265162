// A generated kernel's signature from its group's analysis, and operand strides from concrete
// tensors (kernel_signature.h).
#include "compiler/codegen/kernel_signature.h"

#include "compiler/codegen/group_analysis.h"
#include "compiler/ir/error.h"

namespace loupe {

KernelSignature signatureOf(const codegen::GroupAnalysis& group) {
  KernelSignature signature{group.iterationShape, {}, group.scalars, group.gathered};
  for (const Value* input : group.inputs)
    signature.operandDims.push_back(codegen::operandDims(group, input));
  for (const Value* output : group.outputs)
    signature.operandDims.push_back(codegen::operandDims(group, output));
  return signature;
}

KernelSignature describeKernel(const Node& node, const OpRegistry& registry) {
  try {
    return signatureOf(codegen::analyzeGroup(node, registry));
  } catch (const codegen::Unsupported& unsupported) {
    throw Error("codegen", "cannot generate a kernel: " + unsupported.why,
                ErrorContext{.node = node.describe()});
  }
}

KernelBinding bindKernel(const KernelSignature& signature, const SymbolBindings& bindings) {
  KernelBinding bound{evaluateShape(signature.iterationShape, bindings), {}};
  bound.scalars.reserve(signature.scalars.size());
  for (const SymExpr& scalar : signature.scalars)
    bound.scalars.push_back(scalar.evaluate(bindings));
  return bound;
}

void iterationStrides(const KernelSignature& signature, const std::vector<int64_t>& sizes, size_t p,
                      size_t numInputs, const Tensor& tensor, int64_t* strides) {
  bool isInput = p < numInputs;
  const std::vector<size_t>& dims = signature.operandDims.at(p);
  // Built only on failure: it costs more than launching a small kernel.
  auto which = [&] {
    return (isInput ? "input " : "output ") + std::to_string(isInput ? p : p - numInputs) + " (" +
           tensor.describe() + ")";
  };
  if (tensor.rank() != dims.size())
    throw Error("runtime",
                "kernel " + which() + " should have rank " + std::to_string(dims.size()));
  std::fill(strides, strides + sizes.size(), 0);
  if (isInput && p < signature.gathered.size() && signature.gathered[p]) {
    std::copy(tensor.strides().begin(), tensor.strides().end(), strides);
    return;
  }
  for (size_t j = 0; j < dims.size(); ++j) {
    bool walks = dims[j] != kNoIterationDim;
    if (walks && tensor.size(j) == sizes[dims[j]])
      strides[dims[j]] = tensor.strides()[j];
    else if (tensor.size(j) != 1 || (!isInput && walks && sizes[dims[j]] != 1))
      throw Error("runtime", "kernel " + which() + " dim " + std::to_string(j) + " has size " +
                                 std::to_string(tensor.size(j)) +
                                 " where the iteration space has " +
                                 (walks ? std::to_string(sizes[dims[j]]) : std::string("1")));
  }
}

} // namespace loupe
