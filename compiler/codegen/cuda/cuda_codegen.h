// CUDA source generation: a fused group (loupe.fused with kind "pointwise" or "reduction") or a
// single Elementwise/Reduction node becomes one translation unit of extern "C" __global__ entries,
// one per variant (cuda_kernel_abi.h says which the host picks, and how it calls them), compiled
// by NVRTC (nvrtc_compiler.h). docs/cuda-codegen.md describes the whole.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace loupe {

struct GeneratedCudaKernel {
  std::string source;               // complete translation unit
  std::vector<std::string> entries; // the __global__ names, in describeCudaKernel's entry order
  std::string strategy;             // one line for the trace: how it is parallelised and why
};

// Ops the CUDA target runs as a copy of their one input into their contiguous result (aten.clone,
// aten.lift_fresh_copy): kernel selection plans them as the library kernel "cuda:strided-copy",
// which the runtime's copy (a memcpy, or its strided copy kernel) carries out.
bool isCudaCopyOp(const std::string& op);

// Whether a CUDA kernel is generated for this node; when not, `whyNot` says why. Refuses what the
// CPU generator refuses (group_analysis.h), and a parameter block over 4 KB.
bool canGenerateCudaKernel(const Node& node, std::string* whyNot,
                           const OpRegistry& registry = OpRegistry::global());

// Throws Error("codegen", ...) with the reason when canGenerateCudaKernel is false. The entries
// are named loupe_<kernelName> (the strided or per-output one), loupe_<kernelName>_vec,
// loupe_<kernelName>_row, _rowvec and _split, non-identifier characters replaced by '_'.
GeneratedCudaKernel generateCudaKernel(const Node& node, const std::string& kernelName,
                                       const OpRegistry& registry = OpRegistry::global());

// generateCudaKernel with the kernel named after its content: the first 12 hex digits of the
// SHA-256 of its source written under a placeholder name (entries loupe_<digits>_vec, ...). The
// same group then generates the same source wherever it appears (each layer of a model), and
// NVRTC compiles it once: NvrtcCompiler::build compiles each distinct source once, and the kernel
// cache keys by source. The name is also stable across compiles, runs and input sizes.
GeneratedCudaKernel
generateCudaKernelNamedByContent(const Node& node,
                                 const OpRegistry& registry = OpRegistry::global());

} // namespace loupe
