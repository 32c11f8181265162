// Pointwise fusion: groups connected elementwise ops into loupe.fused {kind="pointwise"} nodes,
// so that generated code computes a chain such as mul -> add -> relu in one loop without
// materialising the intermediates.
//
// Walking the graph in order, each fusable elementwise node (an Elementwise op with a scalar
// expression, see isFusablePointwise) joins the groups of its fusable producers, one merge per
// decision. Rules, kept simple on purpose:
// - every node of a group has the same result shape; operands may broadcast into it, but a
//   group never changes the iteration space, so it is one loop nest;
// - a producer with consumers outside the group is fused anyway and its value becomes an output
//   of the group: nothing is ever recomputed;
// - groups never include non-elementwise or opaque ops, and a merge is refused when a path would
//   leave the group and re-enter it (through another op or group), which would create a cycle;
// - a group of one node stays a plain node.
#include <memory>

#include "compiler/pass/fusion_group.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

const Shape& resultShape(const Node& node) {
  return node.result()->tensorType().shape;
}

std::string describeMerge(const FusionPartition& partition, int into, int from) {
  const auto& joining = partition.members(from);
  std::string what = joining.size() == 1 ? "fuse " + joining.front()->describe()
                                         : "merge group of " + joining.front()->describe();
  return "pointwise-fusion: " + what + " into group of " +
         partition.members(into).front()->describe();
}

class PointwiseFusionPass : public TablePass<PassId::PointwiseFusionPass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    FusionPartition partition(graph);
    for (Node* node : graph.nodes()) {
      if (!isFusablePointwise(*node)) continue;
      for (Value* operand : node->operands()) {
        Node* producer = operand ? operand->definingNode() : nullptr;
        if (!producer || !isFusablePointwise(*producer)) continue;
        int into = partition.groupOf(producer);
        int from = partition.groupOf(node);
        if (into == from || resultShape(*producer) != resultShape(*node) ||
            !partition.canMerge(into, from))
          continue;
        if (!ctx.decide("fusion", [&] { return describeMerge(partition, into, from); },
                        {producer->result()->name(), node->result()->name()}))
          continue;
        partition.merge(into, from);
      }
    }
    partition.materialize("pointwise");
  }
};

} // namespace

std::unique_ptr<Pass> createPointwiseFusionPass() {
  return std::make_unique<PointwiseFusionPass>();
}

} // namespace loupe
