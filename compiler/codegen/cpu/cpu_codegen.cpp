// The entry points of CPU code generation (cpu_codegen.h): a group is analysed
// (group_analysis.h), then emitted (kernel_emitter.h).
#include "compiler/codegen/cpu/cpu_codegen.h"

#include <algorithm>
#include <cctype>

#include "compiler/codegen/cpu/kernel_emitter.h"
#include "compiler/codegen/group_analysis.h"
#include "compiler/ir/error.h"

namespace loupe {

bool canGenerateCpuKernel(const Node& node, std::string* whyNot, const OpRegistry& registry) {
  try {
    codegen::GroupAnalysis group = codegen::analyzeGroup(node, registry);
    // Refuses an input of higher rank than its space here rather than when it is launched.
    for (const Value* input : group.inputs)
      codegen::operandDims(group, input);
    return true;
  } catch (const codegen::Unsupported& unsupported) {
    if (whyNot) *whyNot = unsupported.why;
  } catch (const Error& error) {
    if (whyNot) *whyNot = error.message();
  }
  return false;
}

std::string cpuKernelEntry(const std::string& kernelName) {
  std::string entry = "loupe_kernel_" + kernelName;
  std::replace_if(
      entry.begin(), entry.end(), [](char c) { return !std::isalnum(c) && c != '_'; }, '_');
  return entry;
}

GeneratedKernel generateCpuKernel(const Node& node, const std::string& kernelName,
                                  const OpRegistry& registry) {
  std::string why;
  if (!canGenerateCpuKernel(node, &why, registry))
    throw Error("codegen", "cannot generate a CPU kernel: " + why,
                ErrorContext{.node = node.describe()});
  std::string entry = cpuKernelEntry(kernelName);
  codegen::GroupAnalysis group = codegen::analyzeGroup(node, registry);
  return {entry, cpu_codegen::emitKernelSource(group, registry, entry)};
}

} // namespace loupe
