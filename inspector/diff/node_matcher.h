// Matches the nodes of two graphs of the same code: by structure (what feeds what), op and
// source location, never by value names or shapes, so two compiles of one frame at different
// input shapes match node for node, and an inserted, deleted or reordered node leaves the rest
// matched. docs/differ.md describes the algorithm; it is O(n log n) in the number of nodes.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace loupe::diff {

struct NodeMatching {
  // Matched top-level nodes, in graph A's order. When both sides of a pair are fused groups
  // their bodies are matched too, and those pairs follow the group's pair.
  std::vector<std::pair<const Node*, const Node*>> pairs;
  std::vector<const Node*> onlyInA, onlyInB; // each in its graph's order
  std::unordered_map<const Node*, const Node*> aToB, bToA;
  // Graph inputs are matched by their ordinal among tensor inputs (see dim_abstraction.h).
};

NodeMatching matchNodes(const Graph& a, const Graph& b);

} // namespace loupe::diff
