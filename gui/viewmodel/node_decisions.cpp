#include "gui/viewmodel/node_decisions.h"

#include <algorithm>

namespace loupe::view {

std::vector<NodeDecision> decisionsAbout(const std::vector<DecisionRow>& decisions,
                                         const std::vector<PassItem>& passes,
                                         std::string_view value) {
  std::vector<NodeDecision> about;
  for (const DecisionRow& row : decisions) {
    const DecisionRecord& d = row.decision;
    if (std::find(d.nodes.begin(), d.nodes.end(), value) == d.nodes.end()) continue;
    auto pass = std::find_if(passes.begin(), passes.end(),
                             [&](const PassItem& p) { return p.passId == row.pass_id; });
    NodeDecision shown{.decision = &d, .pass = pass != passes.end() ? pass->info.name : ""};
    if (d.rule_file) shown.rule = *d.rule_file + ":" + std::to_string(d.rule_line.value_or(0));
    about.push_back(std::move(shown));
  }
  return about;
}

} // namespace loupe::view
