// Sizes that scale wrongly between the compiles, found in the frontend's graphs because they
// come from the user's program: a node whose element count grows faster than its operands'
// and the inputs' (broadcast_blowup), and a dim that stays constant where the input dim it
// was computed from changed (hardcoded_dim).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inspector/diff/detectors.h"

namespace loupe::diff {

namespace {

// How element counts grow from A to B. With concrete inputs on both sides, the ratio of the
// counts; when one side has symbolic inputs, the growth inside that side when every symbol
// doubles (64 -> 128), so a count of degree 2 in the symbols grows x4.
class Growth {
public:
  Growth(const Graph& a, const Graph& b) {
    auto symbolic = [](const Graph& g) {
      return std::any_of(g.inputs().begin(), g.inputs().end(), [](const auto& v) {
        if (!v->type().isTensor()) return false;
        const Shape& s = v->tensorType().shape;
        return std::any_of(s.begin(), s.end(), [](const SymExpr& d) { return !d.isConstant(); });
      });
    };
    if (symbolic(b))
      symbolicSide_ = 1;
    else if (symbolic(a))
      symbolicSide_ = 0;
  }

  bool symbolic() const { return symbolicSide_ >= 0; }

  std::optional<double> of(const Value* a, const Value* b) const {
    if (!a || !b || !a->type().isTensor() || !b->type().isTensor()) return std::nullopt;
    if (!symbolic()) {
      auto na = numel(a->tensorType().shape).constant();
      auto nb = numel(b->tensorType().shape).constant();
      if (!na || !nb || *na <= 0) return std::nullopt;
      return double(*nb) / double(*na);
    }
    SymExpr count = numel((symbolicSide_ == 1 ? b : a)->tensorType().shape);
    auto at = [&](int64_t value) {
      SymbolBindings bindings;
      for (const auto& s : count.symbols())
        bindings[s] = value;
      return double(count.evaluate(bindings));
    };
    try {
      double low = at(64);
      if (low <= 0) return std::nullopt;
      return at(128) / low;
    } catch (const std::exception&) {
      return std::nullopt; // a count the symbols do not determine (an unbound atom)
    }
  }

