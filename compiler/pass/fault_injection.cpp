#include "compiler/pass/fault_injection.h"

#include <cstdio>
#include <map>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/ops/graph_builder.h"

namespace loupe {
namespace {

bool isFloatingTensor(const Value* value) {
  return value->type().isTensor() && isFloating(value->tensorType().dtype);
}

// The top-level node that holds `node`: itself, or the fused group its body belongs to.
Node* topLevelNode(Node* node, const Graph& graph) {
  while (node->graph() != &graph)
    node = node->graph()->parentNode();
  return node;
}

// Top-level nodes that define, or hold in a fused body, a value with one of `names`.
std::set<Node*> nodesNamed(const Graph& graph, const std::vector<std::string>& names) {
  std::set<Node*> found;
  walk(graph, [&](Node& node) {
    for (Value* result : node.results())
      for (const std::string& name : names)
        if (!name.empty() && result->name() == name) found.insert(topLevelNode(&node, graph));
  });
  return found;
}

// Whether `value` depends on a node of `sources`, memoised in `known`.
bool dependsOn(const Value* value, const std::set<Node*>& sources,
               std::map<const Node*, bool>& known) {
  Node* node = value ? value->definingNode() : nullptr;
  if (!node) return false;
  if (sources.count(node)) return true;
  auto [it, inserted] = known.emplace(node, false);
  if (!inserted) return it->second;
  bool depends = false;
  for (const Value* operand : node->operands())
    depends = depends || dependsOn(operand, sources, known);
  known[node] = depends;
  return depends;
}

std::string nameOf(const Value* value) {
  return value->name().empty() ? "an unnamed value" : "%" + value->name();
}

std::string formatScale() {
  char text[16];
  std::snprintf(text, sizeof text, "%g", kFaultScale);
  return text;
}

} // namespace

Decision injectFault(Graph& graph, const Decision& decision) {
  std::set<Node*> sources = nodesNamed(graph, decision.nodes);
  std::map<const Node*, bool> known;
  std::vector<size_t> targets;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* out = graph.outputs()[i];
    if (out && isFloatingTensor(out) && dependsOn(out, sources, known)) targets.push_back(i);
  }
  if (targets.empty()) {
    for (size_t i = 0; i < graph.outputs().size() && targets.empty(); ++i)
      if (graph.outputs()[i] && isFloatingTensor(graph.outputs()[i])) targets.push_back(i);
  }
  if (targets.empty())
    throw Error("fault",
                "cannot inject a fault at decision " + std::to_string(decision.ordinal) +
                    ": graph @" + graph.name() + " has no floating-point output to perturb",
                ErrorContext{.graph = graph.name(), .pass = decision.pass});

  Decision fault;
  fault.ordinal = 0;
  fault.pass = decision.pass;
  fault.kind = "fault";
  fault.applied = true;
  if (!decision.nodes.empty()) fault.nodes.push_back(decision.nodes.front());
  std::map<Value*, Value*> scaled; // an output returned twice is perturbed once
  std::string perturbed;
  for (size_t i : targets) {
    Value* out = graph.outputs()[i];
    auto [it, inserted] = scaled.emplace(out, nullptr);
    if (inserted) {
      Node* producer = out->definingNode();
      GraphBuilder builder(graph, nullptr, producer ? producer->loc() : SourceLoc{});
      AttrMap attrs;
      attrs.set("other", kFaultScale);
      it->second = builder.op("aten.mul.Scalar", {out}, std::move(attrs));
      if (!out->name().empty()) it->second->setName(out->name() + "_fault");
      fault.nodes.push_back(it->second->name());
      perturbed += (perturbed.empty() ? "" : ", ") + nameOf(out);
    }
    graph.setOutput(i, it->second);
  }
  fault.description = "injected fault after decision " + std::to_string(decision.ordinal) +
                      (scaled.size() > 1 ? ": outputs " : ": output ") + perturbed + " scaled by " +
                      formatScale() + " (testing aid)";
  return fault;
}

} // namespace loupe
