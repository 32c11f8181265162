// The layout of an analysed group as a CUDA kernel: which entries it has and what the launch
// planner needs to know of its operands. The emitter and describeCudaKernel both derive it from
// the same analysis, so the entries generated are the entries planned.
#pragma once

#include <string>

#include "compiler/codegen/cuda/cuda_kernel_abi.h"
#include "compiler/codegen/group_analysis.h"

namespace loupe::cuda_codegen {

CudaKernelLayout layoutOf(const codegen::GroupAnalysis& group);

// The __global__ name of `role`'s entry of the kernel generated as `kernelName`.
std::string entryName(const std::string& kernelName, CudaEntryRole role);

} // namespace loupe::cuda_codegen
