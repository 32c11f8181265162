#include "gui/viewmodel/scene_layout.h"

#include <algorithm>

#include "inspector/trace/content_hash.h"

namespace loupe::view {
namespace {

// A frame (an expanded module's outline) leaves room for its title line and a margin.
struct FrameMetrics {
  float margin, title;
  explicit FrameMetrics(const LayoutOptions& o)
      : margin(2 * o.padding), title(o.lineHeight + o.padding) {}
  Point inset() const { return {margin, margin + title}; }
  Point extra() const { return {2 * margin, 2 * margin + title}; }
};

// A straight cubic segment, so a routed edge stays one Bézier chain.
void appendLine(std::vector<Point>& spline, Point to) {
  const Point from = spline.back();
  spline.push_back(from + (to - from) * (1.0f / 3));
  spline.push_back(from + (to - from) * (2.0f / 3));
  spline.push_back(to);
}

Point bottomCentre(const Rect& r) {
  return {r.center().x, r.max.y};
}
Point topCentre(const Rect& r) {
  return {r.center().x, r.min.y};
}

} // namespace

// One expanded module's contents as laid out by one dot run.
struct SceneLayouter::Interior {
  std::vector<VisibleItem> items;            // the module's own boxes, then its child modules
  GraphLayout layout;                        // layout.boxes[i] is items[i]
  std::map<std::pair<int, int>, int> edgeOf; // (item, item) → index into layout.edges
};

SceneLayouter::SceneLayouter(std::shared_ptr<const GraphModel> model, LayoutOptions options,
                             std::shared_ptr<LayoutCache> cache, std::string snapshotHash)
    : model_(std::move(model)), options_(options), cache_(std::move(cache)),
      snapshotHash_(std::move(snapshotHash)), tree_(*model_), edgesOf_(tree_.modules().size()) {
  for (const Edge& edge : model_->edges())
    edgesOf_[static_cast<size_t>(
                 tree_.commonAncestor(tree_.moduleOfBox(edge.from), tree_.moduleOfBox(edge.to)))]
        .push_back(edge);
}

std::string SceneLayouter::interiorKey(int module, const Expansion& expanded) const {
  // The interior depends on the sizes of its expanded children, so on every expanded module
  // below it that is visible from it. The walk's order depends only on the tree, so equal
  // sets give equal keys.
  std::string below;
  std::vector<int> stack{module};
  while (!stack.empty()) {
    const Module& m = tree_.modules()[static_cast<size_t>(stack.back())];
    stack.pop_back();
    for (int child : m.children) {
      const std::string& path = tree_.modules()[static_cast<size_t>(child)].path;
      if (expanded.contains(path)) {
        below += path + '\n';
        stack.push_back(child);
      }
    }
  }
  return options_.key() + " module=" + tree_.modules()[static_cast<size_t>(module)].path +
         " expanded=" + contentHash(below);
}

const SceneLayouter::Interior& SceneLayouter::interior(int module, const Expansion& expanded) {
  const std::string key = interiorKey(module, expanded);
  if (auto it = interiors_.find(key); it != interiors_.end()) return *it->second;

  const Module& m = tree_.modules()[static_cast<size_t>(module)];
  const FrameMetrics frame(options_);
  auto built = std::make_shared<Interior>();
  LayoutProblem problem;
  std::map<int, int> clusterOfGroup;
  for (int box : m.boxes) {
    const Box& b = model_->boxes()[static_cast<size_t>(box)];
    const Point size = measureLines(boxLines(b), options_);
    int cluster = -1;
    if (b.group >= 0)
      cluster =
          clusterOfGroup.emplace(b.group, static_cast<int>(clusterOfGroup.size())).first->second;
    built->items.push_back({VisibleItem::Kind::Box, box});
    problem.nodes.push_back({size.x, size.y, cluster});
  }
  problem.clusters = static_cast<int>(clusterOfGroup.size());
  for (int child : m.children) {
    const Module& c = tree_.modules()[static_cast<size_t>(child)];
    Point size = measureLines(moduleLines(c), options_);
    if (expanded.contains(c.path)) {
      const Rect inner = interior(child, expanded).layout.bounds;
      size = Point{std::max(inner.width(), size.x), inner.height()} + frame.extra();
    }
    built->items.push_back({VisibleItem::Kind::Module, child});
    problem.nodes.push_back({size.x, size.y, -1});
  }

  // Each model edge inside this module joins the items holding its two ends, once per pair.
  std::vector<int> itemOfModule(tree_.modules().size(), -1);
  for (size_t i = m.boxes.size(); i < built->items.size(); ++i)
    itemOfModule[static_cast<size_t>(built->items[i].index)] = static_cast<int>(i);
  std::map<int, int> itemOfBox;
  for (size_t i = 0; i < m.boxes.size(); ++i)
    itemOfBox[m.boxes[i]] = static_cast<int>(i);
  auto itemHolding = [&](int box) {
    if (auto it = itemOfBox.find(box); it != itemOfBox.end()) return it->second;
    for (int a = tree_.moduleOfBox(box); a > 0; a = tree_.modules()[static_cast<size_t>(a)].parent)
      if (tree_.modules()[static_cast<size_t>(a)].parent == module)
        return itemOfModule[static_cast<size_t>(a)];
    return -1; // outside this module
  };
  for (const Edge& edge : edgesOf_[static_cast<size_t>(module)]) {
    const int from = itemHolding(edge.from), to = itemHolding(edge.to);
    if (from >= 0 && to >= 0 && from != to &&
        built->edgeOf.emplace(std::pair(from, to), static_cast<int>(problem.edges.size())).second)
      problem.edges.push_back({from, to});
  }

  std::optional<GraphLayout> cached = cache_ ? cache_->load(snapshotHash_, key) : std::nullopt;
  // A cached layout is used only if it has the shape of this problem (a hash collision or a
  // damaged row must not draw the wrong picture, or index out of range).
  auto fits = [&](const GraphLayout& layout) {
    if (layout.boxes.size() != problem.nodes.size() ||
        layout.edges.size() != problem.edges.size() ||
        layout.groups.size() != static_cast<size_t>(problem.clusters))
      return false;
    for (size_t e = 0; e < problem.edges.size(); ++e)
      if (layout.edges[e].from != problem.edges[e].from ||
          layout.edges[e].to != problem.edges[e].to)
        return false;
    return true;
  };
  if (cached && fits(*cached)) {
    built->layout = std::move(*cached);
  } else {
    built->layout = layoutProblem(problem, options_);
    ++graphvizRuns_;
    if (cache_) cache_->store(snapshotHash_, key, built->layout);
  }
  return *interiors_.emplace(key, std::move(built)).first->second;
}

Scene SceneLayouter::layout(const Expansion& expanded) {
  const VisibleGraph visible = visibleGraph(*model_, tree_, expanded);
  const FrameMetrics frame(options_);
  Scene scene;
  scene.itemOfBox = visible.itemOfBox;
  std::map<std::pair<VisibleItem::Kind, int>, int> sceneItem;
  for (size_t i = 0; i < visible.items.size(); ++i) {
    const VisibleItem& item = visible.items[i];
    sceneItem[{item.kind, item.index}] = static_cast<int>(i);
    scene.items.push_back({item,
                           {},
                           item.kind == VisibleItem::Kind::Box
                               ? boxLines(model_->boxes()[static_cast<size_t>(item.index)])
                               : moduleLines(tree_.modules()[static_cast<size_t>(item.index)])});
  }

  // Place every expanded module's interior inside the box its parent gave it.
  std::vector<Point> offsetOf(tree_.modules().size());
  std::vector<const Interior*> interiorOf(tree_.modules().size(), nullptr);
  std::vector<int> pending{0};
  while (!pending.empty()) {
    const int module = pending.back();
    pending.pop_back();
    const Interior& in = interior(module, expanded);
    interiorOf[static_cast<size_t>(module)] = &in;
    for (size_t i = 0; i < in.items.size(); ++i) {
      const Rect rect = in.layout.boxes[i].translated(offsetOf[static_cast<size_t>(module)]);
      const VisibleItem& item = in.items[i];
      const bool open = item.kind == VisibleItem::Kind::Module &&
                        expanded.contains(tree_.modules()[static_cast<size_t>(item.index)].path);
      if (open) {
        scene.frames.push_back({item.index, rect});
        offsetOf[static_cast<size_t>(item.index)] = rect.min + frame.inset();
        pending.push_back(item.index);
      } else {
        scene.items[static_cast<size_t>(sceneItem.at({item.kind, item.index}))].rect = rect;
      }
    }
  }
  scene.bounds = interiorOf[0]->layout.bounds;

  // Route each visible edge through the innermost module holding both ends.
  auto container = [&](const VisibleItem& item) {
    return item.kind == VisibleItem::Kind::Box
               ? tree_.moduleOfBox(item.index)
               : tree_.modules()[static_cast<size_t>(item.index)].parent;
  };
  for (const VisibleEdge& edge : visible.edges) {
    const VisibleItem& p = visible.items[static_cast<size_t>(edge.from)];
    const VisibleItem& q = visible.items[static_cast<size_t>(edge.to)];
    // The items each side enters the common module by: itself, or its enclosing module there.
    const int common = tree_.commonAncestor(container(p), container(q));
    auto entering = [&](VisibleItem item) {
      for (int m = container(item); m != common; m = tree_.modules()[static_cast<size_t>(m)].parent)
        item = {VisibleItem::Kind::Module, m};
      return item;
    };
    const VisibleItem repP = entering(p), repQ = entering(q);
    const Interior& in = *interiorOf[static_cast<size_t>(common)];
    auto indexIn = [&](const VisibleItem& rep) {
      return static_cast<int>(std::find(in.items.begin(), in.items.end(), rep) - in.items.begin());
    };
    const EdgePath& path =
        in.layout.edges[static_cast<size_t>(in.edgeOf.at({indexIn(repP), indexIn(repQ)}))];
    const Point offset = offsetOf[static_cast<size_t>(common)];
    const Rect& fromRect = scene.items[static_cast<size_t>(edge.from)].rect;
    const Rect& toRect = scene.items[static_cast<size_t>(edge.to)].rect;
    std::vector<Point> body;
    for (const Point& point : path.spline)
      body.push_back(point + offset);
    if (body.empty()) // dot drew nothing: a straight line between the items
      body = {bottomCentre(fromRect), bottomCentre(fromRect), topCentre(toRect), topCentre(toRect)};
    SceneEdge out{
        edge.from, edge.to, edge.count, {}, path.spline.empty() ? body.back() : path.tip + offset};
    // Ends that entered the common module through an enclosing module's box are extended
    // to the boxes themselves.
    if (repP == p) {
      out.spline = std::move(body);
    } else {
      out.spline.push_back(bottomCentre(fromRect));
      appendLine(out.spline, body.front());
      out.spline.insert(out.spline.end(), body.begin() + 1, body.end());
    }
    if (!(repQ == q)) {
      appendLine(out.spline, out.tip);
      out.tip = topCentre(toRect);
      appendLine(out.spline, out.tip);
    }
    scene.edges.push_back(std::move(out));
  }

  scene.groups.assign(model_->groups().size(), Rect{});
  for (size_t g = 0; g < model_->groups().size(); ++g)
    for (int member : model_->groups()[g].members) {
      const SceneItem& item =
          scene.items[static_cast<size_t>(scene.itemOfBox[static_cast<size_t>(member)])];
      if (item.item.kind == VisibleItem::Kind::Box)
        scene.groups[g] = scene.groups[g].united(item.rect.expanded(options_.padding));
    }
  return scene;
}

} // namespace loupe::view
