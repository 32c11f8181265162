// cse: common subexpression elimination. Two pure registered nodes with the same op, the same
// operands (the same values, in order), the same attributes and the same result types compute
// the same thing; the later one is replaced by the earlier. One walk in topological order with
// a table keyed by that identity (hash-consing) suffices: once a node's operands have been
// merged, the node's own key already uses the surviving values. Impure ops (random, in-place),
// opaque ops and fused groups are never merged: two calls of them may differ.
#include <unordered_map>

#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

// Everything that makes two nodes compute the same values, as one string. Operands are
// identified by address: they are values of this graph, alive for the whole walk.
std::string identityKey(const Node& node) {
  std::string key = node.op() + "(";
  for (const Value* v : node.operands())
    key += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
  key += "){";
  for (const auto& [name, value] : node.attrs().values())
    key += name + "=" + attributeStr(value) + ",";
  key += "}:";
  for (const Value* r : node.results())
    key += r->type().str() + ",";
  return key;
}

class CsePass : public TablePass<PassId::CsePass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::unordered_map<std::string, Node*> seen;
    for (Node* node : graph.nodes()) {
      if (!isRewritable(*node) || node->numResults() == 0) continue;
      auto [it, inserted] = seen.try_emplace(identityKey(*node), node);
      if (inserted) continue;
      Node* original = it->second;
      std::vector<std::string> involved = resultNames(*node);
      for (const std::string& name : resultNames(*original))
        involved.push_back(name);
      auto describe = [&] {
        return describeCall(*node) + " duplicates " + valueRef(original->result(0));
      };
      if (!ctx.decide("merge", describe, std::move(involved))) continue;
      replaceNode(graph, *node, original->results());
    }
  }
};

} // namespace

std::unique_ptr<Pass> createCsePass() {
  return std::make_unique<CsePass>();
}

} // namespace loupe
