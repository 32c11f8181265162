// A seeded generator of graphs that use every corner of the IR the .lir format must carry:
// odd names, symbolic dims, strides, devices, index types, every attribute kind with awkward
// floats and strings, none operands, multi- and zero-result nodes, nested fused bodies.
// Graphs are structurally valid (names unique per scope, operands defined before use) but
// not type-correct: the text format does not depend on op semantics.
#pragma once

#include <cstdint>
#include <memory>

#include "compiler/ir/graph.h"

namespace loupe::testing {

std::unique_ptr<Graph> randomGraph(uint64_t seed);

} // namespace loupe::testing
