// Comparing two graphs up to shapes (graph_comparison.h).
#include "inspector/diff/graph_comparison.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/error.h"

namespace loupe::diff {

std::vector<SymExpr> dimsOf(const Value* value) {
  return value->type().isTensor() ? value->tensorType().shape : std::vector<SymExpr>{};
}

namespace {

// Why a matched pair is not the same node up to shapes, or empty when it is.
std::string pairDifference(const GraphComparison& cmp, const Node* a, const Node* b) {
  const Node* parentA = a->graph()->parentNode();
  const Node* parentB = b->graph()->parentNode();
  auto mapped = parentA ? cmp.matching.aToB.find(parentA) : cmp.matching.aToB.end();
  if ((parentA == nullptr) != (parentB == nullptr) ||
      (parentA && (mapped == cmp.matching.aToB.end() || mapped->second != parentB)))
    return "in another fused group";
  if (a->hasBody() && b->hasBody() && a->body()->numNodes() != b->body()->numNodes())
    return "fuses " + std::to_string(a->body()->numNodes()) + " nodes in A and " +
           std::to_string(b->body()->numNodes()) + " in B";
  if (a->numResults() != b->numResults()) return "has another number of results";
  for (size_t i = 0; i < a->numResults(); ++i) {
    std::vector<SymExpr> da = dimsOf(a->result(i)), db = dimsOf(b->result(i));
    if (da.size() != db.size()) return "has another rank";
    for (size_t d = 0; d < da.size(); ++d)
      if (!cmp.dims->explain({da[d], db[d]}))
        return "dim " + std::to_string(d) + " (" + da[d].str() + " vs " + db[d].str() +
               ") follows no input dim";
  }
  return {};
}

} // namespace

bool isIdentityView(const Node* node) {
  static const std::set<std::string, std::less<>> kIdentities = {
      "aten.alias",       "aten.detach",       "aten.clone",   "aten.view",
      "aten.reshape",     "aten._unsafe_view", "aten.expand",  "aten.slice.Tensor",
      "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze", "aten.slice_backward"};
  return !node->hasBody() && node->numResults() == 1 && node->numOperands() >= 1 &&
         node->operand(0) != nullptr && node->result(0)->type().isTensor() &&
         node->operand(0)->type().isTensor() && kIdentities.count(node->op()) &&
         node->operand(0)->tensorType().dtype == node->result(0)->tensorType().dtype &&
         dimsOf(node->operand(0)) == dimsOf(node->result(0));
}

bool isViewOnly(const Node* node) {
  static const std::set<std::string, std::less<>> kTransposes = {"aten.permute",
                                                                 "aten.transpose.int", "aten.t"};
  if (isIdentityView(node)) return true;
  if (node->hasBody() || node->numResults() != 1 || node->numOperands() < 1 ||
      node->operand(0) == nullptr || !node->result(0)->type().isTensor() ||
      !node->operand(0)->type().isTensor() || !kTransposes.count(node->op()))
    return false;
  std::vector<SymExpr> in = dimsOf(node->operand(0)), out = dimsOf(node->result(0));
  return std::is_permutation(in.begin(), in.end(), out.begin(), out.end());
}

namespace {

// A copy of a graph with its identity views bypassed, and where each remaining node came from.
struct BypassedViews {
  std::unique_ptr<Graph> graph;
  std::unordered_map<const Node*, const Node*> original; // copy's node -> the graph's
  std::vector<const Node*> identities;                   // the graph's bypassed nodes
  std::vector<const Node*> folded; // the graph's views folded into saved values
};

BypassedViews bypassIdentityViews(const Graph& graph) {
  BypassedViews out{graph.clone(), {}, {}};
  std::vector<Node*> from = graph.nodes(), to = out.graph->nodes();
  for (size_t i = 0; i < from.size() && i < to.size(); ++i)
    out.original.emplace(to[i], from[i]);
  for (Node* node : to) {
    if (!isIdentityView(node)) continue;
    out.identities.push_back(out.original.at(node));
    out.original.erase(node); // a node made later may take its address
    out.graph->replaceAllUsesWith(node->result(0), node->operand(0));
    out.graph->eraseNode(node);
  }
  return out;
}

// A saved matrix the forward handed over transposed ([n,m] with strides [1,n], the `t` of a
// dense [m,n]): the partitioner saves a weight's or an activation's transpose in one compile
// and the value itself, transposed in the backward, in the other.
bool isSavedTranspose(const TensorType& type) {
  return type.rank() == 2 && !type.isContiguous() && type.strides &&
         (*type.strides)[0] == SymExpr(1) && (*type.strides)[1] == type.shape[0];
}

// Folds a view of a saved value into the value where the backward reads that value through
// the view alone: the partitioner saves either a view (a broadcast `expand`, a transpose or
// permutation, handed over strided) or its base, viewed again in the backward, and chooses per
// compile (a static compile saves the expanded `[2,8]<strides=[0,1]>`, the dynamic one the
// `[1,8]` and expands it to `[s0,8]`). The saved value takes the view's type and the view goes.
// A 2-D transpose is lined up the other way round (alignSavedInputs takes a saved one apart
// into its value and an `aten.t`), so it is left as it is. The original graph's views go to
// `folded`.
void foldViewsOfSavedValues(BypassedViews& copy) {
  static const std::set<std::string, std::less<>> kSavedViews = {
      "aten.expand", "aten.transpose.int", "aten.permute"};
  Graph& graph = *copy.graph;
  std::vector<Node*> views;
  for (size_t i = 0, n = graph.numInputs(); i < n; ++i) {
    Value* saved = graph.input(i);
    if (!saved->type().isTensor() || saved->isGraphOutput() || saved->users().size() != 1) continue;
    Node* view = saved->users().front();
    if (view->hasBody() || view->numResults() != 1 || !kSavedViews.count(view->op()) ||
        view->operand(0) != saved || isSavedTranspose(view->result(0)->tensorType()))
      continue;
    saved->setType(view->result(0)->type());
    graph.replaceAllUsesWith(view->result(0), saved);
    views.push_back(view);
  }
  for (Node* view : views) {
    copy.folded.push_back(copy.original.at(view));
    copy.original.erase(view);
    graph.eraseNode(view);
  }
}

// Lines up the saved values of a backward graph with another compile's (aot_autograd's
// partitioner chooses them per compile): a saved transpose becomes the dense value and an
// `aten.t` of it, unused tensor inputs go, and the tensor inputs are put in the order the
// graph first reads them, so two graphs that compute the same from other saved values have
// the same inputs. Returns how many saved values it took in another form (transposed or unused).
size_t alignSavedInputs(Graph& graph) {
  // Where a value is first read: the node, then the operand slot (one node may read several
  // saved values); the graph's outputs come after every node.
  using Read = std::pair<size_t, size_t>;
  const Read unread{SIZE_MAX, SIZE_MAX};
  std::vector<Node*> nodes = graph.nodes();
  std::unordered_map<const Value*, Read> firstRead;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (size_t slot = 0; slot < nodes[n]->numOperands(); ++slot)
      if (const Value* operand = nodes[n]->operand(slot)) firstRead.emplace(operand, Read{n, slot});
  for (size_t o = 0; o < graph.outputs().size(); ++o)
    firstRead.emplace(graph.outputs()[o], Read{nodes.size(), o});
  std::vector<Value*> tensors;
  for (const auto& input : graph.inputs())
    if (input->type().isTensor()) tensors.push_back(input.get());
  std::vector<Read> positions(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    auto read = firstRead.find(tensors[k]);
    positions[k] = read == firstRead.end() ? unread : read->second;
  }
  std::vector<size_t> order(tensors.size());
  for (size_t k = 0; k < order.size(); ++k)
    order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return positions[x] < positions[y]; });
  size_t changed = 0;
  Node* first = nodes.empty() ? nullptr : nodes.front();
  for (size_t k = 0; k < order.size(); ++k) {
    Value* old = tensors[order[k]];
    if (positions[order[k]] == unread) {
      ++changed;
      continue;
    }
    const TensorType& type = old->tensorType();
    if (!isSavedTranspose(type)) {
      graph.replaceAllUsesWith(old, graph.addInput(old->type(), old->name()));
      continue;
    }
    ++changed;
    Value* dense =
        graph.addInput(Type(type.withShape({type.shape[1], type.shape[0]})), old->name());
    Node* t = graph.createNode("aten.t", {dense}, {old->type()}, {}, {}, first);
    graph.replaceAllUsesWith(old, t->result(0));
  }
  for (size_t i = graph.numInputs(); i-- > 0;)
    if (std::find(tensors.begin(), tensors.end(), graph.input(i)) != tensors.end())
      graph.eraseInput(i);
  return changed;
}

