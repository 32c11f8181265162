// Dimension arguments as torch accepts them: negative dims count from the end, a 0-d tensor
// accepts dim 0 and -1, and a reduction's dim list may be absent or empty to mean every dim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/error.h"
#include "compiler/ir/sym_expr.h"

namespace loupe {

// `dim` in [-rank, rank) (a 0-d tensor behaves as rank 1) as an index in [0, rank).
inline size_t normalizeDim(int64_t dim, size_t rank, std::string_view opName) {
  const int64_t extent = rank == 0 ? 1 : static_cast<int64_t>(rank);
  if (dim < -extent || dim >= extent)
    throw Error("shape", std::string(opName) + ": dim " + std::to_string(dim) +
                             " out of range for a tensor of rank " + std::to_string(rank));
  return static_cast<size_t>(dim < 0 ? dim + extent : dim);
}

// Which dims a reduction removes, from its `dim` attribute: an int list, a single int, or
// none/missing/[] for all of them. Repeated dims are rejected as torch does.
inline std::vector<bool> reducedDims(const AttrMap& attrs, std::string_view attrName, size_t rank,
                                     std::string_view opName) {
  std::vector<int64_t> dims;
  if (const Attribute* a = attrs.find(attrName); a && std::holds_alternative<SymExpr>(*a))
    dims = {attrs.getInt(attrName)};
  else if (!attrs.isNone(attrName))
    dims = attrs.getInts(attrName);
  std::vector<bool> reduced(rank, dims.empty());
  for (int64_t d : dims) {
    size_t index = normalizeDim(d, rank, opName);
    if (rank == 0) continue;
    if (reduced[index])
      throw Error("shape", std::string(opName) + ": dim " + std::to_string(d) +
                               " appears more than once in the reduction list");
    reduced[index] = true;
  }
  return reduced;
}

// The shape left after reducing `reduced` dims: kept as 1 with keepdim, dropped otherwise.
inline Shape reducedShape(const Shape& shape, const std::vector<bool>& reduced, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i])
      out.push_back(shape[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// The number of elements a reduction combines into each output element.
inline SymExpr reducedCount(const Shape& shape, const std::vector<bool>& reduced) {
  SymExpr count = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (reduced[i]) count *= shape[i];
  return count;
}

} // namespace loupe
