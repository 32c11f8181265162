// What the fusion passes share: a partition of a graph's nodes into groups that may each become
// one loupe.fused node, and the rewrite that collapses a group into that node.
//
// A group must stay a convex region (no path leaves it and re-enters it), or collapsing it
// would create a cycle. The partition checks every merge against the groups formed so far,
// treating each as one unit, so the graph of groups stays acyclic and every group can be
// collapsed, in any order.
//
// A fused node's body reads the values the group uses from outside through its inputs, in order
// of first use, and yields the group's values that are used outside (by other nodes or as graph
// outputs), so nothing is recomputed. Members that are themselves fused groups are inlined, so a
// body never nests another group.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/graph.h"

namespace loupe {

// An Elementwise op with a scalar expression for generated code and one tensor result, or a
// fused group of kind "pointwise" without gathers: what any fused group may hold. (A pointwise
// group may also hold in-place gathers, compiler/ops/in_place_gather.h.)
bool isFusablePointwise(const Node& node);

class FusionPartition {
public:
  // Every top-level node of `graph` starts alone in its own group.
  explicit FusionPartition(const Graph& graph);

  int groupOf(const Node* node) const { return groupOf_.at(node); }
  const std::vector<Node*>& members(int group) const { return members_.at(group); } // graph order

  // Whether the union of the two groups is convex with respect to the current partition.
  bool canMerge(int a, int b) const;
  // Whether every result of `node` is read only inside `group` and none is a graph output: a
  // producer a group may compute inside itself without writing the value out.
  bool readOnlyBy(const Node& node, int group) const;
  void merge(int into, int from); // `from` becomes empty

  // Replaces every group of two or more nodes by a loupe.fused node with kind=`kind`; returns
  // how many were created. The partition is spent afterwards.
  int materialize(const std::string& kind);

private:
  std::unordered_map<const Node*, size_t> position_;
  std::unordered_map<const Node*, int> groupOf_;
  std::vector<std::vector<Node*>> members_;
};

// Replaces `members` (of one graph, forming a convex group) by a loupe.fused node with the
// attribute kind=`kind` ("pointwise" or "reduction") and returns it. Nodes between the members
// that depend on the group are moved after the fused node, which keeps the order topological.
Node* createFusedGroup(const std::vector<Node*>& members, const std::string& kind);

} // namespace loupe
