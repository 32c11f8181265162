// The inspector's decisions for one node: those naming its value, in order, with their pass
// and rule location.
#include <gtest/gtest.h>

#include "gui/viewmodel/node_decisions.h"

namespace loupe::view {
namespace {

TEST(NodeDecisions, ListsTheDecisionsNamingTheValueWithPassAndRule) {
  const std::vector<PassItem> passes = {{.passId = 10, .info = {.name = "cse"}},
                                        {.passId = 11, .info = {.name = "pointwise-fusion"}}};
  const std::vector<DecisionRow> decisions = {
      {.id = 1,
       .pass_id = 10,
       .decision = {.ordinal = 1,
                    .kind = "merge",
                    .nodes = {"2", "1"},
                    .rule_file = "passes/cse.cpp",
                    .rule_line = 45}},
      {.id = 2, .pass_id = 11, .decision = {.ordinal = 2, .kind = "fusion", .nodes = {"3", "4"}}},
      {.id = 3,
       .pass_id = 11,
       .decision = {.ordinal = 3,
                    .kind = "fusion",
                    .nodes = {"1", "4"},
                    .rule_file = "passes/pointwise_fusion.cpp",
                    .rule_line = 50}},
      {.id = 4, .pass_id = 11, .decision = {.ordinal = 0, .kind = "fault", .nodes = {"1"}}},
  };

  std::vector<NodeDecision> about = decisionsAbout(decisions, passes, "1");
  ASSERT_EQ(about.size(), 3u);
  EXPECT_EQ(about[0].decision, &decisions[0].decision);
  EXPECT_EQ(about[0].pass, "cse");
  EXPECT_EQ(about[0].rule, "passes/cse.cpp:45");
  EXPECT_EQ(about[1].decision->ordinal, 3);
  EXPECT_EQ(about[1].pass, "pointwise-fusion");
  EXPECT_EQ(about[1].rule, "passes/pointwise_fusion.cpp:50");
  EXPECT_EQ(about[2].decision->kind, "fault");
  EXPECT_EQ(about[2].rule, ""); // no rule made it

  EXPECT_TRUE(decisionsAbout(decisions, passes, "9").empty());
}

} // namespace
} // namespace loupe::view
