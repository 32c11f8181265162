// An in-place gather: aten._unsafe_index.Tensor whose index tensors take self's trailing dims
// and broadcast to a block of as many dims (x[:, :, rows, cols] with rows [H, 1] and cols [W]:
// nearest and bilinear upsampling). Result dim d is then self's dim d, so element (i0, ..., ik)
// of the result is self at (i0, ..., i(first-1), rows[..], cols[..]): an address a kernel
// computes from its loop indices and the index tensors' values at the same position (each
// index tensor, right-aligned, broadcasts into the result's shape like any operand).
//
// Generated pointwise code reads such a gather where its consumer runs instead of materialising
// it (passes/pointwise_fusion.cpp, compiler/codegen/gather_load.h): bilinear upsampling's four
// gathers and their weighted sum become one loop. Only the unchecked form is read that way: a
// kernel cannot raise, so it clamps an index into range where torch leaves the result
// undefined; aten.index.Tensor keeps its checked library kernel.
#pragma once

#include <optional>

#include "compiler/ir/graph.h"

namespace loupe {

// The first indexed dim of `node` when it is an in-place gather, else nullopt.
std::optional<size_t> inPlaceGatherFirstDim(const Node& node);

inline bool isInPlaceGather(const Node& node) {
  return inPlaceGatherFirstDim(node).has_value();
}

} // namespace loupe
