// partingOf: where two compiles' traced lines part, and when they do not.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "inspector/diff/traced_path.h"

namespace loupe::diff {
namespace {

// Lines of f in branch.py at depth 0, then any inlined ones given in full.
std::vector<TracedLine> path(std::vector<int> lines) {
  std::vector<TracedLine> traced;
  for (int line : lines)
    traced.push_back({.file = "branch.py", .line = line, .function = "f"});
  return traced;
}

TEST(TracedPath, PartsAfterTheConditionWithBothContinuations) {
  // `if h.size(0) % 2 == 0:` at line 9: even sizes go on at 10, odd at 12.
  auto parting = partingOf(path({7, 8, 9, 10, 13}), path({7, 8, 9, 12, 13}));
  ASSERT_TRUE(parting);
  EXPECT_EQ(parting->condition.line, 9);
  ASSERT_TRUE(parting->nextA && parting->nextB);
  EXPECT_EQ(parting->nextA->line, 10);
  EXPECT_EQ(parting->nextB->line, 12);
}

TEST(TracedPath, EqualPathsDoNotPart) {
  EXPECT_FALSE(partingOf(path({7, 8, 9, 10, 13}), path({7, 8, 9, 10, 13})));
}

TEST(TracedPath, APathWithoutLinesOrWithoutACommonStartDoesNotPart) {
  EXPECT_FALSE(partingOf({}, path({7, 8})));
  EXPECT_FALSE(partingOf(path({7, 8}), {}));
  EXPECT_FALSE(partingOf(path({7, 8}), path({20, 21})));
}

TEST(TracedPath, APathThatStopsHasNoContinuation) {
  // A loop unrolled twice in A and three times in B: B goes round again where A leaves.
  auto parting = partingOf(path({3, 4, 3, 4, 6}), path({3, 4, 3, 4, 3, 4, 6}));
  ASSERT_TRUE(parting);
  EXPECT_EQ(parting->condition.line, 4);
  EXPECT_EQ(parting->nextA->line, 6);
  EXPECT_EQ(parting->nextB->line, 3);

  parting = partingOf(path({3, 4, 5}), path({3, 4}));
  ASSERT_TRUE(parting);
  EXPECT_EQ(parting->condition.line, 4);
  EXPECT_EQ(parting->nextA->line, 5);
  EXPECT_FALSE(parting->nextB);
}

TEST(TracedPath, TheSameLineAtAnotherDepthIsAnotherPlace) {
  std::vector<TracedLine> a = path({7, 8});
  std::vector<TracedLine> b = path({7});
  a.push_back({.file = "helper.py", .line = 2, .function = "g", .depth = 1});
  b.push_back({.file = "helper.py", .line = 2, .function = "g", .depth = 2});
  auto parting = partingOf(a, b);
  ASSERT_TRUE(parting);
  EXPECT_EQ(parting->condition.line, 7);
  EXPECT_EQ(parting->nextA->line, 8);
  EXPECT_EQ(parting->nextB->file, "helper.py");
}

TEST(TracedPath, ALineIsNamedShortInItsOwnFunctionAndInFullElsewhere) {
  TracedLine condition{.file = "/nonexistent/branch.py", .line = 9, .function = "f"};
  EXPECT_EQ(
      describeLine({.file = "/nonexistent/branch.py", .line = 10, .function = "f"}, condition),
      "line 10");
  EXPECT_EQ(describeLine({.file = "/nonexistent/util.py", .line = 4, .function = "g"}, condition),
            "/nonexistent/util.py:4 in g");
}

TEST(TracedPath, ALineQuotesItsCodeWithoutTheComment) {
  const std::string file = ::testing::TempDir() + "traced_path_branch.py";
  std::ofstream(file) << "def f(x):\n"
                         "    if x.size(0) % 2 == 0:  # even sizes\n"
                         "        s = '# not a comment' + \"it's\"  # but this is\n";
  TracedLine condition{.file = file, .line = 2, .function = "f"};
  EXPECT_EQ(describeLine(condition, condition), "line 2 `if x.size(0) % 2 == 0:`");
  EXPECT_EQ(describeLine({.file = file, .line = 3, .function = "f"}, condition),
            "line 3 `s = '# not a comment' + \"it's\"`");
  EXPECT_EQ(describeLine({.file = file, .line = 9, .function = "f"}, condition), "line 9");
  std::filesystem::remove(file);
}

} // namespace
} // namespace loupe::diff
