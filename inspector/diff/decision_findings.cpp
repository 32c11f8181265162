// What the compiler decided differently for matched nodes of the last pass both compiles
// have graphs for: fused groups with other members or in one compile only, with the fusion
// decision that formed them (fusion_diff), and kernels of another kind, target or
// implementation, with both reasons (kernel_diff).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "inspector/diff/detectors.h"

namespace loupe::diff {

namespace {

// The fusion decision that formed a group (matched by the group's member names), as
// "pass: description".
std::string fusionDecision(const LoadedCompile& compile, const Node* group) {
  std::set<std::string> members;
  for (const Node* n : group->body()->nodes())
    if (n->numResults()) members.insert(n->result(0)->name());
  members.insert(nodeName(group).substr(1));
  std::map<int64_t, std::string> passNames;
  for (const auto& p : compile.passes)
    passNames[p.row.id] = p.row.info.name;
  for (const DecisionRow& d : compile.ref.trace->decisions(compile.ref.compileId)) {
    if (d.decision.kind != "fusion") continue;
    for (const auto& name : d.decision.nodes)
      if (members.count(name)) {
        const std::string& pass = passNames[d.pass_id];
        const std::string& why = d.decision.description;
        return why.rfind(pass + ":", 0) == 0 ? why : pass + ": " + why;
      }
  }
  return "no fusion decision recorded";
}

std::string memberOps(const Node* group) {
  std::string text;
  for (const Node* n : group->body()->nodes())
    text += (text.empty() ? "" : ", ") + n->op();
  return text;
}

std::optional<std::string> kernelOf(const Node* node) {
  const Attribute* kernel = node->attrs().find("kernel");
  const auto* name = kernel ? std::get_if<std::string>(kernel) : nullptr;
  return name ? std::optional<std::string>(*name) : std::nullopt;
}

std::map<std::string, KernelRecord> kernelsByName(const LoadedCompile& compile) {
  std::map<std::string, KernelRecord> kernels;
  for (KernelRecord& k : compile.ref.trace->kernels(compile.ref.compileId))
    kernels.emplace(k.name, std::move(k));
  return kernels;
}

} // namespace

void detectFusionDiffs(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.last) return;
  const LoadedCompile& A = in.a;
  const LoadedCompile& B = in.b;
  const Graph& a = *in.last->a;
  const Graph& b = *in.last->b;
  const GraphComparison& cmp = in.last->cmp;
  const Positions& positions = in.last->positions;
  auto add = [&](const Node* na, const Node* nb, std::string message) {
    const Node* any = na ? na : nb;
    const Node* first = any->body()->numNodes() ? any->body()->nodes().front() : any;
    std::string pass = na ? fusionDecision(A, na) : fusionDecision(B, nb);
    findings.push_back(makeFinding(FindingKind::FusionDiff, pass.substr(0, pass.find(':')),
                                   {findingNode(na, nb)}, sourceOf(first), std::move(message),
                                   positions.bonus(any)));
  };
  for (auto [na, nb] : cmp.matching.pairs) {
    if (!na->hasBody() || !nb->hasBody() || na->graph() != &a || nb->graph() != &b) continue;
    if (memberOps(na) == memberOps(nb)) continue;
    add(na, nb,
        "fused group " + nodeName(na) + " holds [" + memberOps(na) + "] in A (" +
            fusionDecision(A, na) + ") and " + nodeName(nb) + " holds [" + memberOps(nb) +
            "] in B (" + fusionDecision(B, nb) + ")");
  }
  // When the walk went past every pass without the graphs diverging, what one compile has and
  // the other lacks differs in views only (viewDifference): a group there fuses nodes that
  // compute from sizes alone, which the static compile folded into a constant (positions from
  // a symbolic length), and no fusion decision differs.
  if (!in.divergent && in.viewsOnly) return;
  for (const Node* na : cmp.matching.onlyInA)
    if (na->hasBody())
      add(na, nullptr,
          "fused group " + nodeName(na) + " [" + memberOps(na) + "] is only in A (" +
              fusionDecision(A, na) + ")");
  for (const Node* nb : cmp.matching.onlyInB)
    if (nb->hasBody())
      add(nullptr, nb,
          "fused group " + nodeName(nb) + " [" + memberOps(nb) + "] is only in B (" +
              fusionDecision(B, nb) + ")");
}

// Kernels pair up through the nodes they run (each node names its kernel in `kernel`).
void detectKernelDiffs(const DiffInputs& in, std::vector<Finding>& findings) {
  if (!in.last) return;
  const std::string& pass = in.last->pass;
  std::map<std::string, KernelRecord> kernelsA = kernelsByName(in.a),
                                      kernelsB = kernelsByName(in.b);
  for (auto [na, nb] : in.last->cmp.matching.pairs) {
    auto nameA = kernelOf(na), nameB = kernelOf(nb);
    if (!nameA || !nameB || !kernelsA.count(*nameA) || !kernelsB.count(*nameB)) continue;
    const KernelRecord& ka = kernelsA.at(*nameA);
    const KernelRecord& kb = kernelsB.at(*nameB);
    if (ka.kind == kb.kind && ka.target == kb.target && ka.op_summary == kb.op_summary) continue;
    auto describe = [](const KernelRecord& k) {
      return k.name + " " + k.kind + " on " + k.target + " (" + k.op_summary + "; " + k.reason +
             ")";
    };
    findings.push_back(makeFinding(FindingKind::KernelDiff, pass, {findingNode(na, nb)},
                                   sourceOf(na),
                                   nodeName(na) + " runs as kernel " + describe(ka) +
                                       " in A but as " + describe(kb) + " in B"));
  }
}

} // namespace loupe::diff
