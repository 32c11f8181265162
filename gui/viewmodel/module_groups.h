// Collapse by module path: the boxes of a snapshot grouped into the tree of nn.Module paths
// they came from (SourceLoc::module_path, dotted: "encoder.layers.0.attn"), and the graph
// the canvas shows for a set of expanded modules: a collapsed module is one box, and the
// edges between hidden boxes are merged into one edge per pair of visible items.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gui/viewmodel/graph_model.h"

namespace loupe::view {

struct Module {
  std::string path; // "encoder.layers.0"; "" for the root (the graph itself)
  std::string name; // the last segment: "0"; "" for the root
  int parent = -1;
  std::vector<int> children; // module indices, in the order their first box appears
  std::vector<int> boxes;    // boxes directly in this module, ascending
  int totalBoxes = 0;        // boxes in this module and its descendants
  // A run of siblings grouped because their parent had too many children (kMaxChildren);
  // its path is the parent's with the range appended: "model.layers[0-63]".
  bool synthetic = false;
};

// A module with more child modules than this (a list of hundreds of layers) has them grouped,
// in order, into synthetic modules of this many, so that no one dot run and no one expansion
// step faces hundreds of items.
constexpr size_t kMaxChildren = 64;

class ModuleTree {
public:
  // An input belongs to the innermost module holding all of its users (a layer's weights sit
  // in the layer); the return box and ops without a module path belong to the root.
  explicit ModuleTree(const GraphModel& model);

  const std::vector<Module>& modules() const { return modules_; } // [0] is the root
  int moduleOfBox(int box) const { return moduleOfBox_.at(static_cast<size_t>(box)); }
  int find(std::string_view path) const; // -1 when absent; "" is the root
  // The innermost module holding both modules (one of them when it holds the other).
  int commonAncestor(int a, int b) const;
  // The module paths that must be expanded for box to be visible, outermost first.
  std::vector<std::string> pathsToShow(int box) const;

private:
  int depth(int module) const;
  void groupWideModules();

  std::vector<Module> modules_;
  std::vector<int> moduleOfBox_;
};

// The expanded module paths. The root is always expanded, whether listed or not.
using Expansion = std::set<std::string>;

// Above this many boxes a snapshot opens collapsed. dot lays out ~300 nodes in about 0.1 s,
// so the first picture of any graph appears without a noticeable wait.
constexpr int kCollapseAbove = 300;

// Everything expanded for graphs up to kCollapseAbove boxes; otherwise modules are expanded
// breadth first while the visible item count stays within kCollapseAbove.
Expansion defaultExpansion(const ModuleTree& tree);

// One thing the canvas shows: a box, or a collapsed module standing for all of its boxes.
struct VisibleItem {
  enum class Kind { Box, Module } kind = Kind::Box;
  int index = 0; // box index or module index
  friend bool operator==(const VisibleItem&, const VisibleItem&) = default;
};

struct VisibleEdge {
  int from = 0, to = 0; // item indices
  int count = 1;        // the model edges merged into it
};

struct VisibleGraph {
  std::vector<VisibleItem> items; // in box order of their first box
  std::vector<VisibleEdge> edges; // no self loops: edges inside a collapsed module vanish
  std::vector<int> itemOfBox;     // per box: the item showing it
  std::vector<int> moduleFrames;  // expanded modules other than the root, drawn as frames
};

VisibleGraph visibleGraph(const GraphModel& model, const ModuleTree& tree,
                          const Expansion& expanded);

// The lines a collapsed module's box shows: "[+] encoder.layers.0" and "123 nodes" (ASCII,
// so any font draws them).
std::vector<std::string> moduleLines(const Module& module);

} // namespace loupe::view
