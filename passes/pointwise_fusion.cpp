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
// - an in-place gather (compiler/ops/in_place_gather.h: upsampling's _unsafe_index) joins the
//   group of its consumers and index producers like an elementwise op, so the kernel reads its
//   elements where they are used; the value it gathers from stays outside the group and is read
//   by nothing else in it (the kernel addresses it by its own strides);
// - a broadcast view (aten.expand, compiler/ops/broadcast_view.h) joins the group of its
//   consumers, which then read its input itself, broadcast as any operand is;
// - a group of one node stays a plain node.
#include <algorithm>
#include <memory>

#include "compiler/ops/broadcast_view.h"
#include "compiler/ops/in_place_gather.h"
#include "compiler/pass/fusion_group.h"
#include "passes/pipeline.h"

namespace loupe {

namespace {

// A broadcast view joins where it is read by pointwise ops alone: a group holding it reads its
// input; one also read by another kind of op would be written out at full size.
bool readByPointwiseOnly(const Node& view) {
  const Value* result = view.result();
  if (result->isGraphOutput()) return false;
  const auto& users = result->users();
  return std::all_of(users.begin(), users.end(),
                     [](const Node* user) { return isFusablePointwise(*user); });
}

bool joinsPointwiseGroups(const Node& node) {
  return isFusablePointwise(node) || isInPlaceGather(node) ||
         (isBroadcastView(node) && readByPointwiseOnly(node));
}

// Whether the union of groups `a` and `b` would gather from a value it computes or also reads
// in place.
bool gathersFromInside(const FusionPartition& partition, int a, int b) {
  auto merged = [&](const Node* node) {
    int group = partition.groupOf(node);
    return group == a || group == b;
  };
  for (int group : {a, b})
    for (const Node* gather : partition.members(group)) {
      if (!isInPlaceGather(*gather)) continue;
      const Value* source = gather->operand(0);
      if (const Node* producer = source->definingNode(); producer && merged(producer)) return true;
      for (const Node* user : source->users())
        for (size_t k = 0; k < user->numOperands(); ++k)
          if (user->operand(k) == source && !(k == 0 && isInPlaceGather(*user)) && merged(user))
            return true;
    }
  return false;
}

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
      if (!joinsPointwiseGroups(*node)) continue;
      for (size_t k = isInPlaceGather(*node) ? 1 : 0; k < node->numOperands(); ++k) {
        Value* operand = node->operand(k);
        Node* producer = operand ? operand->definingNode() : nullptr;
        if (!producer || !joinsPointwiseGroups(*producer)) continue;
        int into = partition.groupOf(producer);
        int from = partition.groupOf(node);
        if (into == from || resultShape(*producer) != resultShape(*node) ||
            !partition.canMerge(into, from) || gathersFromInside(partition, into, from))
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
