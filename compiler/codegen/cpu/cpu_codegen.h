// C++ source generation for CPU kernels: a fused group (loupe.fused with kind "pointwise" or
// "reduction") or a single Elementwise/Reduction node becomes one extern "C" function. The
// kernel-selection pass calls this so the source is recorded in the plan (and the trace); the
// executable compiles it (cpu_compiler.h).
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

struct GeneratedKernel {
  std::string entry;  // extern "C" symbol name
  std::string source; // complete translation unit
};

// Whether generated code supports this node; when not, `whyNot` says why (for the trace).
// Op semantics come from `registry` (the built-in ops unless a caller supplies its own).
// The ABI of the generated function is described in cpu_kernel_abi.h and docs/cpu-codegen.md.
bool canGenerateCpuKernel(const Node& node, std::string* whyNot,
                          const OpRegistry& registry = OpRegistry::global());
// The extern "C" symbol of the kernel generated under `kernelName`.
std::string cpuKernelEntry(const std::string& kernelName);

// Throws Error("codegen", ...) with the reason when canGenerateCpuKernel is false.
GeneratedKernel generateCpuKernel(const Node& node, const std::string& kernelName,
                                  const OpRegistry& registry = OpRegistry::global());

} // namespace loupe
