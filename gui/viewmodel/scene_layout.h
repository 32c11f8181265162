// Lays out the visible graph of a snapshot (module_groups.h) one module at a time: each
// expanded module's interior (its own boxes and its child modules, collapsed ones as labelled
// boxes, expanded ones as boxes the size of their own interior) is one dot run, and the
// interiors are placed inside their parents' boxes. A dot run therefore sees one module's
// direct contents, not the whole graph; interiors are laid out lazily (only for expanded
// modules), memoised, and kept in the layout cache, so expanding a module lays out that
// module and re-places its ancestors, and a second open lays out nothing.
//
// An edge between boxes in different modules is routed by the innermost module holding
// both: its spline there joins the two sides' outermost distinct items, and straight
// segments extend it to the boxes themselves.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gui/viewmodel/graph_layout.h"
#include "gui/viewmodel/layout_cache.h"
#include "gui/viewmodel/module_groups.h"

namespace loupe::view {

struct SceneItem {
  VisibleItem item;
  Rect rect;
  std::vector<std::string> lines; // the text the box shows (boxLines or moduleLines)
};

struct SceneEdge {
  int from = 0, to = 0;      // item indices
  int count = 1;             // model edges merged into it
  std::vector<Point> spline; // as EdgePath::spline
  Point tip;
};

struct SceneFrame {
  int module = 0; // an expanded module other than the root
  Rect rect;      // its outline; its name goes in the top-left corner
};

// What the canvas draws, all in one coordinate space with bounds starting at (0, 0).
struct Scene {
  std::vector<SceneItem> items;
  std::vector<SceneEdge> edges;
  std::vector<SceneFrame> frames;
  std::vector<Rect> groups;   // per fused group: the outline of its visible boxes (empty when none)
  std::vector<int> itemOfBox; // per box: the item showing it
  Rect bounds;
};

class SceneLayouter {
public:
  // cache may be null (no caching beyond this object's memo); snapshotHash keys its entries.
  SceneLayouter(std::shared_ptr<const GraphModel> model, LayoutOptions options,
                std::shared_ptr<LayoutCache> cache = nullptr, std::string snapshotHash = {});

  const GraphModel& model() const { return *model_; }
  const std::shared_ptr<const GraphModel>& sharedModel() const { return model_; }
  const ModuleTree& tree() const { return tree_; }

  // Throws Error("layout") when Graphviz fails.
  Scene layout(const Expansion& expanded);
  int graphvizRuns() const { return graphvizRuns_; } // dot runs so far; cache hits cost none

private:
  struct Interior;
  const Interior& interior(int module, const Expansion& expanded);
  std::string interiorKey(int module, const Expansion& expanded) const;

  std::shared_ptr<const GraphModel> model_;
  LayoutOptions options_;
  std::shared_ptr<LayoutCache> cache_;
  std::string snapshotHash_;
  ModuleTree tree_;
  // Per module: the model edges whose two ends it is the innermost module holding, the only
  // edges its interior lays out (edges deeper down join items of one child).
  std::vector<std::vector<Edge>> edgesOf_;
  std::map<std::string, std::shared_ptr<const Interior>> interiors_;
  int graphvizRuns_ = 0;
};

} // namespace loupe::view
