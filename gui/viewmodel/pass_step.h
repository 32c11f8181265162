// What a pass changed, for stepping through a compile's pipeline: the boxes of the snapshot
// before and after the pass, classified added, removed, rewritten (matched, but op,
// attributes or types changed) or unchanged, with the box-to-box matching (box_match.h).
#pragma once

#include <vector>

#include "gui/viewmodel/box_match.h"
#include "gui/viewmodel/graph_model.h"

namespace loupe::view {

enum class BoxChange { Unchanged, Added, Removed, Rewritten };

struct PassStep {
  BoxMatch match;
  std::vector<BoxChange> before; // per box of the snapshot before: Unchanged, Removed or Rewritten
  std::vector<BoxChange> after;  // per box of the snapshot after: Unchanged, Added or Rewritten
  std::vector<int> added;        // boxes of `after`, ascending
  std::vector<int> removed;      // boxes of `before`, ascending
  std::vector<int> rewritten;    // boxes of `after`, ascending

  bool changed() const { return !added.empty() || !removed.empty() || !rewritten.empty(); }
};

PassStep stepPass(const GraphModel& before, const GraphModel& after);

} // namespace loupe::view
