// One thing the differ found, ranked: what kind, where in the pipeline, which nodes, which
// line of the user's program, and a one-line message. The report (text, JSON) only renders these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inspector/diff/finding_kinds.h"

namespace loupe::diff {

struct FindingNode {
  std::string op;
  std::string nameA;          // empty when the node is only in B
  std::string nameB;          // empty when the node is only in A
  std::string shapeA, shapeB; // result types as printed, e.g. "f32[8,64]"
};

struct FindingSource {
  std::string file;
  int line = 0;
  std::string modulePath;
};

struct Finding {
  std::string kind; // a FindingKind's name (finding_kinds.def), as the JSON `kind`
  double score = 0; // higher ranks first; see docs/differ.md for how it is computed
  std::string pass; // the pass it concerns, empty when none (graph breaks, guards)
  std::vector<FindingNode> nodes;
  std::optional<FindingSource> source; // the user line most responsible, when known
  std::string message; // one line, self-contained, e.g. "%sub is [16,16] at B=16 ..."
  Severity severity = Severity::Warning; // the kind's (finding_kinds.def)
};

// The verdict on a comparison: the compiles differ when a finding of Warning severity or
// above remains (Notes alone, such as a failed guard, leave them the same).
bool differs(const std::vector<Finding>& findings);

} // namespace loupe::diff
