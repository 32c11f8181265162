// Every value a graph computes, from one run of its reference implementations: the reducer
// turns a value whose node it dropped into an input of the smaller graph, and feeds it what the
// whole graph computed there, so the kept nodes see exactly the numbers they saw before.
#pragma once

#include <map>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/runtime/executable.h"
#include "compiler/tensor/tensor.h"

namespace loupe {

// The results of `graph`'s top-level nodes run as written on `inputs`, by value (of `graph`).
std::map<const Value*, Tensor> computeIntermediateValues(const Graph& graph,
                                                         const std::vector<Tensor>& inputs,
                                                         const FallbackFn& fallback = {});

} // namespace loupe
