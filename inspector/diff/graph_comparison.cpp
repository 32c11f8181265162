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
      "aten.alias",       "aten.detach",       "aten.clone",  "aten.view",
      "aten.reshape",     "aten._unsafe_view", "aten.expand", "aten.slice.Tensor",
      "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze"};
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
};

BypassedViews bypassIdentityViews(const Graph& graph) {
  BypassedViews out{graph.clone(), {}, {}};
  std::vector<Node*> from = graph.nodes(), to = out.graph->nodes();
  for (size_t i = 0; i < from.size() && i < to.size(); ++i)
    out.original.emplace(to[i], from[i]);
  for (Node* node : to) {
    if (!isIdentityView(node)) continue;
    out.identities.push_back(out.original.at(node));
    out.graph->replaceAllUsesWith(node->result(0), node->operand(0));
    out.graph->eraseNode(node);
  }
  return out;
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

std::optional<ViewDifference> viewDifference(const GraphComparison& original, const Graph& a,
                                             const Graph& b,
                                             const std::vector<std::string>& names) {
  BypassedViews bypassedA = bypassIdentityViews(a), bypassedB = bypassIdentityViews(b);
  GraphComparison cmp = compareGraphs(*bypassedA.graph, *bypassedB.graph, names);
  if (!cmp.inputsProblem.empty() || !cmp.differing.empty()) return std::nullopt;
  // The identity views the comparison as they are left unmatched (those in both graphs are
  // no difference).
  auto unmatchedOf = [](const std::vector<const Node*>& identities,
                        const std::vector<const Node*>& unmatched) {
    std::vector<const Node*> out;
    for (const Node* node : identities)
      if (std::find(unmatched.begin(), unmatched.end(), node) != unmatched.end())
        out.push_back(node);
    return out;
  };
  ViewDifference views{unmatchedOf(bypassedA.identities, original.matching.onlyInA),
                       unmatchedOf(bypassedB.identities, original.matching.onlyInB)};
  auto addUnmatched = [](const std::vector<const Node*>& unmatched, const BypassedViews& from,
                         std::vector<const Node*>& into) {
    std::unordered_set<const Node*> sizeOnly = sizeOnlyNodes(*from.graph);
    for (const Node* node : unmatched) {
      auto original = from.original.find(node);
      bool computesNothing = isViewOnly(node) || sizeOnly.count(node) > 0;
      if (!computesNothing || original == from.original.end()) return false;
      into.push_back(original->second);
    }
    return true;
  };
  if (!addUnmatched(cmp.matching.onlyInA, bypassedA, views.onlyInA) ||
      !addUnmatched(cmp.matching.onlyInB, bypassedB, views.onlyInB))
    return std::nullopt;
  return views;
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
