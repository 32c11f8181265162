// Scaling analysis over several compiles of one frame (nonlinear_dim): every dim of every node
// matched in all of them is fitted as a function of the input dims (dim_fit.h), and a dim that
// is not linear in an input dim (x.0**2 after flattening a (B,B) tensor) is reported; the
// users of a reported node inherit its growth and are not reported again.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inspector/diff/detectors.h"
#include "inspector/diff/dim_fit.h"

namespace loupe::diff {

void detectNonlinearDims(const ScalingInputs& in, std::vector<Finding>& findings) {
  std::set<const Value*> nonlinear; // reported values: their users inherit the growth
  walk(*in.graphs.front(), [&](Node& node) {
    if (node.numResults() == 0 || !node.result(0)->type().isTensor()) return;
    if (std::any_of(node.operands().begin(), node.operands().end(),
                    [&](const Value* v) { return v && nonlinear.count(v); }))
      return;
    std::vector<const Node*> counterparts{&node};
    for (const NodeMatching& m : in.matchings) {
      auto it = m.aToB.find(&node);
      if (it == m.aToB.end()) return;
      counterparts.push_back(it->second);
    }
    const size_t rank = node.result(0)->tensorType().rank();
    for (size_t d = 0; d < rank; ++d) {
      std::vector<SymExpr> values;
      std::string shown;
      for (const Node* n : counterparts) {
        std::vector<SymExpr> shape = dimsOf(n->result(0));
        if (shape.size() != rank) return;
        values.push_back(shape[d]);
        shown += (shown.empty() ? "" : ", ") + shape[d].str();
      }
      std::optional<DimFit> fit = fitDim(in.dims, values);
      if (!fit || fit->linear()) continue;
      std::string inputs;
      for (const auto& name : fit->nonlinearIn)
        inputs += (inputs.empty() ? "" : ", ") + name;
      nonlinear.insert(node.result(0));
      findings.push_back(makeFinding(FindingKind::NonlinearDim, in.pass,
                                     {findingNode(&node, counterparts.back())}, sourceOf(&node),
                                     nodeName(&node) + " = " + node.op() + ": dim " +
                                         std::to_string(d) + " = " + fit->expr.str() +
                                         " is not linear in " + inputs + " (" + shown + ")" +
                                         where(sourceOf(&node)),
                                     in.positions.bonus(&node)));
      return;
    }
  });
}

} // namespace loupe::diff
