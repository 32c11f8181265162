// The diff view: the findings of `loupe diff`, matched boxes, and where each finding is.
#include <gtest/gtest.h>

#include "gui/viewmodel/diff_view.h"
#include "gui_test_support.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::view {
namespace {

// kSmallGraph, and the same frame compiled again without the relu (a planted change).
std::string writeTwoCompiles(const testing::ScratchDir& dir) {
  std::string withoutRelu = testing::kSmallGraph;
  const std::string relu = "  %r = aten.relu(%h) : f32[s0,64]  loc(\"m.py\":4 \"act\")\n";
  withoutRelu.erase(withoutRelu.find(relu), relu.size());
  const std::string scale = "aten.mul.Scalar(%r)";
  withoutRelu.replace(withoutRelu.find(scale), scale.size(), "aten.mul.Scalar(%h)");

  const std::string path = dir.file("diff.db");
  TraceWriter writer(path);
  const int64_t run = writer.beginRun({});
  for (const auto& [key, lir] :
       {std::pair{"0/0", std::string(testing::kSmallGraph)}, std::pair{"0/1", withoutRelu}}) {
    const int64_t compile = writer.beginCompile(
        run, {.compile_key = key, .frame_name = "f", .frame_file = "m.py", .frame_line = 1});
    PassRecord pass;
    pass.info.name = "cse";
    pass.snapshot = testing::snapshotOf(lir);
    writer.recordPass(compile, pass);
    writer.finishCompile(compile, {.wall_ms = 1});
  }
  return path;
}

TEST(DiffView, FindingsCentreOnTheirBoxesOnBothSides) {
  testing::ScratchDir dir;
  const TraceReader trace(writeTwoCompiles(dir));
  const DiffView view = buildDiffView(trace, 1, 2);
  EXPECT_EQ(view.pass, "cse");
  ASSERT_FALSE(view.report.findings.empty());
  EXPECT_FALSE(view.report.same);
  // The same findings as `loupe diff`.
  const diff::DiffReport cli = diff::diffCompiles({&trace, 1}, {&trace, 2});
  ASSERT_EQ(view.report.findings.size(), cli.findings.size());
  for (size_t i = 0; i < cli.findings.size(); ++i)
    EXPECT_EQ(view.report.findings[i].message, cli.findings[i].message);

  const int relu = view.a->findByName("r");
  EXPECT_EQ(view.statusA[static_cast<size_t>(relu)], DiffStatus::Unmatched);
  ASSERT_EQ(view.focus.size(), view.report.findings.size());
  bool reluFound = false;
  for (size_t i = 0; i < view.focus.size(); ++i)
    reluFound = reluFound || view.focus[i].boxA == relu;
  EXPECT_TRUE(reluFound) << "some finding points at the removed relu";

  // Matched nodes are linked both ways.
  const int mmA = view.a->findByName("h"), mmB = view.b->findByName("h");
  EXPECT_EQ(view.match.aToB[static_cast<size_t>(mmA)], mmB);
  EXPECT_EQ(view.match.bToA[static_cast<size_t>(mmB)], mmA);
  EXPECT_EQ(view.statusB[static_cast<size_t>(mmB)], DiffStatus::Matched);
}

TEST(DiffView, AFindingNamingOneSideIsFoundOnTheOtherThroughTheMatch) {
  const auto a = testing::parse(testing::kSmallGraph);
  const auto b = testing::parse(testing::kSmallGraph);
  const BoxMatch match = matchBoxes(*a, *b);
  diff::Finding finding{.kind = "hardcoded_dim", .nodes = {{.op = "aten.mm", .nameA = "h"}}};
  const FindingFocus focus = locateFinding(finding, *a, *b, match);
  EXPECT_EQ(focus.boxA, a->findByName("h"));
  EXPECT_EQ(focus.boxB, b->findByName("h"));

  diff::Finding byLine{.kind = "graph_break",
                       .source = diff::FindingSource{.file = "m.py", .line = 5}};
  const FindingFocus line = locateFinding(byLine, *a, *b, match);
  EXPECT_EQ(line.boxA, a->findByName("s"));
  EXPECT_EQ(line.boxB, b->findByName("s"));
}

TEST(DiffView, MissingPassIsAnErrorNamingTheCompiles) {
  testing::ScratchDir dir;
  const TraceReader trace(writeTwoCompiles(dir));
  EXPECT_THROW(buildDiffView(trace, 1, 2, "no-such-pass"), std::exception);
}

} // namespace
} // namespace loupe::view
