// Hand-written CPU kernels backed by BLAS: aten.mm and aten.bmm as one gemm per matrix, 2-D
// aten.convolution as im2col followed by a gemm per image and group. Inputs may be strided
// views (transposed operands go to BLAS as transposes, anything else is packed first).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/runtime/tensor.h"

namespace loupe {

// Whether a library kernel handles this node (op, dtypes, attributes); when not, why.
bool hasCpuLibraryKernel(const Node& node, std::string* whyNot);

// `attrs` are the node's attributes with symbols bound; `outputs` are preallocated and
// contiguous, with the node's result shapes.
void runCpuLibraryKernel(const Node& node, const AttrMap& attrs,
                         const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs);

} // namespace loupe
