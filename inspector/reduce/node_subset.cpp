#include "inspector/reduce/node_subset.h"

#include <set>

namespace loupe {

NodeSubset extractNodeSubset(const Graph& graph, const std::vector<bool>& keep,
                             const std::vector<Tensor>& inputs,
                             const std::map<const Value*, Tensor>& values) {
  NodeSubset subset{std::make_unique<Graph>(graph.name()), {}};
  Graph& small = *subset.graph;
  std::map<const Value*, Value*> mapped; // value of `graph` -> value of the smaller graph
  auto valueFor = [&](Value* value) -> Value* {
    if (!value) return nullptr; // an absent optional operand
    if (auto it = mapped.find(value); it != mapped.end()) return it->second;
    // An input of the whole graph, or the result of a dropped node: an input here.
    Value* input = small.addInput(value->type(), value->name());
    subset.inputs.push_back(value->definingNode() ? values.at(value) : inputs.at(value->index()));
    return mapped[value] = input;
  };

  std::vector<Node*> nodes = graph.nodes();
  std::set<const Node*> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!keep.at(i)) continue;
    const Node& node = *nodes[i];
    kept.insert(&node);
    std::vector<Value*> operands;
    for (Value* operand : node.operands())
      operands.push_back(valueFor(operand));
    std::vector<Type> types;
    for (Value* result : node.results())
      types.push_back(result->type());
    Node* copy = small.createNode(node.op(), operands, types, node.attrs(), node.loc());
    if (node.hasBody()) copy->setBody(node.body()->clone());
    for (size_t r = 0; r < node.numResults(); ++r) {
      copy->result(r)->setName(node.result(r)->name());
      mapped[node.result(r)] = copy->result(r);
    }
  }

  std::vector<Value*> outputs;
  for (Node* node : nodes) {
    if (!kept.count(node)) continue;
    for (Value* result : node->results()) {
      bool readByKept = false;
      for (const Node* user : result->users())
        readByKept |= kept.count(user) > 0;
      if (result->isGraphOutput() || !readByKept) outputs.push_back(mapped.at(result));
    }
  }
  small.setOutputs(outputs);
  return subset;
}

} // namespace loupe
