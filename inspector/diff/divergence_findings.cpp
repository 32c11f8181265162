// Where the two compiles' graphs part ways (first_divergent_pass, unmatched_node): the first
// pass after which they are not the same up to shapes, or where the pipelines themselves
// differ, and the nodes found in one graph only at that pass.
#include <map>
#include <string>
#include <vector>

#include "inspector/diff/detectors.h"

namespace loupe::diff {

namespace {

// The nodes a comparison found different, A's first, and the user line of the first that has one.
std::vector<FindingNode> differingNodes(const GraphComparison& cmp,
                                        std::optional<FindingSource>& source) {
  std::vector<FindingNode> nodes;
  auto add = [&](const Node* a, const Node* b) {
    nodes.push_back(findingNode(a, b));
    if (!source) source = sourceOf(a ? a : b);
  };
  for (auto [a, b] : cmp.differing)
    add(a, b);
  for (const Node* a : cmp.matching.onlyInA)
    add(a, nullptr);
  for (const Node* b : cmp.matching.onlyInB)
    add(nullptr, b);
  return nodes;
}

std::string divergenceSummary(const GraphComparison& cmp) {
  if (!cmp.inputsProblem.empty()) return "their inputs differ (" + cmp.inputsProblem + ")";
  constexpr size_t kShown = 3; // nodes named per category; the rest are counted
  std::string text;
  auto list = [&](const std::vector<const Node*>& nodes, const std::string& what) {
    for (size_t i = 0; i < nodes.size() && i < kShown; ++i)
      text += (text.empty() ? "" : "; ") + nodeName(nodes[i]) + " " + nodes[i]->op() + " " + what;
    if (nodes.size() > kShown)
      text += "; " + std::to_string(nodes.size() - kShown) + " more " + what;
  };
  list(cmp.matching.onlyInA, "only in A");
  list(cmp.matching.onlyInB, "only in B");
  for (size_t i = 0; i < cmp.differing.size() && i < kShown; ++i)
    text += (text.empty() ? "" : "; ") + nodeName(cmp.differing[i].first) + " " +
            cmp.differing[i].first->op() + " " + cmp.differingWhy[i];
  if (cmp.differing.size() > kShown)
    text += "; " + std::to_string(cmp.differing.size() - kShown) + " more changed";
  return text;
}

// The pipelines part ways at pass `at`: another pass in each, or one that failed in one only.
Finding partingFinding(const LoadedCompile& A, const LoadedCompile& B, size_t at) {
  const LoadedPass& pa = A.passes[at];
  const LoadedPass& pb = B.passes[at];
  if (pa.row.info.name != pb.row.info.name)
    return makeFinding(FindingKind::FirstDivergentPass, pa.row.info.name, {}, std::nullopt,
                       "the pipelines differ at pass #" + std::to_string(at) + ": " +
                           pa.row.info.name + " in A, " + pb.row.info.name + " in B");
  const LoadedPass& failed = pa.graph ? pb : pa;
  return makeFinding(FindingKind::FirstDivergentPass, pa.row.info.name, {}, std::nullopt,
                     "pass " + pa.row.info.name + " failed in " + (pa.graph ? "B" : "A") + ": " +
                         failed.row.info.error_message.value_or("no error recorded"));
}

bool hasSymbolicInput(const Graph& graph) {
  for (const auto& input : graph.inputs())
    for (const SymExpr& d : dimsOf(input.get()))
      if (!d.isConstant()) return true;
  return false;
}

} // namespace

void detectFirstDivergentPass(const DiffInputs& in, std::vector<Finding>& findings) {
  if (in.partingPass) findings.push_back(partingFinding(in.a, in.b, *in.partingPass));
  if (!in.divergent) return;
  const PassComparison& at = *in.divergent;
  std::optional<FindingSource> source;
  std::vector<FindingNode> nodes = differingNodes(at.cmp, source);
  // A divergence already in the frontend graphs is a symptom: the failed guard or the graph
  // break that made Dynamo trace differently names the cause, so it is weak evidence.
  bool frontend = at.index == 0;
  findings.push_back(makeFinding(
      FindingKind::FirstDivergentPass, at.pass, nodes, source,
      "after pass " + at.pass + " the graphs differ beyond shapes: " + divergenceSummary(at.cmp) +
          (frontend ? " (already in the first snapshot: Dynamo/aot_autograd traced different "
                      "graphs)"
                    : ""),
      0, frontend ? Evidence::Weak : Evidence::Strong));
}

void detectUnmatchedNodes(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.divergent) return;
  const PassComparison& at = *in.divergent;
  auto add = [&](const Node* node, bool inA) {
    findings.push_back(
        makeFinding(FindingKind::UnmatchedNode, at.pass,
                    {inA ? findingNode(node, nullptr) : findingNode(nullptr, node)}, sourceOf(node),
                    nodeName(node) + " = " + node->op() + " : " + resultTypes(node) +
                        " is only in " + (inA ? "A" : "B") + in.sides + where(sourceOf(node)),
                    at.positions.bonus(node)));
  };
  // Fused groups in one graph only are fusion_diff findings.
  for (const Node* a : at.cmp.matching.onlyInA)
    if (!a->hasBody()) add(a, true);
  for (const Node* b : at.cmp.matching.onlyInB)
    if (!b->hasBody()) add(b, false);
}

// One note for a re-trace: the graphs differ in views only, which change nothing computed, so
// the nodes are listed here rather than as unmatched_node findings.
void detectRetracedViews(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.viewsOnly) return;
  const PassComparison& at = *in.viewsOnly;
  if (!at.views) return;
  std::vector<FindingNode> nodes;
  // "aten.alias x1, aten.t x8": the ops of one side's view-only nodes, counted.
  auto counted = [&](const std::vector<const Node*>& views, bool inA) {
    std::map<std::string, size_t> ops;
    for (const Node* node : views) {
      nodes.push_back(inA ? findingNode(node, nullptr) : findingNode(nullptr, node));
      ++ops[node->op()];
    }
    std::string text;
    for (const auto& [op, count] : ops)
      text += (text.empty() ? "" : ", ") + op + " x" + std::to_string(count);
    return text.empty() ? "none" : text;
  };
  std::string onlyA = counted(at.views->onlyInA, true), onlyB = counted(at.views->onlyInB, false);
  bool dynamic = hasSymbolicInput(*at.a) != hasSymbolicInput(*at.b);
  findings.push_back(makeFinding(
      FindingKind::RetracedViews, at.pass, nodes, std::nullopt,
      std::string(dynamic ? "re-traced with dynamic shapes; " : "re-traced; ") +
          "view-only differences after pass " + at.pass +
          " (identity views, transposes, views of saved values, values computed from sizes "
          "alone: nothing computed changes): in A " +
          onlyA + "; in B " + onlyB +
          (at.views->resaved ? "; the partitioner saved other values for the backward (" +
                                   std::to_string(at.views->resavedInputs) +
                                   " taken in another form, the rest in another order)"
                             : std::string())));
}

} // namespace loupe::diff
