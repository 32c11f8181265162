#include "gui/viewmodel/graph_layout.h"

#include <gvc.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "compiler/ir/error.h"

namespace loupe::view {
namespace {

constexpr float kPointsPerInch = 72;

void setAttr(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), const_cast<char*>(value.c_str()),
            const_cast<char*>(""));
}

std::string inches(float points) {
  return std::to_string(points / kPointsPerInch);
}

// Graphviz keeps global state and is not thread-safe, so its calls are serialised. One gvc
// context serves the process and is never freed: gvFreeContext does not release the plugin
// configuration gvContext loads (Graphviz 2.43), so a context per layout would leak it on
// every run, while this one stays reachable.
std::mutex& graphvizMutex() {
  static std::mutex mutex;
  return mutex;
}

GVC_t* graphvizContext() {
  static GVC_t* const context = gvContext();
  return context;
}

// One cgraph graph, freed (with its layout) in the order Graphviz requires.
struct GraphvizGraph {
  GVC_t* gvc = graphvizContext();
  Agraph_t* graph = agopen(const_cast<char*>("layout"), Agdirected, nullptr);
  bool laidOut = false;
  ~GraphvizGraph() {
    if (laidOut) gvFreeLayout(gvc, graph);
    agclose(graph);
  }
};

} // namespace

std::string LayoutOptions::key() const {
  char text[96];
  std::snprintf(text, sizeof text, "dot1 c%g l%g p%g f%d", charWidth, lineHeight, padding,
                fastAbove);
  return text;
}

std::vector<std::string> boxLines(const Box& box) {
  std::vector<std::string> lines{box.title()};
  if (!box.resultTypes.empty()) lines.push_back(box.resultTypes);
  return lines;
}

Point measureLines(const std::vector<std::string>& lines, const LayoutOptions& options) {
  size_t longest = 0;
  for (const auto& line : lines)
    longest = std::max(longest, line.size());
  return {static_cast<float>(longest) * options.charWidth + 2 * options.padding,
          static_cast<float>(lines.size()) * options.lineHeight + 2 * options.padding};
}

GraphLayout layoutProblem(const LayoutProblem& problem, const LayoutOptions& options) {
  const std::lock_guard lock(graphvizMutex());
  GraphvizGraph gv;
  setAttr(gv.graph, "rankdir", "TB");
  setAttr(gv.graph, "nodesep", "0.3");
  setAttr(gv.graph, "ranksep", "0.4");
  if (static_cast<int>(problem.nodes.size()) > options.fastAbove) {
    // The tuning measured in docs/viewer.md: ~5x faster on large graphs.
    setAttr(gv.graph, "nslimit", "2");
    setAttr(gv.graph, "nslimit1", "2");
    setAttr(gv.graph, "mclimit", "0.1");
    setAttr(gv.graph, "searchsize", "10");
  }

  std::vector<Agraph_t*> clusters;
  for (int c = 0; c < problem.clusters; ++c) {
    std::string name = "cluster_" + std::to_string(c);
    clusters.push_back(agsubg(gv.graph, name.data(), 1));
  }
  std::vector<Agnode_t*> nodes;
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const LayoutNode& spec = problem.nodes[i];
    std::string name = "n" + std::to_string(i);
    Agnode_t* node = agnode(gv.graph, name.data(), 1);
    setAttr(node, "shape", "box");
    setAttr(node, "fixedsize", "true");
    setAttr(node, "label", "");
    setAttr(node, "width", inches(spec.width));
    setAttr(node, "height", inches(spec.height));
    if (spec.cluster >= 0 && spec.cluster < problem.clusters)
      agsubnode(clusters[static_cast<size_t>(spec.cluster)], node, 1);
    nodes.push_back(node);
  }
  // cgraph merges parallel edges of a strict graph only; ours is not strict, so each problem
  // edge keeps its own Agedge and spline.
  std::vector<Agedge_t*> edges;
  for (const Edge& edge : problem.edges)
    edges.push_back(agedge(gv.graph, nodes.at(static_cast<size_t>(edge.from)),
                           nodes.at(static_cast<size_t>(edge.to)), nullptr, 1));

  if (gvLayout(gv.gvc, gv.graph, "dot") != 0)
    throw Error("layout", "Graphviz dot failed to lay out a graph of " +
                              std::to_string(nodes.size()) + " nodes");
  gv.laidOut = true;

  // Graphviz's y axis points up; the canvas's points down.
  const boxf bb = GD_bb(gv.graph);
  auto flip = [&](pointf p) {
    return Point{static_cast<float>(p.x - bb.LL.x), static_cast<float>(bb.UR.y - p.y)};
  };
  auto flipBox = [&](boxf b) {
    const Point a = flip(b.LL), c = flip(b.UR);
    return Rect{{std::min(a.x, c.x), std::min(a.y, c.y)}, {std::max(a.x, c.x), std::max(a.y, c.y)}};
  };

  GraphLayout layout;
  layout.bounds = flipBox(bb);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Point c = flip(ND_coord(nodes[i]));
    const float halfW = problem.nodes[i].width / 2, halfH = problem.nodes[i].height / 2;
    layout.boxes.push_back({{c.x - halfW, c.y - halfH}, {c.x + halfW, c.y + halfH}});
  }
  for (size_t i = 0; i < edges.size(); ++i) {
    EdgePath path{.from = problem.edges[i].from, .to = problem.edges[i].to};
    const splines* spl = ED_spl(edges[i]);
    if (spl != nullptr && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int k = 0; k < bz.size; ++k)
        path.spline.push_back(flip(bz.list[k]));
      path.tip = bz.eflag ? flip(bz.ep) : path.spline.back();
    }
    layout.edges.push_back(std::move(path));
  }
  for (Agraph_t* cluster : clusters)
    layout.groups.push_back(flipBox(GD_bb(cluster)));
  return layout;
}

GraphLayout layoutGraph(const GraphModel& model, const LayoutOptions& options) {
  LayoutProblem problem;
  problem.clusters = static_cast<int>(model.groups().size());
  for (const Box& box : model.boxes()) {
    const Point size = measureLines(boxLines(box), options);
    problem.nodes.push_back({size.x, size.y, box.group});
  }
  problem.edges = model.edges();
  return layoutProblem(problem, options);
}

} // namespace loupe::view
