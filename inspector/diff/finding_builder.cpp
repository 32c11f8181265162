// Naming, placing and scoring findings (finding_builder.h).
#include "inspector/diff/finding_builder.h"

#include <algorithm>

namespace loupe::diff {

std::string resultTypes(const Node* node) {
  std::string text;
  for (size_t i = 0; i < node->numResults(); ++i)
    text += (i ? ", " : "") + node->result(i)->type().str();
  return text;
}

std::string nodeName(const Node* node) {
  return node && node->numResults() ? "%" + node->result(0)->name() : "";
}

FindingNode findingNode(const Node* a, const Node* b) {
  const Node* any = a ? a : b;
  return FindingNode{any->op(), nodeName(a), nodeName(b), a ? resultTypes(a) : "",
                     b ? resultTypes(b) : ""};
}

std::optional<FindingSource> sourceOf(const Node* node) {
  if (!node || node->loc().file.empty()) return std::nullopt;
  return FindingSource{node->loc().file, node->loc().line, node->loc().module_path};
}

std::optional<FindingSource> sourceOf(const std::vector<StackFrame>& userStack) {
  if (userStack.empty()) return std::nullopt; // innermost frame last, as Python lists them
  return FindingSource{userStack.back().file, userStack.back().line, userStack.back().function};
}

std::string where(const std::optional<FindingSource>& source) {
  return source ? " at " + source->file + ":" + std::to_string(source->line) : "";
}

void Positions::add(const Graph& graph) {
  size_t start = index_.size();
  size_t count = 0;
  walk(graph, [&](Node& node) { index_[&node] = start + count++; });
  totals_.push_back({start, count});
}

double Positions::bonus(const Node* node) const {
  auto it = index_.find(node);
  if (it == index_.end()) return 0;
  for (auto [start, count] : totals_)
    if (it->second >= start && it->second < start + count)
      return kPositionBonus * (1.0 - double(it->second - start) / double(count));
  return 0;
}

namespace {

double baseScore(FindingKind kind, Evidence evidence) {
  const FindingKindInfo& info = findingKindInfo(kind);
  return evidence == Evidence::Weak && info.weakBase > 0 ? info.weakBase : info.base;
}

} // namespace

Finding makeFinding(FindingKind kind, std::string pass, std::vector<FindingNode> nodes,
                    std::optional<FindingSource> source, std::string message, double positionBonus,
                    Evidence evidence) {
  double score = baseScore(kind, evidence) + positionBonus + (source ? kSourceBonus : 0);
  return Finding{std::string(findingKindName(kind)),
                 score,
                 std::move(pass),
                 std::move(nodes),
                 std::move(source),
                 std::move(message),
                 findingKindInfo(kind).severity};
}

bool differs(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity >= Severity::Warning; });
}

} // namespace loupe::diff
