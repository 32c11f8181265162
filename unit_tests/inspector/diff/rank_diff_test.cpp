// The differ across ranks on hand-made traces: one trace per rank (or one holding several
// ranks' runs), each rank's compiles written as the Python adapter would, and the findings
// that name the rank that compiled, recompiled or traced differently.
#include <filesystem>
#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <vector>

#include "inspector/diff/finding_kinds.h"
#include "inspector/diff/rank_diff.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::diff {
namespace {

// `x @ w`, then relu; with `pad`, rank-dependent padding of the batch first (line 20).
std::string head(bool pad, int batch = 4) {
  std::string B = std::to_string(batch), P = std::to_string(batch + 1);
  std::string in = pad ? "%p" : "%x", rows = pad ? P : B;
  return "graph @head(%x: f32[" + B + ",16], %w: f32[16,8]) -> (f32[" + rows + ",8]) {\n" +
         (pad ? "  %p = aten.constant_pad_nd(%x) {pad=[0,0,0,1]} : f32[" + P +
                    ",16]  loc(\"model.py\":20 \"\")\n"
              : "") +
         "  %h = aten.mm(" + in + ", %w) : f32[" + rows + ",8]  loc(\"model.py\":21 \"fc\")\n" +
         "  %r = aten.relu(%h) : f32[" + rows + ",8]  loc(\"model.py\":21 \"\")\n" +
         "  return %r\n}\n";
}

std::string signature(int batch) {
  return R"([{"shape": [")" + std::to_string(batch) +
         R"(", "16"], "dtype": "float32", "name": "x"}])";
}

// A trace that one or more ranks write into, a run per rank.
class RankTrace {
public:
  explicit RankTrace(const std::string& suffix) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "ranks_" + test->name() + "_" + suffix + ".db";
    std::filesystem::remove(path_);
    writer_.emplace(path_);
  }
  ~RankTrace() { std::filesystem::remove(path_); }

  int64_t run(std::optional<int64_t> rank, std::optional<std::string> backend = "gloo") {
    return writer_->beginRun(RunInfo{.rank = rank,
                                     .world_size = rank ? std::optional<int64_t>(2) : std::nullopt,
                                     .process_group_backend = rank ? backend : std::nullopt});
  }
  int64_t compile(int64_t run, const std::string& lir, const std::string& key = "0/0",
                  int batch = 4) {
    int64_t id = writer_->beginCompile(run, CompileInfo{.compile_key = key,
                                                        .frame_name = "forward",
                                                        .frame_file = "model.py",
                                                        .frame_line = 18,
                                                        .graph_kind = "inference",
                                                        .input_signature_json = signature(batch)});
    writer_->recordPass(
        id, PassRecord{PassInfo{.name = "import", .ordinal = 0}, SnapshotRecord{lir, {}}});
    writer_->finishCompile(id, CompileOutcome{});
    return id;
  }
  TraceWriter& writer() { return *writer_; }
  const TraceReader& reader() {
    reader_.emplace(path_);
    return *reader_;
  }

private:
  std::string path_;
  std::optional<TraceWriter> writer_;
  std::optional<TraceReader> reader_;
};

// Two ranks, each in a trace of its own; `second` writes rank 1's compiles.
struct TwoRanks {
  RankTrace t0{"0"}, t1{"1"};
  int64_t run0 = t0.run(0), run1 = t1.run(1);
  RankReport diff() { return diffRanks(rankRuns({&t0.reader(), &t1.reader()})); }
};

TEST(RankDiff, RanksThatCompiledTheSameGraphsAreTheSame) {
  TwoRanks ranks;
  ranks.t0.compile(ranks.run0, head(false));
  ranks.t1.compile(ranks.run1, head(false));
  RankReport report = ranks.diff();
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[1].rank, 1);
  EXPECT_EQ(report.ranks[1].worldSize, 2);
  EXPECT_EQ(report.ranks[1].backend, "gloo");
  EXPECT_TRUE(report.same);
  EXPECT_TRUE(report.findings.empty());
}

