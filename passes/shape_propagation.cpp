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

void setTypes(Node& node, const std::vector<Type>& types) {
  if (types.size() != node.numResults())
    throw Error("shape",
                "inference gives " + std::to_string(types.size()) + " results but the node has " +
                    std::to_string(node.numResults()),
                ErrorContext{.node = node.describe()});
  // A type equal to the current one keeps its spelling (strides given or not).
  for (size_t i = 0; i < types.size(); ++i)
    if (node.result(i)->type() != types[i]) node.result(i)->setType(types[i]);
}

void propagate(Graph& graph);

// A fused body sees its node's operands as its inputs and yields its node's results.
void propagateFused(Node& node) {
  Graph& body = *node.body();
  for (size_t i = 0; i < body.numInputs() && i < node.numOperands(); ++i)
    if (node.operand(i) && body.input(i)->type() != node.operand(i)->type())
      body.input(i)->setType(node.operand(i)->type());
  propagate(body);
  std::vector<Type> yielded;
  for (const Value* out : body.outputs())
    yielded.push_back(out->type());
  setTypes(node, yielded);
}

void propagate(Graph& graph) {
  for (Node* node : graph.nodes()) {
    if (node->hasBody()) {
      propagateFused(*node);
      continue;
    }
    const OpInfo* info = registeredOp(*node);
    if (info && info->infer) setTypes(*node, inferTypes(*info, *node));
  }
}

class ShapePropagationPass : public TablePass<PassId::ShapePropagationPass> {
public:
  void run(Graph& graph, PassContext&) override { propagate(graph); }
};

} // namespace

std::unique_ptr<Pass> createShapePropagationPass() {
  return std::make_unique<ShapePropagationPass>();
}

} // namespace loupe
