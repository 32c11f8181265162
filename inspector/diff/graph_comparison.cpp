// Comparing two graphs up to shapes (graph_comparison.h).
#include "inspector/diff/graph_comparison.h"

#include <algorithm>
#include <set>
#include <string_view>

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

bool isViewOnly(const Node* node) {
  // Ops that are the identity when the result has the operand's shape (always, for aliases).
  static const std::set<std::string, std::less<>> kIdentities = {
      "aten.alias",       "aten.detach",       "aten.clone",  "aten.view",
      "aten.reshape",     "aten._unsafe_view", "aten.expand", "aten.slice.Tensor",
      "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze"};
  // Ops that only reorder dims.
  static const std::set<std::string, std::less<>> kTransposes = {"aten.permute",
                                                                 "aten.transpose.int", "aten.t"};
  if (node->hasBody() || node->numResults() != 1 || node->numOperands() < 1 ||
      node->operand(0) == nullptr || !node->result(0)->type().isTensor() ||
      !node->operand(0)->type().isTensor())
    return false;
  const std::string& op = node->op();
  std::vector<SymExpr> in = dimsOf(node->operand(0)), out = dimsOf(node->result(0));
  if (kIdentities.count(op)) return in == out;
  if (kTransposes.count(op))
    return std::is_permutation(in.begin(), in.end(), out.begin(), out.end());
  return false;
}

bool GraphComparison::viewsOnly() const {
  if (same() || !inputsProblem.empty() || !differing.empty()) return false;
  return std::all_of(matching.onlyInA.begin(), matching.onlyInA.end(), isViewOnly) &&
         std::all_of(matching.onlyInB.begin(), matching.onlyInB.end(), isViewOnly);
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
