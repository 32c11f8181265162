// A smaller graph made of some of a graph's top-level nodes, the candidate of one reduction
// trial. A value a kept node reads from a dropped node becomes a new input of the smaller graph,
// fed with what the whole graph computed there; inputs of the whole graph that no kept node
// reads are left out. Input and result types are kept as written, so symbolic dims stay
// symbolic. The outputs are the kept results that no kept node reads, and every kept result
// that was an output of the whole graph.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

struct NodeSubset {
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs; // in the smaller graph's input order
};

// `keep[i]` says whether the i-th top-level node of `graph` stays; `inputs` are the whole
// graph's, `values` its intermediate values (computeIntermediateValues).
NodeSubset extractNodeSubset(const Graph& graph, const std::vector<bool>& keep,
                             const std::vector<Tensor>& inputs,
                             const std::map<const Value*, Tensor>& values);

} // namespace loupe