TEST(RankDiff, ARankThatTracedAnotherGraphIsNamedWithTheNodeWhereTheyPart) {
  TwoRanks ranks;
  ranks.t0.compile(ranks.run0, head(false));
  ranks.t1.compile(ranks.run1, head(true));
  RankReport report = ranks.diff();
  EXPECT_FALSE(report.same);
  ASSERT_FALSE(report.findings.empty());
  const RankFinding& top = report.findings[0];
  EXPECT_EQ(top.finding.kind, "rank_graph_diff");
  EXPECT_EQ(top.finding.severity, Severity::Error);
  EXPECT_EQ(top.ranks, std::vector<int64_t>{1});
  EXPECT_EQ(top.compileId, "0");
  EXPECT_EQ(top.graphKind, "inference");
  ASSERT_TRUE(top.finding.source);
  EXPECT_EQ(top.finding.source->line, 20);
  ASSERT_EQ(top.finding.nodes.size(), 1u);
  EXPECT_EQ(top.finding.nodes[0].op, "aten.constant_pad_nd");
  EXPECT_EQ(top.finding.nodes[0].nameB, "%p");
  EXPECT_NE(top.finding.message.find("rank 0 (A) and rank 1 (B)"), std::string::npos)
      << top.finding.message;
}

TEST(RankDiff, ACompileOnlyOneRankMadeIsReportedWithItsRecompileReason) {
  TwoRanks ranks;
  ranks.t0.compile(ranks.run0, head(false));
  int64_t first = ranks.t1.compile(ranks.run1, head(false));
  ranks.t1.writer().recordGuard(
      first, GuardRecord{.kind = "SHAPE_ENV",
                         .expr = "L['x'].size()[0] < 8",
                         .user_stack = {StackFrame{.file = "model.py", .line = 30}},
                         .failed = true});
  int64_t again = ranks.t1.compile(ranks.run1, head(false, 8), "0/1", 8);
  ranks.t1.writer().recordRecompile(again, RecompileRecord{.previous_compile_key = "0/0",
                                                           .reason = "size of x changed",
                                                           .failed_guard = "L['x'].size()[0] < 8"});
  RankReport report = ranks.diff();
  EXPECT_FALSE(report.same);
  ASSERT_EQ(report.findings.size(), 1u);
  const RankFinding& only = report.findings[0];
  EXPECT_EQ(only.finding.kind, "rank_only_compile");
  EXPECT_EQ(only.ranks, std::vector<int64_t>{1});
  EXPECT_EQ(only.compileId, "1");
  ASSERT_TRUE(only.finding.source);
  EXPECT_EQ(only.finding.source->line, 30);
  EXPECT_NE(only.finding.message.find("rank 0 did not"), std::string::npos) << only.finding.message;
  EXPECT_NE(only.finding.message.find("size of x changed"), std::string::npos)
      << only.finding.message;
}

TEST(RankDiff, ARecompileForAnotherReasonIsReported) {
  TwoRanks ranks;
  for (auto [trace, run, reason] : {std::tuple{&ranks.t0, ranks.run0, "x changed"},
                                    std::tuple{&ranks.t1, ranks.run1, "y changed"}}) {
    trace->compile(run, head(false));
    int64_t again = trace->compile(run, head(false, 8), "0/1", 8);
    trace->writer().recordRecompile(
        again, RecompileRecord{.previous_compile_key = "0/0", .reason = reason});
  }
  RankReport report = ranks.diff();
  EXPECT_FALSE(report.same);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].finding.kind, "rank_recompile_diff");
  EXPECT_EQ(report.findings[0].ranks, std::vector<int64_t>{1});
  EXPECT_NE(report.findings[0].finding.message.find("`y changed` against `x changed`"),
            std::string::npos)
      << report.findings[0].finding.message;
}

TEST(RankDiff, OtherInputShapesAloneAreANote) {
  TwoRanks ranks;
  ranks.t0.compile(ranks.run0, head(false, 4), "0/0", 4);
  ranks.t1.compile(ranks.run1, head(false, 8), "0/0", 8);
  RankReport report = ranks.diff();
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].finding.kind, "rank_input_shapes");
  EXPECT_EQ(report.findings[0].finding.severity, Severity::Note);
}

TEST(RankDiff, RankRunsTakeTheLatestRunOfEachRankAndSkipRunsWithoutOne) {
  RankTrace shared("shared");
  shared.run(std::nullopt);
  shared.run(1);
  int64_t latestOne = shared.run(1);
  int64_t zero = shared.run(0, std::nullopt); // before the process group was initialised
  std::vector<RankRun> runs = rankRuns({&shared.reader()});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].rank, 0);
  EXPECT_EQ(runs[0].runId, zero);
  EXPECT_FALSE(runs[0].backend);
  EXPECT_EQ(runs[1].rank, 1);
  EXPECT_EQ(runs[1].runId, latestOne);
}

} // namespace
} // namespace loupe::diff
