// The CUDA C++ of an analysed group: one translation unit holding the prelude, the parameter
// block struct and one extern "C" __global__ function per entry of its layout
// (docs/cuda-codegen.md, "Variants").
#pragma once

#include <string>

#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/codegen/group_analysis.h"

namespace loupe::cuda_codegen {

std::string emitCudaKernelSource(const codegen::GroupAnalysis& group,
                                 const CudaKernelLayout& layout, const OpRegistry& registry,
                                 const std::string& kernelName);

} // namespace loupe::cuda_codegen
