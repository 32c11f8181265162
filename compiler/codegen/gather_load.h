// The element an in-place gather (compiler/ops/in_place_gather.h) reads, as C++ for a kernel
// body, which every device's generator spells the same way: the gathered input p<k> at the loop
// indices i<d> for the dims before the first indexed one, and at each index tensor's value for
// the rest, a negative index counted from the end and any index clamped into its dim
// (loupe_gather_index, in both kernel preludes), so a kernel never reads outside the input; an
// index the group analysis proved within its dim (a constant: GroupAnalysis::
// gatherIndicesInBounds) is read as it is.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "compiler/codegen/group_analysis.h"

namespace loupe::codegen {

// `names`: the kernel's names of the values computed so far (the gather's index operands among
// them); `stride(p, d)`: the kernel's text for operand p's stride along dim d; `indexType`: the
// integer type the clamped indices are multiplied in (int32_t where the caller knows every
// offset fits).
std::string gatherLoad(const Node& gather, const GroupAnalysis& group,
                       const std::map<const Value*, std::string>& names,
                       const std::function<std::string(size_t, size_t)>& stride,
                       const std::string& indexType = "int64_t");

} // namespace loupe::codegen
