// An in-place gather's load (gather_load.h).
#include "compiler/codegen/gather_load.h"

#include <algorithm>

#include "compiler/codegen/scalar_expression.h"
#include "compiler/ops/in_place_gather.h"

namespace loupe::codegen {

namespace {

// A size of the gathered input as kernel text: a literal, or its run-time scalar.
std::string sizeText(const SymExpr& size, const std::vector<SymExpr>& scalars) {
  if (size.isConstant()) return std::to_string(*size.constant()) + "LL";
  auto found = std::find(scalars.begin(), scalars.end(), size);
  if (found == scalars.end())
    throw Unsupported{"gathered size " + size.str() + " is not a run-time scalar"};
  return "static_cast<int64_t>(" + scalarName(static_cast<size_t>(found - scalars.begin())) + ")";
}

} // namespace

std::string gatherLoad(const Node& gather, const GroupAnalysis& group,
                       const std::map<const Value*, std::string>& names,
                       const std::function<std::string(size_t, size_t)>& stride,
                       const std::string& indexType) {
  const Value* source = gather.operand(0);
  size_t p = static_cast<size_t>(std::find(group.inputs.begin(), group.inputs.end(), source) -
                                 group.inputs.begin());
  size_t first = *inPlaceGatherFirstDim(gather);
  const Shape& shape = source->tensorType().shape;
  auto which = std::find(group.gathers.begin(), group.gathers.end(), &gather);
  bool inBounds =
      which != group.gathers.end() &&
      group.gatherIndicesInBounds.at(static_cast<size_t>(which - group.gathers.begin()));
  std::string offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string at = "i" + std::to_string(d);
    if (d >= first) {
      std::string index = "static_cast<int64_t>(" + names.at(gather.operand(d + 1)) + ")";
      at = inBounds
               ? index
               : "loupe_gather_index(" + index + ", " + sizeText(shape[d], group.scalars) + ")";
      if (indexType != "int64_t") at = "static_cast<" + indexType + ">(" + at + ")";
    }
    offset += (offset.empty() ? "" : " + ") + at + " * " + stride(p, d);
  }
  return loadExpr(source->tensorType().dtype, "p" + std::to_string(p) + "[" + offset + "]");
}

} // namespace loupe::codegen
