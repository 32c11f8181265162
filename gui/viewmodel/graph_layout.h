// Lays graphs out with Graphviz's `dot` (top to bottom dataflow): a rectangle per node, a
// cubic Bézier spline per edge and a bounding rectangle per cluster. Coordinates are in
// points with y growing downwards, as the canvas draws them, and the bounds start at (0, 0).
//
// Graphviz calls are serialised (it keeps global state), so layouts may run on any thread
// but one at a time.
//
// dot is superlinear (about 0.5 s for 1k nodes, minutes for 10k), so large graphs are never
// laid out whole: module_groups.h lays out one module's interior at a time, through
// layoutProblem, and layout_cache.h keeps the results in the trace.
#pragma once

#include <string>
#include <vector>

#include "gui/viewmodel/geometry.h"
#include "gui/viewmodel/graph_model.h"

namespace loupe::view {

// Box sizes come from the text they show; the canvas passes its font's metrics.
struct LayoutOptions {
  float charWidth = 7;
  float lineHeight = 15;
  float padding = 6;
  // Above this many nodes in one dot run, dot's search limits are cut (nslimit, mclimit,
  // searchsize), trading some edge crossings for a layout about 5x faster.
  int fastAbove = 600;

  // Identifies the options in layout cache keys: equal keys give equal layouts.
  std::string key() const;
};

// One dot run's input: node sizes, edges between node indices and cluster membership.
struct LayoutNode {
  float width = 0, height = 0;
  int cluster = -1; // index of the cluster holding the node, -1 for none
};

struct LayoutProblem {
  std::vector<LayoutNode> nodes;
  std::vector<Edge> edges;
  int clusters = 0;
};

struct EdgePath {
  int from = 0, to = 0;
  // Cubic Bézier: p0, then (control1, control2, end) triples. The arrow points at `tip`.
  std::vector<Point> spline;
  Point tip;
  friend bool operator==(const EdgePath&, const EdgePath&) = default;
};

struct GraphLayout {
  std::vector<Rect> boxes;     // one per node (per GraphModel box for layoutGraph)
  std::vector<EdgePath> edges; // one per edge, in the problem's order
  std::vector<Rect> groups;    // one per cluster (per fused group for layoutGraph)
  Rect bounds;
  friend bool operator==(const GraphLayout&, const GraphLayout&) = default;
};

// The lines a box shows, in order: its title (name and op), then its result types (dtype and
// shape, e.g. "f32[s0,64]"). Its size is measured from them.
std::vector<std::string> boxLines(const Box& box);
// The size of a box showing these lines.
Point measureLines(const std::vector<std::string>& lines, const LayoutOptions& options);

// Throws Error("layout") when Graphviz fails.
GraphLayout layoutProblem(const LayoutProblem& problem, const LayoutOptions& options = {});
// The whole model in one dot run, fused groups as clusters. For small graphs and tests; the
// viewer goes through module_groups.h.
GraphLayout layoutGraph(const GraphModel& model, const LayoutOptions& options = {});

} // namespace loupe::view
