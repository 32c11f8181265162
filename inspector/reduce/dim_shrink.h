// The reducer's second phase: once no node can go, make the inputs' concrete dims smaller while
// the graph still diverges. Each distinct concrete dim value (above 1) in the inputs' types is one
// variable, so a dim tied across inputs (a matmul's K, a broadcast) shrinks everywhere at once. A
// candidate sets some variables to smaller values: in the input types, in the attributes that
// hold sizes (view and expand sizes, reshape shapes, slice ends, split sizes, normalized shapes),
// then shape propagation infers every result type afresh and the verifier checks the graph; its
// inputs are prefix slices of the given ones, so the values are still the whole graph's numbers.
// Symbolic dims are never variables, and a value that is a product of dims (a view that merges
// them) is not rewritten: a candidate that no longer verifies is no divergence, so such a dim
// keeps its size. See docs/reduce.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/tensor/tensor.h"
#include "inspector/reduce/node_subset.h"

namespace loupe {

// One variable: a concrete dim value of the inputs, before and after the shrinking.
struct DimChange {
  int64_t before = 0;
  int64_t after = 0;
  friend bool operator==(const DimChange&, const DimChange&) = default;
};

// The variables of `graph`: every distinct concrete dim above 1 of its tensor inputs, ascending.
// A value found in an input with explicit strides is left out (a slice of it would need strides
// of its own).
std::vector<int64_t> dimVariables(const Graph& graph);

// `graph` with each variable value `sizes` maps set to its new value, result types re-inferred,
// and its inputs sliced to the new sizes. Throws Error when the graph does not verify.
NodeSubset resizeDims(const Graph& graph, const std::vector<Tensor>& inputs,
                      const std::map<int64_t, int64_t>& sizes);

struct DimShrinkOptions {
  // Whether a candidate still diverges (the reducer's check; a resize that fails is not tried).
  std::function<bool(std::unique_ptr<Graph>, const std::vector<Tensor>&)> diverges;
  std::function<bool()> outOfTime;                           // checked before every trial
  std::function<void(const std::vector<DimChange>&)> shrunk; // after each accepted candidate
};

struct ShrunkDims {
  std::unique_ptr<Graph> graph; // the graph at the smallest sizes that still diverge
  std::vector<Tensor> inputs;
  std::vector<DimChange> dims; // every variable, in dimVariables' order
};

// Tries each variable, largest first, at 1, 2, a quarter and half of its size (ascending, the
// first that still diverges wins), round after round until no variable shrinks.
ShrunkDims shrinkDims(const Graph& graph, const std::vector<Tensor>& inputs,
                      const DimShrinkOptions& options);

// "768 -> 2, 8 -> 1": the variables that shrank; empty when none did.
std::string describeDimChanges(const std::vector<DimChange>& dims);

} // namespace loupe
