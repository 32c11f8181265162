// Runs a Graph on concrete tensors with every op's reference implementation: the oracle for
// tests of decompositions and rewrites (the graph before and after must agree). Fused nodes
// run their body graph. Header-only so that any test suite can include it.
#pragma once

#include <unordered_map>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// `inputs` correspond to the graph's inputs; `bindings` give the symbols in shapes and
// attributes their values. Returns the graph's outputs.
inline std::vector<Tensor> evaluateGraphWithReference(const Graph& graph,
                                                      const std::vector<Tensor>& inputs,
                                                      const SymbolBindings& bindings = {}) {
  if (inputs.size() != graph.numInputs())
    throw Error("runtime", "graph @" + graph.name() + " takes " +
                               std::to_string(graph.numInputs()) + " inputs, given " +
                               std::to_string(inputs.size()));
  std::unordered_map<const Value*, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values[graph.input(i)] = inputs[i];
  for (Node* node : graph.nodes()) {
    std::vector<Tensor> results;
    if (node->hasBody()) {
      std::vector<Tensor> bodyInputs;
      for (Value* v : node->operands())
        bodyInputs.push_back(values.at(v));
      results = evaluateGraphWithReference(*node->body(), bodyInputs, bindings);
    } else {
      const OpInfo* info = OpRegistry::global().find(node->op());
      if (!info) throw Error("runtime", "no reference implementation for " + node->describe());
      std::vector<const Tensor*> args;
      for (Value* v : node->operands())
        args.push_back(v ? &values.at(v) : nullptr);
      std::vector<Type> types;
      for (Value* r : node->results())
        types.push_back(r->type());
      results = runReference(*info, args, node->attrs(), types, bindings);
    }
    for (size_t i = 0; i < results.size(); ++i)
      values[node->result(i)] = std::move(results[i]);
  }
  std::vector<Tensor> outputs;
  for (Value* v : graph.outputs())
    outputs.push_back(values.at(v));
  return outputs;
}

} // namespace loupe
