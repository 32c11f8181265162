// What every detector needs to phrase and score a finding: nodes, values and user lines as
// findings name them, each node's position (a node nearer the inputs ranks higher), and
// makeFinding, the one place a score is computed (docs/differ.md, "Scoring"): the kind's base
// from finding_kinds.def, then up to kPositionBonus for a node nearest the inputs and
// kSourceBonus for naming a user line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "inspector/diff/finding.h"
#include "inspector/diff/finding_kinds.h"
#include "inspector/trace/trace_records.h"

namespace loupe::diff {

constexpr double kPositionBonus = 5;
constexpr double kSourceBonus = 3;

// How much one finding says on its own: a weak one starts from its kind's weak base
// (finding_kinds.def says which instances are weak).
enum class Evidence { Strong, Weak };

// A node's result types as printed ("f32[8,64], i64[8]") and its name ("%x", empty for none).
std::string resultTypes(const Node* node);
std::string nodeName(const Node* node);
// A node as a finding lists it; a or b is null for a node on one side only.
FindingNode findingNode(const Node* a, const Node* b);

// The user line a node was traced from, or the innermost frame of a Dynamo user stack.
std::optional<FindingSource> sourceOf(const Node* node);
std::optional<FindingSource> sourceOf(const std::vector<StackFrame>& userStack);
// " at file:line", or empty without a source.
std::string where(const std::optional<FindingSource>& source);

// Every node's position in a walk of its graph (fused bodies included), for ranking by
// nearness to the inputs.
class Positions {
public:
  void add(const Graph& graph);
  double bonus(const Node* node) const;

private:
  std::unordered_map<const Node*, size_t> index_;
  std::vector<std::pair<size_t, size_t>> totals_;
};

Finding makeFinding(FindingKind kind, std::string pass, std::vector<FindingNode> nodes,
                    std::optional<FindingSource> source, std::string message,
                    double positionBonus = 0, Evidence evidence = Evidence::Strong);

} // namespace loupe::diff
