// Fingerprints of what a pass may change, so that the pass manager, not the pass, says whether a
// pass changed anything (as MLIR's OperationFingerPrint in IRPrinting.cpp). A pass's own word
// was wrong too often: memory-planning always said yes, so --print-after-change printed graphs
// that had not changed. Equal fingerprints mean, up to a 64-bit hash collision, an equal graph
// or plan; a walk over the structure, no text is printed.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"
#include "compiler/pass/plan.h"

namespace loupe {

// Everything the .lir text of `graph` holds: names, ops, operands, attributes, result types,
// source locations, outputs and fused bodies. Values are identified by their position, as the
// printer numbers them, so a node replaced by an identical one leaves the fingerprint as it was.
uint64_t graphFingerprint(const Graph& graph);

// Every kernel choice and the memory plan.
uint64_t planFingerprint(const Plan& plan);

} // namespace loupe
