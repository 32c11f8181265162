#include "gui/viewmodel/pass_step.h"

namespace loupe::view {

PassStep stepPass(const GraphModel& before, const GraphModel& after) {
  PassStep step{.match = matchBoxes(before, after),
                .before = std::vector<BoxChange>(before.boxes().size(), BoxChange::Unchanged),
                .after = std::vector<BoxChange>(after.boxes().size(), BoxChange::Unchanged)};
  for (size_t i = 0; i < before.boxes().size(); ++i)
    if (step.match.aToB[i] < 0) {
      step.before[i] = BoxChange::Removed;
      step.removed.push_back(static_cast<int>(i));
    }
  for (size_t i = 0; i < after.boxes().size(); ++i) {
    const int from = step.match.bToA[i];
    if (from < 0) {
      step.after[i] = BoxChange::Added;
      step.added.push_back(static_cast<int>(i));
    } else if (boxRewritten(before.boxes()[static_cast<size_t>(from)], after.boxes()[i], true)) {
      step.after[i] = step.before[static_cast<size_t>(from)] = BoxChange::Rewritten;
      step.rewritten.push_back(static_cast<int>(i));
    }
  }
  return step;
}

} // namespace loupe::view
