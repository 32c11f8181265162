// The decisions the node inspector lists for one node: those of its compile that name the
// node's value, each with the pass that made it and the rule behind it (file:line), so a
// changed node leads to the line of code that changed it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gui/viewmodel/trace_tree.h"

namespace loupe::view {

struct NodeDecision {
  const DecisionRecord* decision = nullptr; // points into the rows it was selected from
  std::string pass;                         // the pass that made it
  std::string rule; // "passes/cse.cpp:45"; empty without a recorded rule (a fault, an old trace)
};

// In decision order; `passes` are the compile's (they name each decision's pass).
std::vector<NodeDecision> decisionsAbout(const std::vector<DecisionRow>& decisions,
                                         const std::vector<PassItem>& passes,
                                         std::string_view value);

} // namespace loupe::view
