// Collapse by module path and the per-module layout that keeps large graphs usable.
#include <gtest/gtest.h>

#include <chrono>

#include "gui/tools/graph_generator.h"
#include "gui/viewmodel/scene_layout.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

// Three layers of 23 ops each, weights in their layers, the output at the top level.
std::shared_ptr<const GraphModel> threeLayers(GeneratedStage stage = GeneratedStage::Fused) {
  return testing::parse(generateGraphLir(3 * 23, stage));
}

int countItems(const VisibleGraph& graph, VisibleItem::Kind kind) {
  return static_cast<int>(std::count_if(graph.items.begin(), graph.items.end(),
                                        [&](const VisibleItem& i) { return i.kind == kind; }));
}

TEST(ModuleTree, FollowsDottedModulePaths) {
  const auto model = threeLayers();
  const ModuleTree tree(*model);
  const Module& root = tree.modules()[0];
  ASSERT_EQ(root.children.size(), 1u);
  const Module& top = tree.modules()[static_cast<size_t>(root.children[0])];
  EXPECT_EQ(top.path, "model");
  const int layers = tree.find("model.layers");
  ASSERT_GE(layers, 0);
  EXPECT_EQ(tree.modules()[static_cast<size_t>(layers)].children.size(), 3u);
  const int attnQ = tree.find("model.layers.1.attn.q");
  ASSERT_GE(attnQ, 0);
  EXPECT_EQ(tree.modules()[static_cast<size_t>(attnQ)].name, "q");
  EXPECT_EQ(root.totalBoxes, static_cast<int>(model->boxes().size()));
  // A layer's weight sits in the module that uses it; the return box at the top level.
  EXPECT_EQ(tree.moduleOfBox(model->findByName("L1_wq")), attnQ);
  EXPECT_EQ(tree.moduleOfBox(model->findByName("return")), 0);
  EXPECT_EQ(tree.pathsToShow(model->findByName("L2_q")),
            (std::vector<std::string>{"model", "model.layers", "model.layers.2",
                                      "model.layers.2.attn", "model.layers.2.attn.q"}));
}

TEST(ModuleTree, LongListsOfLayersAreGroupedInRuns) {
  const auto model = testing::parse(generateGraphLir(86 * 23, GeneratedStage::Fused));
  const ModuleTree tree(*model);
  const Module& layers = tree.modules()[static_cast<size_t>(tree.find("model.layers"))];
  ASSERT_EQ(layers.children.size(), 2u);
  const Module& first = tree.modules()[static_cast<size_t>(layers.children[0])];
  const Module& second = tree.modules()[static_cast<size_t>(layers.children[1])];
  EXPECT_TRUE(first.synthetic);
  EXPECT_EQ(first.path, "model.layers[0-63]");
  EXPECT_EQ(first.children.size(), kMaxChildren);
  EXPECT_EQ(second.path, "model.layers[64-85]");
  EXPECT_EQ(
      tree.pathsToShow(model->findByName("L70_q")),
      (std::vector<std::string>{"model", "model.layers", "model.layers[64-85]", "model.layers.70",
                                "model.layers.70.attn", "model.layers.70.attn.q"}));
  EXPECT_EQ(first.totalBoxes + second.totalBoxes, layers.totalBoxes);
}

TEST(VisibleGraph, CollapsedModulesAreOneBoxWithMergedEdges) {
  const auto model = threeLayers();
  const ModuleTree tree(*model);
  const VisibleGraph closed = visibleGraph(*model, tree, {"model", "model.layers"});
  // The three layers are boxes; x is used by layer 0 only, so it is inside it.
  EXPECT_EQ(countItems(closed, VisibleItem::Kind::Module), 3);
  EXPECT_EQ(countItems(closed, VisibleItem::Kind::Box), 1); // the return box
  ASSERT_EQ(closed.edges.size(), 3u); // layer0→1, layer1→2, layer2→return
  // Layer 1 reads layer 0's output three times (mean, sub, residual add): one edge of count 3.
  const auto layer = [&](int i) {
    return closed.itemOfBox[static_cast<size_t>(model->findByName("L" + std::to_string(i) + "_m"))];
  };
  std::vector<VisibleEdge> fromFirst;
  std::copy_if(closed.edges.begin(), closed.edges.end(), std::back_inserter(fromFirst),
               [&](const VisibleEdge& e) { return e.from == layer(0); });
  ASSERT_EQ(fromFirst.size(), 1u);
  EXPECT_EQ(fromFirst[0].to, layer(1));
  EXPECT_EQ(fromFirst[0].count, 3);
  EXPECT_EQ(closed.moduleFrames.size(), 2u);

  // Expanding one layer shows its submodules and boxes; the others stay collapsed.
  const VisibleGraph open = visibleGraph(*model, tree, {"model", "model.layers", "model.layers.1"});
  EXPECT_EQ(countItems(open, VisibleItem::Kind::Module), 2 + 3); // layers 0 and 2; norm, attn, mlp
  EXPECT_EQ(countItems(open, VisibleItem::Kind::Box), 3);        // r1, r2 and the return box
  for (size_t box = 0; box < model->boxes().size(); ++box)
    EXPECT_LT(open.itemOfBox[box], static_cast<int>(open.items.size()));
}

