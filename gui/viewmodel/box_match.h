// Box-to-box correspondence between two GraphModels (two snapshots of one compile, or the
// same pass of two compiles), built on the differ's node matcher (inspector/diff), so the
// viewer and `loupe diff` agree on what "the same node" is.
#pragma once

#include <vector>

#include "gui/viewmodel/graph_model.h"

namespace loupe::view {

struct BoxMatch {
  std::vector<int> aToB; // per box of a: its match in b, -1 when none
  std::vector<int> bToA; // per box of b: its match in a, -1 when none
};

// Op boxes are matched by the node matcher; inputs by position, the return boxes together.
// A node that moved into or out of a fused group (which the matcher sees as a different
// place) is matched by its SSA name and op when both are otherwise unmatched.
BoxMatch matchBoxes(const GraphModel& a, const GraphModel& b);

// True when matched boxes differ in op or attributes, or, with compareTypes, in their result
// types. Across compiles at different shapes the types differ by design: the diff view
// compares without them.
bool boxRewritten(const Box& a, const Box& b, bool compareTypes);

} // namespace loupe::view
