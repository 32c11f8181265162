// Checks the structural rules every graph must satisfy, and throws Error("verify") naming the
// first offending node: operands defined before use and visible in the graph (fused bodies are
// isolated), unique value names per graph, registered ops have the operand count, required
// attributes and result types their inference gives, fused bodies match their node's operands
// and results, and graph outputs are visible values.
#pragma once

#include "compiler/ir/graph.h"

namespace loupe {

void verify(const Graph& graph);

} // namespace loupe