TEST(VisibleGraph, EverythingExpandedIsTheModelItself) {
  const auto model = threeLayers();
  const ModuleTree tree(*model);
  Expansion all;
  for (size_t m = 1; m < tree.modules().size(); ++m)
    all.insert(tree.modules()[m].path);
  const VisibleGraph graph = visibleGraph(*model, tree, all);
  EXPECT_EQ(graph.items.size(), model->boxes().size());
  EXPECT_EQ(graph.edges.size(), model->edges().size());
  EXPECT_EQ(defaultExpansion(tree), all); // small graphs open fully expanded
}

TEST(VisibleGraph, LargeGraphsOpenCollapsedWithinTheThreshold) {
  const auto model = testing::parse(generateGraphLir(2000, GeneratedStage::Kernels));
  const ModuleTree tree(*model);
  ASSERT_GT(tree.modules()[0].totalBoxes, kCollapseAbove);
  const Expansion expanded = defaultExpansion(tree);
  const VisibleGraph graph = visibleGraph(*model, tree, expanded);
  EXPECT_LE(static_cast<int>(graph.items.size()), kCollapseAbove);
  EXPECT_GT(graph.items.size(), 1u);
  EXPECT_TRUE(expanded.contains("model"));
}

void expectDrawable(const Scene& scene) {
  for (size_t i = 0; i < scene.items.size(); ++i) {
    EXPECT_TRUE(scene.bounds.expanded(1).contains(scene.items[i].rect)) << "item " << i;
    EXPECT_FALSE(scene.items[i].rect.empty()) << "item " << i;
    for (size_t j = i + 1; j < scene.items.size(); ++j)
      EXPECT_FALSE(scene.items[i].rect.overlaps(scene.items[j].rect)) << "items " << i << ", " << j;
  }
  for (const SceneEdge& edge : scene.edges) {
    ASSERT_GE(edge.spline.size(), 4u);
    EXPECT_EQ((edge.spline.size() - 1) % 3, 0u);
    EXPECT_TRUE(
        scene.items[static_cast<size_t>(edge.from)].rect.expanded(1).contains(edge.spline.front()));
    EXPECT_TRUE(scene.items[static_cast<size_t>(edge.to)].rect.expanded(1).contains(edge.tip));
  }
}

TEST(SceneLayout, NestedModulesLayOutInsideTheirFrames) {
  const auto model = threeLayers();
  SceneLayouter layouter(model, {});
  const Expansion expanded{"model", "model.layers", "model.layers.1", "model.layers.1.attn",
                           "model.layers.1.norm"};
  const Scene scene = layouter.layout(expanded);
  expectDrawable(scene);
  ASSERT_EQ(scene.frames.size(), expanded.size());
  const ModuleTree& tree = layouter.tree();
  // Every visible box lies inside the frame of each expanded module holding it.
  for (const SceneFrame& frame : scene.frames)
    for (size_t box = 0; box < model->boxes().size(); ++box) {
      const SceneItem& item = scene.items[static_cast<size_t>(scene.itemOfBox[box])];
      const std::string& path = tree.modules()[static_cast<size_t>(frame.module)].path;
      const std::string& boxPath = model->boxes()[box].loc.module_path;
      if (item.item.kind == VisibleItem::Kind::Box && boxPath.starts_with(path + ".")) {
        EXPECT_TRUE(frame.rect.contains(item.rect)) << path << " / " << boxPath;
      }
    }
  // Fused groups are outlined around their visible members.
  const int norm = model->findByName("L1_n");
  const int group = model->boxes()[static_cast<size_t>(norm)].group;
  ASSERT_GE(group, 0);
  EXPECT_FALSE(scene.groups[static_cast<size_t>(group)].empty());
}

TEST(SceneLayout, ExpandingAModuleLaysOutOnlyItAndItsAncestors) {
  const auto model = threeLayers();
  SceneLayouter layouter(model, {});
  const Expansion first{"model", "model.layers"};
  layouter.layout(first);
  EXPECT_EQ(layouter.graphvizRuns(), 3); // root, model, model.layers
  Expansion second = first;
  second.insert("model.layers.2");
  expectDrawable(layouter.layout(second));
  EXPECT_EQ(layouter.graphvizRuns(), 3 + 4); // layers.2, and layers, model, root re-placed
  layouter.layout(first);
  EXPECT_EQ(layouter.graphvizRuns(), 7); // remembered
}

TEST(SceneLayout, TenThousandNodesOpenWithoutLayingOutTheWholeGraph) {
  const auto model = testing::parse(generateGraphLir(10000, GeneratedStage::Kernels));
  ASSERT_GT(model->boxes().size(), 10000u);
  SceneLayouter layouter(model, {});
  const auto start = std::chrono::steady_clock::now();
  const Scene scene = layouter.layout(defaultExpansion(layouter.tree()));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(static_cast<int>(scene.items.size()), kCollapseAbove);
  EXPECT_LT(seconds, 20) << "a Debug build; dot on all 10k nodes takes minutes";
  // One layer expanded from there is a small, separate layout.
  Expansion more = defaultExpansion(layouter.tree());
  for (const std::string& path : layouter.tree().pathsToShow(model->findByName("L200_q")))
    more.insert(path);
  const Scene opened = layouter.layout(more);
  const SceneItem& q = opened.items[static_cast<size_t>(
      opened.itemOfBox[static_cast<size_t>(model->findByName("L200_q"))])];
  EXPECT_EQ(q.item.kind, VisibleItem::Kind::Box);
  expectDrawable(opened);
}

} // namespace
} // namespace loupe::view
