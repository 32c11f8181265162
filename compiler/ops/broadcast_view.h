// A broadcast view (aten.expand): its elements are its input's, repeated along the dims it
// broadcasts (right-aligned, as elementwise ops broadcast their operands). Inside a generated
// pointwise or reduction kernel, which computes every value per element of its iteration space,
// reading it is reading its input at the same position: the group reads the input itself, one
// value per row where it broadcasts, instead of a zero-stride view of the full shape (which no
// contiguous fast path takes: a global average pool's backward, `expand(g) / HW`, made every
// CNN's following activation backward run strided).
#pragma once

#include "compiler/ir/graph.h"

namespace loupe {

inline bool isBroadcastView(const Node& node) {
  return node.op() == "aten.expand" && node.numOperands() == 1 && node.numResults() == 1 &&
         node.operand(0) && node.operand(0)->type().isTensor() && node.result()->type().isTensor();
}

} // namespace loupe
