// shape-propagation: recomputes the result types of every registered node, in order, from its
// operands' types and its attributes through the op registry's inference. Graph inputs may have
// been made symbolic (s0 instead of 8) or changed dtype since the graph was built; this pass
// carries that change to every value so later passes, the verifier and the memory planner see
// consistent types. It is an analysis: it makes no decisions and rewrites no node. Opaque ops
// keep the types they were given; fused groups are propagated through their bodies.
#include "compiler/ir/error.h"
#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

bool setTypes(Node& node, const std::vector<Type>& types) {
  if (types.size() != node.numResults())
    throw Error("shape",
                "inference gives " + std::to_string(types.size()) + " results but the node has " +
                    std::to_string(node.numResults()),
                ErrorContext{.node = node.describe()});
  bool changed = false;
  for (size_t i = 0; i < types.size(); ++i) {
    if (node.result(i)->type() == types[i]) continue;
    node.result(i)->setType(types[i]);
    changed = true;
  }
  return changed;
}

bool propagate(Graph& graph);

// A fused body sees its node's operands as its inputs and yields its node's results.
bool propagateFused(Node& node) {
  Graph& body = *node.body();
  bool changed = false;
  for (size_t i = 0; i < body.numInputs() && i < node.numOperands(); ++i) {
    if (!node.operand(i) || body.input(i)->type() == node.operand(i)->type()) continue;
    body.input(i)->setType(node.operand(i)->type());
    changed = true;
  }
  changed |= propagate(body);
  std::vector<Type> yielded;
  for (const Value* out : body.outputs())
    yielded.push_back(out->type());
  return setTypes(node, yielded) || changed;
}

bool propagate(Graph& graph) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->hasBody()) {
      changed |= propagateFused(*node);
      continue;
    }
    const OpInfo* info = registeredOp(*node);
    if (info && info->infer) changed |= setTypes(*node, inferTypes(*info, *node));
  }
  return changed;
}

class ShapePropagationPass : public TablePass<PassId::ShapePropagationPass> {
public:
  bool run(Graph& graph, PassContext&) override { return propagate(graph); }
};

} // namespace

std::unique_ptr<Pass> createShapePropagationPass() {
  return std::make_unique<ShapePropagationPass>();
}

} // namespace loupe