// Merges views that repeat another (same op, operands, attributes and result): one compile's
// algebraic simplification folds `view(view(x))` into a second `view(x)` where the other's
// had an identity in between, and two views of one value are one value.
void mergeRepeatedViews(Graph& graph) {
  static const std::set<std::string, std::less<>> kViews = {
      "aten.view", "aten.reshape",       "aten._unsafe_view", "aten.expand",     "aten.permute",
      "aten.t",    "aten.transpose.int", "aten.unsqueeze",    "aten.squeeze.dim"};
  std::vector<Node*> kept;
  for (Node* node : graph.nodes()) {
    if (node->hasBody() || node->numResults() != 1 || !kViews.count(node->op())) continue;
    auto same = std::find_if(kept.begin(), kept.end(), [&](const Node* other) {
      return other->op() == node->op() && other->operands() == node->operands() &&
             other->attrs() == node->attrs() && other->result(0)->type() == node->result(0)->type();
    });
    if (same == kept.end()) {
      kept.push_back(node);
      continue;
    }
    graph.replaceAllUsesWith(node->result(0), (*same)->result(0));
    graph.eraseNode(node);
  }
}

// The nodes that compute from sizes alone (no tensor input reaches them: an arange over a
// symbolic size), which a static compile folds into constants.
std::unordered_set<const Node*> sizeOnlyNodes(const Graph& graph) {
  std::unordered_set<const Node*> sizeOnly;
  for (const Node* node : graph.nodes()) {
    bool fromSizes =
        std::all_of(node->operands().begin(), node->operands().end(), [&](const Value* operand) {
          if (!operand) return true;
          const Node* def = operand->definingNode();
          return def ? sizeOnly.count(def) > 0 : !operand->type().isTensor();
        });
    if (fromSizes) sizeOnly.insert(node);
  }
  return sizeOnly;
}

} // namespace

