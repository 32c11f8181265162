#include "inspector/reduce/intermediate_values.h"

#include "inspector/bisect/bisector.h"

namespace loupe {

std::map<const Value*, Tensor> computeIntermediateValues(const Graph& graph,
                                                         const std::vector<Tensor>& inputs,
                                                         const FallbackFn& fallback) {
  // A copy whose outputs are every node's results: one reference run yields them all. Nodes of
  // the copy and of `graph` correspond one to one, in order.
  std::unique_ptr<Graph> copy = graph.clone();
  std::vector<Value*> copied;
  std::vector<const Value*> original;
  std::vector<Node*> copyNodes = copy->nodes(), nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t r = 0; r < nodes[i]->numResults(); ++r) {
      copied.push_back(copyNodes[i]->result(r));
      original.push_back(nodes[i]->result(r));
    }
  copy->setOutputs(copied);
  std::vector<Tensor> values = runReference(*copy, inputs, fallback);
  std::map<const Value*, Tensor> byValue;
  for (size_t i = 0; i < original.size(); ++i)
    byValue.emplace(original[i], std::move(values.at(i)));
  return byValue;
}

} // namespace loupe