  std::string describe(double factor) const {
    char text[32];
    std::snprintf(text, sizeof text, "x%.3g", factor);
    return symbolic() ? std::string(text) + " when the symbols double" : text;
  }

private:
  int symbolicSide_ = -1;
};

void addBroadcastBlowups(const Graph& a, const Graph& b, const NodeMatching& matching,
                         const std::string& pass, const Positions& positions,
                         std::vector<Finding>& findings) {
  Growth growth(a, b);
  double inputGrowth = 1;
  for (size_t i = 0; i < a.numInputs() && i < b.numInputs(); ++i)
    inputGrowth = std::max(inputGrowth, growth.of(a.input(i), b.input(i)).value_or(1));
  for (auto [na, nb] : matching.pairs) {
    if (na->numResults() == 0 || nb->numResults() == 0) continue;
    auto result = growth.of(na->result(0), nb->result(0));
    if (!result) continue;
    double operands = 1;
    for (size_t i = 0; i < na->numOperands() && i < nb->numOperands(); ++i)
      operands = std::max(operands, growth.of(na->operand(i), nb->operand(i)).value_or(1));
    // Tolerance for rounding in the ratios of large counts.
    if (*result <= std::max(operands, inputGrowth) * 1.01) continue;
    findings.push_back(
        makeFinding(FindingKind::BroadcastBlowup, pass, {findingNode(na, nb)}, sourceOf(na),
                    nodeName(na) + " = " + na->op() + " is " + resultTypes(na) +
                        (&a == &b ? "" : " in A and " + resultTypes(nb) + " in B") + ": it grows " +
                        growth.describe(*result) + " while its operands grow at most " +
                        growth.describe(operands) + " (a broadcast blow-up)" + where(sourceOf(na)),
                    positions.bonus(na)));
  }
}

// Whether a dim of a node's operand follows one of `inputDims`.
bool followsAny(const DimAbstraction& dims, const Value* a, const Value* b,
                const std::vector<std::string>& inputDims) {
  std::vector<SymExpr> da = dimsOf(a), db = dimsOf(b);
  for (size_t d = 0; d < da.size() && d < db.size(); ++d) {
    auto e = dims.explain({da[d], db[d]});
    if (!e) continue;
    for (const auto& symbol : e->symbols())
      if (std::find(inputDims.begin(), inputDims.end(), symbol) != inputDims.end()) return true;
  }
  return false;
}

bool hasConstantDim(const DimAbstraction& dims, const Value* a, const Value* b, int64_t c) {
  std::vector<SymExpr> da = dimsOf(a), db = dimsOf(b);
  for (size_t d = 0; d < da.size() && d < db.size(); ++d)
    if (auto e = dims.explain({da[d], db[d]}); e && e->constant() == c) return true;
  return false;
}

// Whether every dim of a node's result is a constant across the compiles while the node does
// not take a part of its operand: then it reduced away whatever input dim its operands follow
// (the gradient of a 2-row embedding table sums the batch into `[2,32]`), and a constant dim
// is the size of something else, not one the input dim's place was taken by. A slice (`x[:2]`)
// keeps its operand's elements: a constant there is how a hard-coded batch cuts the data.
bool reducesEveryInputDim(const DimAbstraction& dims, const Node* a, const Node* b) {
  static const std::set<std::string, std::less<>> kParts = {"aten.slice.Tensor", "aten.narrow",
                                                            "aten.as_strided"};
  if (kParts.count(a->op())) return false;
  std::vector<SymExpr> da = dimsOf(a->result(0)), db = dimsOf(b->result(0));
  for (size_t d = 0; d < da.size() && d < db.size(); ++d) {
    auto e = dims.explain({da[d], db[d]});
    if (!e || !e->constant()) return false;
  }
  return true;
}

// A dim that stays c in both compiles where c is, in one compile, the value of an input dim
// that changes, while an operand follows that input dim, no operand has the constant c
// itself (which would make c the operand's, e.g. a weight's, and not the node's doing), no
// other dim of the result is that input dim itself (then c did not take its place) and the
// result is not a reduction of every input dim (reducesEveryInputDim).
void addHardcodedDims(const DimAbstraction& dims, const NodeMatching& matching,
                      const std::string& pass, const Positions& positions,
                      std::vector<Finding>& findings) {
  for (auto [na, nb] : matching.pairs) {
    if (na->numResults() == 0 || nb->numResults() == 0) continue;
    if (reducesEveryInputDim(dims, na, nb)) continue;
    std::vector<SymExpr> da = dimsOf(na->result(0)), db = dimsOf(nb->result(0));
    for (size_t d = 0; d < da.size() && d < db.size(); ++d) {
      auto e = dims.explain({da[d], db[d]});
      auto c = e ? e->constant() : std::nullopt;
      if (!c || *c <= 1) continue; // size-1 dims (keepdim, unsqueeze) are everywhere
      std::vector<std::string> candidates;
      for (size_t k = 0; k < dims.numCompiles(); ++k)
        for (const auto& name : dims.inputDimsEqualTo(k, *c))
          if (dims.varies(name)) candidates.push_back(name);
      // A candidate that is itself another dim of the result was not replaced by c: c only
      // happens to equal it in one compile (2 heads at batch 2 in [B,S,2,16]).
      for (size_t other = 0; other < da.size() && other < db.size(); ++other) {
        auto o = other == d ? std::nullopt : dims.explain({da[other], db[other]});
        if (o) std::erase(candidates, o->str());
      }
      if (candidates.empty()) continue;
      bool follows = false, inherited = false;
      for (size_t i = 0; i < na->numOperands() && i < nb->numOperands(); ++i) {
        if (!na->operand(i) || !nb->operand(i)) continue;
        follows |= followsAny(dims, na->operand(i), nb->operand(i), candidates);
        inherited |= hasConstantDim(dims, na->operand(i), nb->operand(i), *c);
      }
      if (!follows || inherited) continue;
      const std::string& input = candidates.front();
      auto valueIn = [&](size_t k) { return dims.dimOf(input, k).str(); };
      findings.push_back(makeFinding(
          FindingKind::HardcodedDim, pass, {findingNode(na, nb)}, sourceOf(na),
          nodeName(na) + " = " + na->op() + ": dim " + std::to_string(d) + " stays " +
              std::to_string(*c) + " (" + resultTypes(na) + " in A, " + resultTypes(nb) +
              " in B) while input dim " + input + " goes " + valueIn(0) + " -> " + valueIn(1) +
              " and its operand follows it: a size hard-coded for one input shape" +
              where(sourceOf(na)),
          positions.bonus(na)));
      break; // one finding per node
    }
  }
}

} // namespace

void detectBroadcastBlowups(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.frontend) return;
  const PassComparison& at = *in.frontend;
  addBroadcastBlowups(*at.a, *at.b, at.cmp.matching, at.pass, at.positions, findings);
}

void detectSymbolicBlowups(const ScalingInputs& in, std::vector<Finding>& findings) {
  if (in.graphs.size() != 1) return;
  const Graph& graph = *in.graphs.front();
  addBroadcastBlowups(graph, graph, matchNodes(graph, graph), in.pass, in.positions, findings);
}

void detectHardcodedDims(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.frontend || !in.frontend->cmp.dims) return;
  const PassComparison& at = *in.frontend;
  addHardcodedDims(*at.cmp.dims, at.cmp.matching, at.pass, at.positions, findings);
}

} // namespace loupe::diff
