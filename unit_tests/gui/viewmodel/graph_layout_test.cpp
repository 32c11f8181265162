// The layout the canvas draws: readable boxes that never overlap, edges that start and end at
// their boxes, fused groups outlined around their members.
#include <gtest/gtest.h>

#include "gui/viewmodel/graph_layout.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

void expectDrawable(const GraphLayout& layout, size_t boxes, const std::vector<Edge>& edges) {
  ASSERT_EQ(layout.boxes.size(), boxes);
  for (size_t i = 0; i < layout.boxes.size(); ++i) {
    EXPECT_TRUE(layout.bounds.expanded(1).contains(layout.boxes[i])) << "box " << i;
    for (size_t j = i + 1; j < layout.boxes.size(); ++j)
      EXPECT_FALSE(layout.boxes[i].overlaps(layout.boxes[j])) << "boxes " << i << " and " << j;
  }
  ASSERT_EQ(layout.edges.size(), edges.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    const EdgePath& path = layout.edges[e];
    EXPECT_EQ(path.from, edges[e].from);
    EXPECT_EQ(path.to, edges[e].to);
    ASSERT_GE(path.spline.size(), 4u);
    EXPECT_EQ((path.spline.size() - 1) % 3, 0u) << "cubic segments";
    EXPECT_TRUE(
        layout.boxes[static_cast<size_t>(path.from)].expanded(1).contains(path.spline.front()))
        << "edge " << e;
    EXPECT_TRUE(layout.boxes[static_cast<size_t>(path.to)].expanded(1).contains(path.tip))
        << "edge " << e;
  }
}

TEST(GraphLayout, BoxesShowOpNameAndTypes) {
  const auto model = testing::parse(testing::kSmallGraph);
  const Box& mm = model->boxes()[static_cast<size_t>(model->findByName("h"))];
  EXPECT_EQ(boxLines(mm), (std::vector<std::string>{"%h = aten.mm", "f32[s0,64]"}));
  const Box& input = model->boxes()[static_cast<size_t>(model->findByName("x"))];
  EXPECT_EQ(boxLines(input), (std::vector<std::string>{"%x", "f32[s0,64]"}));
  // The size grows with the longest line, so text always fits.
  const LayoutOptions options;
  const Point size = measureLines(boxLines(mm), options);
  EXPECT_FLOAT_EQ(size.x, 12 * options.charWidth + 2 * options.padding);
  EXPECT_FLOAT_EQ(size.y, 2 * options.lineHeight + 2 * options.padding);
}

TEST(GraphLayout, FlatLayoutIsDrawable) {
  const auto model = testing::parse(testing::kSmallGraph);
  const GraphLayout layout = layoutGraph(*model);
  expectDrawable(layout, model->boxes().size(), model->edges());
  // Dataflow runs top to bottom: the input x is above the matmul, which is above the return.
  const auto top = [&](const char* name) {
    return layout.boxes[static_cast<size_t>(model->findByName(name))].min.y;
  };
  EXPECT_LT(top("x"), top("h"));
  EXPECT_LT(top("h"), top("return"));
}

TEST(GraphLayout, FusedGroupsAreClustersAroundTheirMembers) {
  const auto model = testing::parse(testing::kSmallGraphAfter);
  ASSERT_EQ(model->groups().size(), 1u);
  const GraphLayout layout = layoutGraph(*model);
  expectDrawable(layout, model->boxes().size(), model->edges());
  ASSERT_EQ(layout.groups.size(), 1u);
  for (int member : model->groups()[0].members)
    EXPECT_TRUE(layout.groups[0].contains(layout.boxes[static_cast<size_t>(member)]));
  const Rect& outside = layout.boxes[static_cast<size_t>(model->findByName("h"))];
  EXPECT_FALSE(layout.groups[0].overlaps(outside));
}

TEST(GraphLayout, FastSettingsStillGiveADrawableLayout) {
  const auto model = testing::parse(testing::kSmallGraphAfter);
  LayoutOptions fast;
  fast.fastAbove = 0;
  EXPECT_NE(fast.key(), LayoutOptions{}.key());
  expectDrawable(layoutGraph(*model, fast), model->boxes().size(), model->edges());
}

} // namespace
} // namespace loupe::view
