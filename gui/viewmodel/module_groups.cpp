#include "gui/viewmodel/module_groups.h"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

namespace loupe::view {

ModuleTree::ModuleTree(const GraphModel& model) {
  modules_.push_back(Module{});
  std::map<std::string, int, std::less<>> byPath{{"", 0}};
  // The module for path, created with its missing ancestors.
  auto moduleFor = [&](const std::string& path) {
    if (auto it = byPath.find(path); it != byPath.end()) return it->second;
    int parent = 0;
    for (size_t end = 0; end != std::string::npos;) {
      end = path.find('.', end + 1);
      const std::string prefix = path.substr(0, end);
      auto [it, added] = byPath.emplace(prefix, static_cast<int>(modules_.size()));
      if (added) {
        const size_t dot = prefix.rfind('.');
        modules_.push_back(
            Module{.path = prefix,
                   .name = dot == std::string::npos ? prefix : prefix.substr(dot + 1),
                   .parent = parent});
        modules_[static_cast<size_t>(parent)].children.push_back(it->second);
      }
      parent = it->second;
    }
    return parent;
  };
  moduleOfBox_.assign(model.boxes().size(), 0);
  for (size_t i = 0; i < model.boxes().size(); ++i)
    if (model.boxes()[i].kind == BoxKind::Op)
      moduleOfBox_[i] = moduleFor(model.boxes()[i].loc.module_path);
  groupWideModules();
  std::vector<int> inputModule(model.boxes().size(), -1);
  for (const Edge& edge : model.edges()) {
    if (model.boxes()[static_cast<size_t>(edge.from)].kind != BoxKind::Input) continue;
    int& common = inputModule[static_cast<size_t>(edge.from)];
    const int user = moduleOfBox_[static_cast<size_t>(edge.to)];
    common = common < 0 ? user : ModuleTree::commonAncestor(common, user);
  }
  for (size_t i = 0; i < model.boxes().size(); ++i) {
    if (model.boxes()[i].kind == BoxKind::Input) moduleOfBox_[i] = std::max(inputModule[i], 0);
    const int module = moduleOfBox_[i];
    modules_[static_cast<size_t>(module)].boxes.push_back(static_cast<int>(i));
    for (int m = module; m >= 0; m = modules_[static_cast<size_t>(m)].parent)
      ++modules_[static_cast<size_t>(m)].totalBoxes;
  }
}

void ModuleTree::groupWideModules() {
  // modules_ grows inside the loop: new groups are checked in turn, so a very wide module
  // gets groups of groups.
  for (size_t m = 0; m < modules_.size(); ++m) {
    while (modules_[m].children.size() > kMaxChildren) {
      const std::vector<int> children = std::exchange(modules_[m].children, {});
      for (size_t first = 0; first < children.size(); first += kMaxChildren) {
        const size_t end = std::min(first + kMaxChildren, children.size());
        const int group = static_cast<int>(modules_.size());
        const std::string range = "[" + modules_[static_cast<size_t>(children[first])].name + "-" +
                                  modules_[static_cast<size_t>(children[end - 1])].name + "]";
        Module added{.path = modules_[m].path + range,
                     .name = range,
                     .parent = static_cast<int>(m),
                     .children =
                         std::vector<int>(children.begin() + static_cast<std::ptrdiff_t>(first),
                                          children.begin() + static_cast<std::ptrdiff_t>(end)),
                     .synthetic = true};
        for (int child : added.children)
          modules_[static_cast<size_t>(child)].parent = group;
        modules_.push_back(std::move(added));
        modules_[m].children.push_back(group);
      }
    }
  }
}

int ModuleTree::depth(int module) const {
  int d = 0;
  for (; module > 0; module = modules_[static_cast<size_t>(module)].parent)
    ++d;
  return d;
}

int ModuleTree::commonAncestor(int a, int b) const {
  auto parent = [&](int m) { return modules_[static_cast<size_t>(m)].parent; };
  for (int da = depth(a), db = depth(b); da > db; --da)
    a = parent(a);
  for (int da = depth(a), db = depth(b); db > da; --db)
    b = parent(b);
  while (a != b) {
    a = parent(a);
    b = parent(b);
  }
  return a;
}

int ModuleTree::find(std::string_view path) const {
  for (size_t i = 0; i < modules_.size(); ++i)
    if (modules_[i].path == path) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> ModuleTree::pathsToShow(int box) const {
  std::vector<std::string> paths;
  for (int m = moduleOfBox(box); m > 0; m = modules_[static_cast<size_t>(m)].parent)
    paths.insert(paths.begin(), modules_[static_cast<size_t>(m)].path);
  return paths;
}

Expansion defaultExpansion(const ModuleTree& tree) {
  const auto& modules = tree.modules();
  Expansion expanded;
  const bool small = modules[0].totalBoxes <= kCollapseAbove;
  size_t visible = modules[0].boxes.size() + modules[0].children.size();
  std::deque<int> queue(modules[0].children.begin(), modules[0].children.end());
  while (!queue.empty()) {
    const Module& module = modules[static_cast<size_t>(queue.front())];
    queue.pop_front();
    // Expanding replaces the module's box by its own boxes and child modules.
    const size_t grown = visible + module.boxes.size() + module.children.size() - 1;
    if (!small && grown > static_cast<size_t>(kCollapseAbove)) continue;
    visible = grown;
    expanded.insert(module.path);
    queue.insert(queue.end(), module.children.begin(), module.children.end());
  }
  return expanded;
}

VisibleGraph visibleGraph(const GraphModel& model, const ModuleTree& tree,
                          const Expansion& expanded) {
  const auto& modules = tree.modules();
  auto isExpanded = [&](int m) {
    return m == 0 || expanded.contains(modules[static_cast<size_t>(m)].path);
  };
  VisibleGraph graph;
  std::map<int, int> itemOfModule;
  for (size_t box = 0; box < model.boxes().size(); ++box) {
    int outermostCollapsed = -1;
    for (int m = tree.moduleOfBox(static_cast<int>(box)); m > 0;
         m = modules[static_cast<size_t>(m)].parent)
      if (!isExpanded(m)) outermostCollapsed = m;
    if (outermostCollapsed < 0) {
      graph.itemOfBox.push_back(static_cast<int>(graph.items.size()));
      graph.items.push_back({VisibleItem::Kind::Box, static_cast<int>(box)});
      continue;
    }
    auto [it, added] =
        itemOfModule.emplace(outermostCollapsed, static_cast<int>(graph.items.size()));
    if (added) graph.items.push_back({VisibleItem::Kind::Module, outermostCollapsed});
    graph.itemOfBox.push_back(it->second);
  }
  std::map<std::pair<int, int>, int> edgeIndex;
  for (const Edge& edge : model.edges()) {
    const int from = graph.itemOfBox[static_cast<size_t>(edge.from)];
    const int to = graph.itemOfBox[static_cast<size_t>(edge.to)];
    if (from == to) continue;
    auto [it, added] = edgeIndex.emplace(std::pair(from, to), static_cast<int>(graph.edges.size()));
    if (added) graph.edges.push_back({from, to, 0});
    ++graph.edges[static_cast<size_t>(it->second)].count;
  }
  for (size_t m = 1; m < modules.size(); ++m) {
    bool shown = true;
    for (int a = static_cast<int>(m); a > 0 && shown; a = modules[static_cast<size_t>(a)].parent)
      shown = isExpanded(a);
    if (shown) graph.moduleFrames.push_back(static_cast<int>(m));
  }
  return graph;
}

std::vector<std::string> moduleLines(const Module& module) {
  return {"[+] " + module.path,
          std::to_string(module.totalBoxes) + (module.totalBoxes == 1 ? " node" : " nodes")};
}

} // namespace loupe::view
