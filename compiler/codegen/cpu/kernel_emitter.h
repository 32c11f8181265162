// Emitting C++ for an analysed group: one extern "C" function (cpu_kernel_abi.h) that walks the
// group's iteration space with loops whose bounds are run-time arguments. Op semantics stay in
// the registry (an Elementwise op's scalar expression, a Reduction op's recipe); the emitter
// arranges loops, loads, stores and type conversions around them, with a contiguous fast path
// and OpenMP parallel loops (docs/cpu-codegen.md).
#pragma once

#include <string>

#include "compiler/codegen/group_analysis.h"
#include "compiler/ops/op_registry.h"

namespace loupe::cpu_codegen {

// The complete translation unit: the prelude, then the function `entry`.
std::string emitKernelSource(const codegen::GroupAnalysis& group, const OpRegistry& registry,
                             const std::string& entry);

} // namespace loupe::cpu_codegen
