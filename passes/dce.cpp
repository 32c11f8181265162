// dce: dead code elimination. A pure registered node none of whose results is used (by a node
// or as a graph output) is erased. Nodes are visited last to first, so a chain of dead nodes
// goes in one sweep (each user before the value it reads); sweeps repeat until nothing is
// erased. Impure and opaque nodes stay even when unused, since running them may have effects
// (a print, a random generator's state, an in-place write). Unused graph inputs stay too: the
// signature belongs to the caller.
#include <algorithm>
#include <unordered_set>

#include "passes/pipeline.h"
#include "passes/rewrite_support.h"

namespace loupe {
namespace {

bool isDead(const Node& node) {
  auto results = node.results();
  return isRewritable(node) &&
         std::none_of(results.begin(), results.end(), [](const Value* r) { return r->hasUses(); });
}

class DcePass : public TablePass<PassId::DcePass> {
public:
  void run(Graph& graph, PassContext& ctx) override {
    std::unordered_set<const Node*> kept; // refused: never asked about again
    for (bool sweepChanged = true; sweepChanged;) {
      sweepChanged = false;
      std::vector<Node*> nodes = graph.nodes();
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        Node* node = *it;
        if (kept.count(node) || !isDead(*node)) continue;
        auto describe = [&] { return describeCall(*node) + " is unused"; };
        if (!ctx.decide("erase", describe, resultNames(*node))) {
          kept.insert(node);
          continue;
        }
        graph.eraseNode(node);
        sweepChanged = true;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> createDcePass() {
  return std::make_unique<DcePass>();
}

} // namespace loupe