namespace {

// viewDifference, with the saved values lined up first (alignSavedInputs) when `align`.
std::optional<ViewDifference> viewDifferenceOf(const GraphComparison& original, const Graph& a,
                                               const Graph& b,
                                               const std::vector<std::string>& names, bool align) {
  BypassedViews bypassedA = bypassIdentityViews(a), bypassedB = bypassIdentityViews(b);
  size_t alignedA = 0, alignedB = 0;
  if (align) {
    foldViewsOfSavedValues(bypassedA);
    foldViewsOfSavedValues(bypassedB);
    alignedA = alignSavedInputs(*bypassedA.graph);
    alignedB = alignSavedInputs(*bypassedB.graph);
    mergeRepeatedViews(*bypassedA.graph);
    mergeRepeatedViews(*bypassedB.graph);
  }
  GraphComparison cmp = compareGraphs(*bypassedA.graph, *bypassedB.graph, names);
  std::unordered_set<const Node*> sizeOnlyA = sizeOnlyNodes(*bypassedA.graph),
                                  sizeOnlyB = sizeOnlyNodes(*bypassedB.graph);
  // A matched pair of nodes that compute from sizes alone differs in shapes wherever the static
  // compile folded a larger part of that computation into one constant than the dynamic one
  // (a mask folded whole at batch 2 is paired with a `[1,4]` piece of it): which node a folded
  // constant pairs with says nothing, and the nodes that read it still have their shapes
  // compared.
  std::vector<std::pair<const Node*, const Node*>> sizeOnlyPairs;
  for (auto [na, nb] : cmp.differing)
    if (sizeOnlyA.count(na) && sizeOnlyB.count(nb)) sizeOnlyPairs.emplace_back(na, nb);
  if (!cmp.inputsProblem.empty() || cmp.differing.size() != sizeOnlyPairs.size())
    return std::nullopt;
  // The identity views and folded views the comparison as they are left unmatched (those in
  // both graphs are no difference); a folded view in one graph only is a saved value taken in
  // another form.
  auto unmatchedOf = [](const std::vector<const Node*>& removed,
                        const std::vector<const Node*>& unmatched) {
    std::vector<const Node*> out;
    for (const Node* node : removed)
      if (std::find(unmatched.begin(), unmatched.end(), node) != unmatched.end())
        out.push_back(node);
    return out;
  };
  std::vector<const Node*> foldedA = unmatchedOf(bypassedA.folded, original.matching.onlyInA);
  std::vector<const Node*> foldedB = unmatchedOf(bypassedB.folded, original.matching.onlyInB);
  ViewDifference views{unmatchedOf(bypassedA.identities, original.matching.onlyInA),
                       unmatchedOf(bypassedB.identities, original.matching.onlyInB), align,
                       std::max(alignedA + foldedA.size(), alignedB + foldedB.size())};
  views.onlyInA.insert(views.onlyInA.end(), foldedA.begin(), foldedA.end());
  views.onlyInB.insert(views.onlyInB.end(), foldedB.begin(), foldedB.end());
  auto addUnmatched = [](const std::vector<const Node*>& unmatched, const BypassedViews& from,
                         const std::unordered_set<const Node*>& sizeOnly,
                         std::vector<const Node*>& into) {
    for (const Node* node : unmatched) {
      auto original = from.original.find(node);
      bool computesNothing = isViewOnly(node) || sizeOnly.count(node) > 0;
      if (!computesNothing) return false;
      // A node alignSavedInputs made (the transpose of a saved value) is in neither graph.
      if (original != from.original.end()) into.push_back(original->second);
    }
    return true;
  };
  std::vector<const Node*> pairedA, pairedB;
  for (auto [na, nb] : sizeOnlyPairs) {
    pairedA.push_back(na);
    pairedB.push_back(nb);
  }
  if (!addUnmatched(cmp.matching.onlyInA, bypassedA, sizeOnlyA, views.onlyInA) ||
      !addUnmatched(cmp.matching.onlyInB, bypassedB, sizeOnlyB, views.onlyInB) ||
      !addUnmatched(pairedA, bypassedA, sizeOnlyA, views.onlyInA) ||
      !addUnmatched(pairedB, bypassedB, sizeOnlyB, views.onlyInB))
    return std::nullopt;
  return views;
}

} // namespace

