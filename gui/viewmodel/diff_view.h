// The diff view: two compiles of one trace side by side. The findings are exactly those of
// `loupe diff` (inspector/diff's diffCompiles, one implementation); the canvases show one pass
// of each compile, boxes matched by the differ's node matcher (box_match.h), and each finding
// names the boxes to centre on each side.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gui/viewmodel/box_match.h"
#include "gui/viewmodel/graph_model.h"
#include "inspector/diff/compile_diff.h"

namespace loupe::view {

enum class DiffStatus { Matched, Changed, Unmatched };

// Where a finding is on each side: boxes of the shown snapshots, -1 when not there.
struct FindingFocus {
  int boxA = -1, boxB = -1;
};

struct DiffView {
  diff::DiffReport report;
  std::string pass; // the pass whose snapshots are shown
  std::shared_ptr<const GraphModel> a, b;
  std::string hashA, hashB; // content hashes, for the layout cache
  BoxMatch match;
  std::vector<DiffStatus> statusA, statusB; // per box; Changed: matched but op/attrs differ
  std::vector<FindingFocus> focus;          // per finding of the report
};

// Compares compiles a and b of trace and loads the snapshots after `pass` of both (empty:
// the last pass both recorded a graph for). Throws loupe::Error or TraceError with a message
// naming the trace, compiles and pass; the app shows it.
DiffView buildDiffView(const TraceReader& trace, int64_t compileA, int64_t compileB,
                       const std::string& pass = {});

// The boxes a finding names in two models: by the node names the finding gives (its first
// node found on each side), else through the box match from the other side, else by its
// source line.
FindingFocus locateFinding(const diff::Finding& finding, const GraphModel& a, const GraphModel& b,
                           const BoxMatch& match);

} // namespace loupe::view
