// What a pass changed, as stepping through the pipeline highlights it.
#include <gtest/gtest.h>

#include "gui/viewmodel/pass_step.h"
#include "gui_test_support.h"

namespace loupe::view {
namespace {

std::vector<std::string> namesOf(const GraphModel& model, const std::vector<int>& boxes) {
  std::vector<std::string> names;
  for (int box : boxes)
    names.push_back(model.boxes()[static_cast<size_t>(box)].name);
  return names;
}

using Names = std::vector<std::string>;

TEST(PassStep, KnownRewriteShowsAddedRemovedAndRewrittenBoxes) {
  const auto before = testing::parse(testing::kSmallGraph);
  const auto after = testing::parse(testing::kSmallGraphAfter);
  const PassStep step = stepPass(*before, *after);
  EXPECT_TRUE(step.changed());
  EXPECT_EQ(namesOf(*before, step.removed), Names{"r"});
  EXPECT_EQ(namesOf(*after, step.added), Names{"z"});
  EXPECT_EQ(namesOf(*after, step.rewritten), Names{"s"}); // other=2 became other=3
  // The add moved into a fused group: the same node, not a removal and an addition.
  const int addBefore = before->findByName("y"), addAfter = after->findByName("y");
  EXPECT_EQ(step.match.aToB[static_cast<size_t>(addBefore)], addAfter);
  EXPECT_EQ(step.after[static_cast<size_t>(addAfter)], BoxChange::Unchanged);
  EXPECT_EQ(step.before[static_cast<size_t>(before->findByName("s"))], BoxChange::Rewritten);
  EXPECT_EQ(step.after[static_cast<size_t>(after->findByName("h"))], BoxChange::Unchanged);
}

TEST(PassStep, PassThatChangedNothing) {
  const auto a = testing::parse(testing::kSmallGraph);
  const auto b = testing::parse(testing::kSmallGraph);
  const PassStep step = stepPass(*a, *b);
  EXPECT_FALSE(step.changed());
  for (size_t i = 0; i < a->boxes().size(); ++i)
    EXPECT_EQ(step.match.aToB[i], static_cast<int>(i));
}

TEST(PassStep, ShapeChangeIsARewrite) {
  const auto before = testing::parse(testing::kSmallGraph);
  std::string text = testing::kSmallGraph;
  const std::string from = "%r = aten.relu(%h) : f32[s0,64]";
  text.replace(text.find(from), from.size(), "%r = aten.relu(%h) : f16[s0,64]");
  const auto after = testing::parse(text);
  EXPECT_EQ(namesOf(*after, stepPass(*before, *after).rewritten), Names{"r"});
}

} // namespace
} // namespace loupe::view