std::optional<ViewDifference> viewDifference(const GraphComparison& original, const Graph& a,
                                             const Graph& b, const std::vector<std::string>& names,
                                             bool savedValues) {
  // The saved values are lined up only where the graphs differ in more than views as they are,
  // and only a backward's: a forward graph's inputs are the frame's, in the frame's order, and
  // two of them swapped is a real difference.
  if (auto views = viewDifferenceOf(original, a, b, names, false)) return views;
  if (!savedValues) return std::nullopt;
  return viewDifferenceOf(original, a, b, names, true);
}

GraphComparison compareGraphs(const Graph& a, const Graph& b,
                              const std::vector<std::string>& names) {
  GraphComparison cmp{matchNodes(a, b), std::nullopt, {}, {}, {}};
  try {
    cmp.dims.emplace(std::vector<const Graph*>{&a, &b}, names);
  } catch (const Error& e) {
    cmp.inputsProblem = e.message();
    return cmp;
  }
  for (auto [na, nb] : cmp.matching.pairs) {
    std::string why = pairDifference(cmp, na, nb);
    if (why.empty()) continue;
    cmp.differing.emplace_back(na, nb);
    cmp.differingWhy.push_back(std::move(why));
  }
  return cmp;
}

PassComparison comparePass(size_t index, std::string pass, const Graph& a, const Graph& b,
                           const std::vector<std::string>& names) {
  PassComparison compared{index, std::move(pass), &a, &b, compareGraphs(a, b, names), {}};
  compared.positions.add(a);
  compared.positions.add(b);
  return compared;
}

} // namespace loupe::diff
