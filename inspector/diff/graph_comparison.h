// Two graphs, the same up to shapes? Their nodes matched (node_matcher.h), their dims
// abstracted over the input dims (dim_abstraction.h), and the matched pairs that still differ:
// a dim that follows no input dim, another fused group, another rank. The differ compares the
// two compiles' graphs pass by pass with this; a PassComparison is one such pass, with what
// the detectors need to place their findings.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "inspector/diff/dim_abstraction.h"
#include "inspector/diff/finding_builder.h"
#include "inspector/diff/node_matcher.h"

namespace loupe::diff {

// A value's dims, or none when it is not a tensor.
std::vector<SymExpr> dimsOf(const Value* value);

struct GraphComparison {
  NodeMatching matching;
  std::optional<DimAbstraction> dims; // absent when the graphs' inputs cannot be lined up
  std::string inputsProblem;
  // Matched pairs that still differ: a dim that follows no input, or another fused group.
  std::vector<std::pair<const Node*, const Node*>> differing;
  std::vector<std::string> differingWhy; // one per `differing` pair

  bool same() const {
    return inputsProblem.empty() && matching.onlyInA.empty() && matching.onlyInB.empty() &&
           differing.empty();
  }
};

// A node that changes nothing computed: an identity view (isIdentityView), or a permutation
// of its operand's dims (a transpose the other graph folded elsewhere or did not save). A
// reshape to another shape is never view-only, so a hard-coded reshape still counts.
bool isViewOnly(const Node* node);
// An alias, detach or clone, or a view, reshape, expand, slice, slice_backward or squeeze whose
// result has its operand's shape exactly (symbolically: s0 is not 8).
bool isIdentityView(const Node* node);

// How two graphs that are not the same up to shapes differ in views only: the identity views
// of each, and the transposes found in one only once those are bypassed, along with nodes
// that compute from sizes alone (a constant, an arange over a symbolic size), which a static
// compile folds and a dynamic one computes.
struct ViewDifference {
  std::vector<const Node*> onlyInA, onlyInB; // nodes of the graphs compared
  // Whether the graphs' saved values (a backward graph's inputs) had to be lined up, and how
  // many of them one side took in another form (transposed, viewed in the backward or
  // unused), the most of either.
  bool resaved = false;
  size_t resavedInputs = 0;
};
// The view-only difference of a and b, or none when they differ in more than views: compared
// again with every identity view bypassed (its uses read its operand), they must be the same
// up to shapes but for view-only or size-only nodes in one graph, and for matched pairs of
// size-only nodes (the static compile folded more of a size-only computation into one constant).
// A re-trace of one computation (static then dynamic shapes) differs so. When they differ in more
// than views so and `savedValues` (they are backward graphs, whose inputs are the values the
// forward saved), they are compared again with their saved values lined up: a saved value the
// backward reads only through an expand, permute or transpose taken as that view's result (one
// compile saves the expanded value, the other expands it in the backward), a backward graph's
// tensor inputs in the order it first reads them, unused ones dropped, and a saved transpose ([n,m]
// with strides [1,n]) taken as the dense [m,n] and an `aten.t` of it, since aot_autograd's
// partitioner chooses per compile whether it saves a value or a view of it, and in which order.
// `original` is their comparison as they are: the identity views and folded views it left
// unmatched are the ones listed.
std::optional<ViewDifference> viewDifference(const GraphComparison& original, const Graph& a,
                                             const Graph& b, const std::vector<std::string>& names,
                                             bool savedValues);

// `names` are the input names for DimAbstraction (empty: its defaults).
GraphComparison compareGraphs(const Graph& a, const Graph& b,
                              const std::vector<std::string>& names);

// The graphs A and B left after one pass, compared.
struct PassComparison {
  size_t index = 0; // the pass's position in the pipelines
  std::string pass;
  const Graph* a = nullptr;
  const Graph* b = nullptr;
  GraphComparison cmp;
  Positions positions; // of both graphs' nodes
  // Set by the differ's walk when the graphs are not the same but differ in views only.
  std::optional<ViewDifference> views;
};

PassComparison comparePass(size_t index, std::string pass, const Graph& a, const Graph& b,
                           const std::vector<std::string>& names);

} // namespace loupe::diff
