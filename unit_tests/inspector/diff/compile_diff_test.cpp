// The differ's findings on hand-made traces: each case writes two (or more) compiles of one
// frame, with the planted bug a user would have, and checks that the top finding names it.
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "inspector/diff/compile_diff.h"
#include "inspector/diff/finding_kinds.h"
#include "inspector/diff/graph_comparison.h"
#include "inspector/trace/trace_reader.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::diff {
namespace {

// A trace written pass by pass from .lir texts, as the recorder would write it.
class TraceFile {
public:
  TraceFile() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "diff_" + test->name() + ".db";
    std::filesystem::remove(path_);
    writer_.emplace(path_);
    run_ = writer_->beginRun(RunInfo{});
  }
  ~TraceFile() { std::filesystem::remove(path_); }

  // One compile whose passes left the given graphs, in order.
  int64_t compile(const std::vector<std::pair<std::string, std::string>>& passes,
                  const std::string& key = "0/0", const std::string& signature = "[]",
                  const std::string& kind = "forward") {
    int64_t id = writer_->beginCompile(run_, CompileInfo{.compile_key = key,
                                                         .frame_name = "forward",
                                                         .frame_file = "model.py",
                                                         .frame_line = 5,
                                                         .graph_kind = kind,
                                                         .input_signature_json = signature});
    int ordinal = 0;
    for (const auto& [name, lir] : passes)
      writer_->recordPass(
          id, PassRecord{PassInfo{.name = name, .ordinal = ordinal++}, SnapshotRecord{lir, {}}});
    writer_->finishCompile(id, CompileOutcome{});
    return id;
  }
  TraceWriter& writer() { return *writer_; }
  int64_t run() const { return run_; }
  const TraceReader& reader() {
    reader_.emplace(path_);
    return *reader_;
  }

private:
  std::string path_;
  std::optional<TraceWriter> writer_;
  std::optional<TraceReader> reader_;
  int64_t run_ = 0;
};

std::string b(int batch) {
  return std::to_string(batch);
}

// An MLP layer: nothing but the batch changes between compiles.
std::string mlp(int batch) {
  return "graph @mlp(%x: f32[" + b(batch) + ",64], %w: f32[64,8]) -> (f32[" + b(batch) +
         ",8]) {\n"
         "  %h = aten.mm(%x, %w) : f32[" +
         b(batch) +
         ",8]  loc(\"model.py\":11 \"block.fc\")\n"
         "  %r = aten.relu(%h) : f32[" +
         b(batch) +
         ",8]  loc(\"model.py\":12 \"block.act\")\n"
         "  return %r\n}\n";
}

// `pred - target` with pred (B,1) and target (B,): (B,B) instead of (B,).
std::string blowup(int batch) {
  std::string B = b(batch);
  return "graph @loss(%x: f32[" + B + ",16], %t: f32[" + B +
         "]) -> (f32[]) {\n"
         "  %p = aten.sum.dim_IntList(%x) {dim=[1], keepdim=true} : f32[" +
         B +
         ",1]  loc(\"model.py\":30 \"head\")\n"
         "  %d = aten.sub.Tensor(%p, %t) {alpha=1} : f32[" +
         B + "," + B +
         "]  loc(\"model.py\":31 \"\")\n"
         "  %sq = aten.mul.Tensor(%d, %d) : f32[" +
         B + "," + B +
         "]  loc(\"model.py\":32 \"\")\n"
         "  %l = aten.mean(%sq) : f32[]  loc(\"model.py\":33 \"\")\n"
         "  return %l\n}\n";
}

// `x.view(4, -1)`: only right while the batch is 4.
std::string hardcodedView(int batch) {
  return "graph @pool(%x: f32[" + b(batch) +
         ",16]) -> (f32[4]) {\n"
         "  %v = aten.view(%x) {size=[4,-1]} : f32[4," +
         b(batch * 4) +
         "]  loc(\"model.py\":41 \"pool\")\n"
         "  %s = aten.sum.dim_IntList(%v) {dim=[1], keepdim=false} : f32[4]  loc(\"model.py\":42 "
         "\"pool\")\n"
         "  return %s\n}\n";
}

// Relu fused with the add or not.
std::string fused(int batch, bool fuse) {
  std::string B = b(batch);
  if (!fuse)
    return "graph @f(%x: f32[" + B + ",8]) -> (f32[" + B +
           ",8]) {\n"
           "  %a = aten.add.Tensor(%x, %x) {alpha=1} : f32[" +
           B +
           ",8]  loc(\"model.py\":50 \"\")\n"
           "  %r = aten.relu(%a) : f32[" +
           B +
           ",8]  loc(\"model.py\":51 \"\")\n"
           "  return %r\n}\n";
  return "graph @f(%x: f32[" + B + ",8]) -> (f32[" + B +
         ",8]) {\n"
         "  %r = loupe.fused(%x) {kind=\"pointwise\"} : f32[" +
         B +
         ",8] {\n"
         "    ^(%i: f32[" +
         B +
         ",8]):\n"
         "      %a = aten.add.Tensor(%i, %i) {alpha=1} : f32[" +
         B +
         ",8]  loc(\"model.py\":50 \"\")\n"
         "      %q = aten.relu(%a) : f32[" +
         B +
         ",8]  loc(\"model.py\":51 \"\")\n"
         "      yield %q\n  }\n"
         "  return %r\n}\n";
}

DiffReport diffTwo(TraceFile& trace, const std::string& a, const std::string& b2,
                   const std::string& pass = "shape-propagation") {
  int64_t first = trace.compile({{pass, a}});
  int64_t second = trace.compile({{pass, b2}}, "0/1");
  const TraceReader& reader = trace.reader();
  return diffCompiles({&reader, first}, {&reader, second});
}

TEST(CompileDiff, SameGraphAtTwoBatchSizesIsSame) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, mlp(8), mlp(16));
  EXPECT_TRUE(report.same);
  EXPECT_TRUE(report.findings.empty()) << report.findings.front().message;
}

TEST(CompileDiff, WeightDimEqualToTheBatchIsNotHardcoded) {
  // The mm's 8 columns come from the weight, not from a batch of 8.
  TraceFile trace;
  DiffReport report = diffTwo(trace, mlp(8), mlp(32));
  EXPECT_TRUE(report.same);
}

TEST(CompileDiff, BroadcastBlowupIsTheTopFindingWithItsLine) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, blowup(8), blowup(16));
  ASSERT_FALSE(report.findings.empty());
  const Finding& top = report.findings.front();
  EXPECT_EQ(top.kind, "broadcast_blowup");
  ASSERT_TRUE(top.source);
  EXPECT_EQ(top.source->file, "model.py");
  EXPECT_EQ(top.source->line, 31);
  ASSERT_EQ(top.nodes.size(), 1u);
  EXPECT_EQ(top.nodes[0].shapeB, "f32[16,16]");
  EXPECT_FALSE(report.same);
  // The square of the blown-up tensor grows as fast as its operand: not a second culprit.
  for (const Finding& f : report.findings)
    if (f.kind == "broadcast_blowup") {
      EXPECT_EQ(f.source->line, 31);
    }
}

TEST(CompileDiff, HardcodedViewIsTheTopFinding) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, hardcodedView(4), hardcodedView(8));
  ASSERT_FALSE(report.findings.empty());
  const Finding& top = report.findings.front();
  EXPECT_EQ(top.kind, "hardcoded_dim");
  ASSERT_TRUE(top.source);
  EXPECT_EQ(top.source->line, 41);
  EXPECT_NE(top.message.find("stays 4"), std::string::npos) << top.message;
  // The sum keeps the 4 of its operand: only the view is reported.
  EXPECT_EQ(std::count_if(report.findings.begin(), report.findings.end(),
                          [](const Finding& f) { return f.kind == "hardcoded_dim"; }),
            1);
}

// One projection traced at a static batch and re-traced with a dynamic one: the full slice
// `x[:, 0:]` is an alias in the first and a slice in the second, and the first also returns the
// transposed weight (the partitioner saved it for the backward). `reshapeTo`, when not empty,
// adds a reshape of the result to that shape in the dynamic compile only.
std::string projection(const std::string& B, bool staticTrace, const std::string& reshapeTo = "") {
  std::string text = "graph @g(%x: f32[" + B + ",64], %w: f32[64,64]) -> (f32[" + B + ",64]" +
                     (staticTrace ? ", f32[64,64]" : "") + ") {\n";
  text += staticTrace ? "  %v = aten.alias(%x) : f32[" + B + ",64]  loc(\"model.py\":60 \"attn\")\n"
                      : "  %v = aten.slice.Tensor(%x) {dim=1, start=0, end=9223372036854775807, "
                        "step=1} : f32[" +
                            B + ",64]  loc(\"model.py\":60 \"attn\")\n";
  text += "  %wt = aten.t(%w) : f32[64,64]  loc(\"model.py\":61 \"attn.proj\")\n"
          "  %h = aten.mm(%v, %wt) : f32[" +
          B + ",64]  loc(\"model.py\":61 \"attn.proj\")\n";
  std::string result = "%h";
  if (!reshapeTo.empty()) {
    text += "  %rs = aten.reshape(%h) {shape=" + reshapeTo + "} : f32" + reshapeTo +
            "  loc(\"model.py\":62 \"attn\")\n";
    result = "%rs";
  }
  text += "  %r = aten.relu(" + result + ") : f32[" + B + ",64]  loc(\"model.py\":63 \"attn\")\n";
  return text + "  return %r" + (staticTrace ? ", %wt" : "") + "\n}\n";
}

TEST(CompileDiff, ViewOnlyDifferencesOfARetraceAreOneNote) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, projection("2", true), projection("s0", false));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  const Finding& note = report.findings.front();
  EXPECT_EQ(note.kind, "retraced_views");
  EXPECT_EQ(note.severity, Severity::Note);
  EXPECT_NE(note.message.find("dynamic shapes"), std::string::npos) << note.message;
  EXPECT_NE(note.message.find("aten.alias"), std::string::npos) << note.message;
  EXPECT_NE(note.message.find("aten.slice.Tensor"), std::string::npos) << note.message;
  EXPECT_FALSE(differs(report.findings));
}

TEST(CompileDiff, AnIdentitySliceIsBypassedBeforeMatching) {
  // The dynamic trace slices the whole batch first (an identity), then the first column, as
  // the static one does directly: the identity must not be paired with the real slice.
  auto firstColumn = [](const std::string& B, bool identityFirst) {
    std::string text = "graph @g(%x: f32[" + B + ",8]) -> (f32[" + B + ",1]) {\n";
    std::string operand = "%x";
    if (identityFirst) {
      text += "  %s0 = aten.slice.Tensor(%x) {dim=0, start=0, end=9223372036854775807} : f32[" + B +
              ",8]  loc(\"model.py\":70 \"\")\n";
      operand = "%s0";
    }
    text += "  %s1 = aten.slice.Tensor(" + operand + ") {dim=1, start=0, end=1} : f32[" + B +
            ",1]  loc(\"model.py\":70 \"\")\n"
            "  %r = aten.sub.Scalar(%s1) {other=1} : f32[" +
            B + ",1]  loc(\"model.py\":70 \"\")\n  return %r\n}\n";
    return text;
  };
  TraceFile trace;
  DiffReport report = diffTwo(trace, firstColumn("2", false), firstColumn("s0", true));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
}

TEST(CompileDiff, AConstantTheStaticCompileFoldedIsNotADivergence) {
  // Positions 0..B-1: folded into a constant at batch 2, an arange over s0 when dynamic.
  auto positions = [](const std::string& B, bool folded) {
    std::string text = "graph @g(%x: f32[" + B + "]) -> (f32[" + B + "]) {\n";
    text += folded ? "  %p = loupe.constant() {data=[0.0, 1.0], dtype=f32, shape=[2]} : f32[2]  "
                     "loc(\"model.py\":90 \"\")\n"
                   : "  %p = aten.arange() {end=" + B + "} : f32[" + B +
                         "]  loc(\"model.py\":90 \"\")\n";
    return text + "  %r = aten.add.Tensor(%x, %p) {alpha=1} : f32[" + B +
           "]  loc(\"model.py\":91 \"\")\n  return %r\n}\n";
  };
  TraceFile trace;
  int64_t a = trace.compile(
      {{"shape-propagation", positions("2", false)}, {"constant-folding", positions("2", true)}});
  int64_t c = trace.compile(
      {{"shape-propagation", positions("s0", false)}, {"constant-folding", positions("s0", false)}},
      "0/1");
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
  EXPECT_EQ(report.findings.front().pass, "constant-folding");
}

TEST(CompileDiff, SizeOnlyNodesFusedInTheDynamicCompileAreNoFusionDiff) {
  // Positions 0..B-1 shifted by one: folded into a constant at batch 2; computed from s0 and,
  // in the dynamic compile, fused into a group the static one has no counterpart of.
  auto positions = [](const std::string& B, const std::string& stage) {
    std::string text = "graph @g(%x: f32[" + B + "]) -> (f32[" + B + "]) {\n";
    if (stage == "folded") {
      text += "  %p = loupe.constant() {data=[-1.0, 0.0], dtype=f32, shape=[2]} : f32[2]  "
              "loc(\"model.py\":90 \"\")\n";
    } else {
      text += "  %a = aten.arange() {end=" + B + "} : f32[" + B + "]  loc(\"model.py\":90 \"\")\n";
      std::string sub =
          "aten.sub.Scalar(%a) {other=1} : f32[" + B + "]  loc(\"model.py\":90 \"\")\n";
      if (stage == "fused")
        text += "  %p = loupe.fused(%a) {kind=\"pointwise\"} : f32[" + B + "] {\n    ^(%i: f32[" +
                B + "]):\n      %q = " + sub.replace(sub.find("%a"), 2, "%i") +
                "      yield %q\n  }\n";
      else
        text += "  %p = " + sub;
    }
    return text + "  %r = aten.add.Tensor(%x, %p) {alpha=1} : f32[" + B +
           "]  loc(\"model.py\":91 \"\")\n  return %r\n}\n";
  };
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", positions("2", "computed")},
                             {"constant-folding", positions("2", "folded")},
                             {"pointwise-fusion", positions("2", "folded")}});
  int64_t c = trace.compile({{"shape-propagation", positions("s0", "computed")},
                             {"constant-folding", positions("s0", "computed")},
                             {"pointwise-fusion", positions("s0", "fused")}},
                            "0/1");
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.back().message;
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
}

// Positions repeated over the batch: folded whole into a `[2,4]` constant at batch 2, while
// the dynamic compile folds only the `[1,4]` row and repeats it `s0` times. The two constants
// pair up by their line. `width` is the sum's width in the dynamic compile.
std::string repeatedPositions(bool staticTrace, const std::string& width = "4") {
  if (staticTrace)
    return "graph @g(%x: f32[2,4]) -> (f32[2,4]) {\n"
           "  %p = loupe.constant() {data=[0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0], dtype=f32, "
           "shape=[2, 4]} : f32[2,4]  loc(\"model.py\":100 \"\")\n"
           "  %r = aten.add.Tensor(%x, %p) {alpha=1} : f32[2,4]  loc(\"model.py\":101 \"\")\n"
           "  return %r\n}\n";
  return "graph @g(%x: f32[s0,4]) -> (f32[s0," + width +
         "]) {\n"
         "  %p0 = loupe.constant() {data=[0.0, 1.0, 2.0, 3.0], dtype=f32, shape=[1, 4]} : "
         "f32[1,4]  loc(\"model.py\":100 \"\")\n"
         "  %p = aten.repeat(%p0) {repeats=[s0, 1]} : f32[s0,4]  loc(\"model.py\":100 \"\")\n"
         "  %r = aten.add.Tensor(%x, %p) {alpha=1} : f32[s0," +
         width + "]  loc(\"model.py\":101 \"\")\n  return %r\n}\n";
}

TEST(CompileDiff, ValuesFromSizesFoldedToOtherPiecesAreNoDivergence) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, repeatedPositions(true), repeatedPositions(false));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.back().message;
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
  EXPECT_NE(report.findings.front().message.find("aten.repeat x1"), std::string::npos)
      << report.findings.front().message;
}

TEST(CompileDiff, WhatReadsValuesFromSizesStillHasItsShapesCompared) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, repeatedPositions(true), repeatedPositions(false, "8"));
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(differs(report.findings));
}

TEST(CompileDiff, ATransposeSavedInOneCompileOnlyIsViewOnly) {
  // The static compile computes the transpose for its extra output only; the dynamic one has
  // no such node at all.
  std::string withSaved = "graph @g(%x: f32[2,64], %w: f32[64,32]) -> (f32[2,32], f32[32,64]) {\n"
                          "  %h = aten.mm(%x, %w) : f32[2,32]  loc(\"model.py\":61 \"proj\")\n"
                          "  %wt = aten.t(%w) : f32[32,64]  loc(\"model.py\":61 \"proj\")\n"
                          "  return %h, %wt\n}\n";
  std::string without = "graph @g(%x: f32[s0,64], %w: f32[64,32]) -> (f32[s0,32]) {\n"
                        "  %h = aten.mm(%x, %w) : f32[s0,32]  loc(\"model.py\":61 \"proj\")\n"
                        "  return %h\n}\n";
  TraceFile trace;
  DiffReport report = diffTwo(trace, withSaved, without);
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
}

// A backward graph as aot_autograd's partitioner makes it: the static compile saved the
// activation's transpose `%at` (last), the dynamic one the activation `%a` itself (first) and
// transposes it here, with the symbolic batch as an extra input; so the saved values do not
// line up by position (`%m` has rank 3). `op` is the weight gradient's op.
std::string weightGradient(bool staticTrace, const std::string& op = "aten.mm") {
  std::string B = staticTrace ? "2" : "s0";
  std::string g = "%g: f32[" + B + ",32], %m: f32[" + B + ",4,4]";
  std::string text = "graph @bw(" +
                     (staticTrace ? g + ", %at: f32[64," + B + "]<strides=[1,64]>"
                                  : "%n: index<s0>, %a: f32[" + B + ",64], " + g) +
                     ") -> (f32[64,32], f32[" + B + ",4,4]) {\n";
  std::string operand = "%at";
  if (!staticTrace) {
    text += "  %t = aten.t(%a) : f32[64," + B + "]<strides=[1,64]>  loc(\"model.py\":61 \"\")\n";
    operand = "%t";
  }
  return text + "  %dw = " + op + "(" + operand +
         ", %g) : f32[64,32]  loc(\"model.py\":61 \"\")\n" + "  %dm = aten.relu(%m) : f32[" + B +
         ",4,4]  loc(\"model.py\":62 \"\")\n" + "  return %dw, %dm\n}\n";
}

// Two backward compiles of one frame, static then dynamic.
DiffReport diffBackwards(TraceFile& trace, const std::string& a, const std::string& b) {
  int64_t first = trace.compile({{"shape-propagation", a}}, "0/0", "[]", "backward");
  int64_t second = trace.compile({{"shape-propagation", b}}, "0/1", "[]", "backward");
  const TraceReader& reader = trace.reader();
  return diffCompiles({&reader, first}, {&reader, second});
}

TEST(CompileDiff, OtherSavedValuesOfABackwardAreOneNote) {
  TraceFile trace;
  DiffReport report = diffBackwards(trace, weightGradient(true), weightGradient(false));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  const Finding& note = report.findings.front();
  EXPECT_EQ(note.kind, "retraced_views");
  EXPECT_NE(note.message.find("saved other values"), std::string::npos) << note.message;
  EXPECT_FALSE(differs(report.findings));
}

TEST(CompileDiff, ABackwardThatComputesOtherwiseFromOtherSavedValuesDiffers) {
  TraceFile trace;
  DiffReport report = diffBackwards(trace, weightGradient(true), weightGradient(false, "aten.bmm"));
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(differs(report.findings));
}

TEST(CompileDiff, OnlyABackwardsInputsAreLinedUpAsSavedValues) {
  // The same graphs as forward graphs: their inputs are the frame's, not lined up.
  TraceFile trace;
  DiffReport report = diffTwo(trace, weightGradient(true), weightGradient(false));
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(differs(report.findings));
}

// The gradient of a 2-row token-type table, as BERT's backward computes it: the static compile
// saved the type ids expanded to the batch (`[2,8]` with strides `[0,1]`), the dynamic one saved
// the `[1,8]` row and expands it here, reading it before the gradient (in another slot of the
// same node). `viewOp` is the dynamic side's op on the saved row: `aten.expand`, or one that
// computes (a real difference).
std::string tokenTypeGradient(bool staticTrace, const std::string& viewOp = "aten.expand") {
  std::string B = staticTrace ? "2" : "s0";
  std::string text =
      "graph @bw(" +
      (staticTrace ? std::string("%g: f32[2,8,32], %ids: i64[2,8]<strides=[0,1]>")
                   : std::string("%n: index<s0>, %row: i64[1,8], %g: f32[s0,8,32]")) +
      ") -> (f32[2,32], f32[" + B + ",8,32]) {\n";
  std::string ids = "%ids";
  if (!staticTrace) {
    text += "  %ids = " + viewOp + "(%row) {size=[s0, 8]} : i64[s0,8]<strides=[0,1]>  " +
            "loc(\"model.py\":95 \"embeddings\")\n";
  }
  return text + "  %dw = aten.embedding_dense_backward(%g, " + ids +
         ") {num_weights=2, padding_idx=-1, scale_grad_by_freq=false} : f32[2,32]  "
         "loc(\"model.py\":96 \"embeddings\")\n"
         "  %dg = aten.relu(%g) : f32[" +
         B + ",8,32]  loc(\"model.py\":97 \"\")\n  return %dw, %dg\n}\n";
}

TEST(CompileDiff, AValueSavedExpandedInOneCompileAndExpandedInTheOtherIsOneNote) {
  TraceFile trace;
  DiffReport report = diffBackwards(trace, tokenTypeGradient(true), tokenTypeGradient(false));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  const Finding& note = report.findings.front();
  EXPECT_EQ(note.kind, "retraced_views");
  EXPECT_NE(note.message.find("in B aten.expand x1"), std::string::npos) << note.message;
  EXPECT_NE(note.message.find("1 taken in another form"), std::string::npos) << note.message;
}

TEST(CompileDiff, ASavedValueComputedOnInTheBackwardIsNotFolded) {
  // The same saved row negated instead of expanded: a computation, not a view of what the
  // other compile saved.
  TraceFile trace;
  DiffReport report =
      diffBackwards(trace, tokenTypeGradient(true), tokenTypeGradient(false, "aten.neg"));
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(differs(report.findings));
}

// Attention's saved keys as the partitioner hands them over: the static compile saved the
// permuted `[B,2,8,16]` (strides of a `[B,8,2,16]`), the dynamic one the `[B,8,2,16]` itself,
// permuted in the backward.
std::string savedKeys(bool staticTrace) {
  std::string B = staticTrace ? "2" : "s0";
  std::string permuted = "f32[" + B + ",2,8,16]<strides=[256,16,32,1]>";
  std::string text = "graph @bw(%g: f32[" + B + ",2,8,8], " +
                     (staticTrace ? "%k: " + permuted : "%n: index<s0>, %k0: f32[s0,8,2,16]") +
                     ") -> (f32[" + B + ",2,8,16]) {\n";
  if (!staticTrace)
    text += "  %k = aten.permute(%k0) {dims=[0,2,1,3]} : " + permuted +
            "  loc(\"model.py\":120 \"attn\")\n";
  return text + "  %dq = aten.matmul(%g, %k) : f32[" + B +
         ",2,8,16]  loc(\"model.py\":121 \"attn\")\n  return %dq\n}\n";
}

TEST(CompileDiff, ASavedPermutationOfRankFourIsLinedUp) {
  TraceFile trace;
  DiffReport report = diffBackwards(trace, savedKeys(true), savedKeys(false));
  EXPECT_TRUE(report.same);
  ASSERT_EQ(report.findings.size(), 1u) << report.findings.front().message;
  EXPECT_EQ(report.findings.front().kind, "retraced_views");
  EXPECT_NE(report.findings.front().message.find("aten.permute x1"), std::string::npos)
      << report.findings.front().message;
}

TEST(CompileDiff, AReshapeToAnotherShapeIsNotViewOnly) {
  // A reshape to a hard-coded [2,64] in the dynamic compile only: not an identity, so the
  // compiles differ.
  TraceFile trace;
  DiffReport report = diffTwo(trace, projection("2", true), projection("s0", false, "[2,64]"));
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(differs(report.findings));
  auto unmatched =
      std::find_if(report.findings.begin(), report.findings.end(), [](const Finding& f) {
        return f.kind == "unmatched_node" && f.message.find("aten.reshape") != std::string::npos;
      });
  EXPECT_NE(unmatched, report.findings.end());
  EXPECT_EQ(unmatched->severity, Severity::Warning);
}

TEST(CompileDiff, ViewOnlyAndIdentityViewNodes) {
  // Identity shapes and permutations only; a symbolic dim is not its static value.
  auto graph = [](const std::string& body) {
    return parseModule("graph @g(%x: f32[s0,64]) -> (f32[s0,64]) {\n" + body + "  return %x\n}\n");
  };
  auto viewOnly = [&](const std::string& line) {
    auto graphs = graph(line);
    return isViewOnly(graphs.front()->nodes().front());
  };
  EXPECT_TRUE(viewOnly("  %a = aten.alias(%x) : f32[s0,64]\n"));
  EXPECT_TRUE(viewOnly("  %a = aten.view(%x) {size=[s0,64]} : f32[s0,64]\n"));
  EXPECT_TRUE(viewOnly("  %a = aten.permute(%x) {dims=[1,0]} : f32[64,s0]\n"));
  EXPECT_FALSE(viewOnly("  %a = aten.view(%x) {size=[2,64]} : f32[2,64]\n"));
  EXPECT_FALSE(viewOnly("  %a = aten.reshape(%x) {shape=[64,s0]} : f32[64,s0]\n"));
  EXPECT_FALSE(viewOnly("  %a = aten.relu(%x) : f32[s0,64]\n"));
  auto identity = [&](const std::string& line) {
    auto graphs = graph(line);
    return isIdentityView(graphs.front()->nodes().front());
  };
  EXPECT_TRUE(identity("  %a = aten.slice.Tensor(%x) {dim=0, start=0, end=9223372036854775807} "
                       ": f32[s0,64]\n"));
  EXPECT_FALSE(identity("  %a = aten.slice.Tensor(%x) {dim=1, start=0, end=1} : f32[s0,1]\n"));
  EXPECT_FALSE(identity("  %a = aten.permute(%x) {dims=[1,0]} : f32[64,s0]\n"));
}

TEST(CompileDiff, AConstantEqualToTheBatchBesideTheBatchIsNotHardcoded) {
  // Splitting 32 features into 2 heads of 16 at batch 2: the 2 is the heads, since the batch
  // is still the result's first dim.
  auto heads = [](const std::string& B) {
    return "graph @g(%x: f32[" + B + ",8,32]) -> (f32[" + B +
           ",8,2,16]) {\n"
           "  %v = aten.view(%x) {size=[" +
           B + ",8,2,16]} : f32[" + B + ",8,2,16]  loc(\"model.py\":80 \"attn\")\n  return %v\n}\n";
  };
  TraceFile trace;
  DiffReport report = diffTwo(trace, heads("2"), heads("4"));
  EXPECT_TRUE(report.same);
  EXPECT_TRUE(report.findings.empty()) << report.findings.front().message;
}

// The gradient of a 2-row embedding table (`num_weights=2`) sums the batch away: its 2 rows at
// batch 2 are the table's, not the batch's. `x[:2]`, a slice, keeps two of the batch's rows.
std::string embeddingGradient(const std::string& B) {
  return "graph @bw(%g: f32[" + B + ",8,32], %ids: i64[" + B +
         ",8]) -> (f32[2,32]) {\n"
         "  %dw = aten.embedding_dense_backward(%g, %ids) {num_weights=2, padding_idx=-1, "
         "scale_grad_by_freq=false} : f32[2,32]  loc(\"model.py\":96 \"embeddings\")\n"
         "  return %dw\n}\n";
}
std::string firstTwoRows(const std::string& B) {
  return "graph @g(%x: f32[" + B +
         ",8]) -> (f32[2,8]) {\n"
         "  %s = aten.slice.Tensor(%x) {dim=0, start=0, end=2, step=1} : f32[2,8]  "
         "loc(\"model.py\":98 \"\")\n"
         "  %r = aten.relu(%s) : f32[2,8]  loc(\"model.py\":99 \"\")\n  return %r\n}\n";
}

TEST(CompileDiff, AReductionToAConstantEqualToTheBatchIsNotHardcoded) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, embeddingGradient("2"), embeddingGradient("4"));
  EXPECT_TRUE(report.same);
  EXPECT_TRUE(report.findings.empty()) << report.findings.front().message;
}

TEST(CompileDiff, ASliceToTheBatchItWasWrittenAtIsHardcoded) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, firstTwoRows("2"), firstTwoRows("4"));
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().kind, "hardcoded_dim");
  EXPECT_EQ(report.findings.front().source->line, 98);
  EXPECT_FALSE(report.same);
}

TEST(CompileDiff, InputNamesComeFromTheSignature) {
  TraceFile trace;
  std::string sig4 = R"([{"name": "images", "shape": ["4", "16"], "dtype": "float32"}])";
  std::string sig8 = R"([{"name": "images", "shape": ["8", "16"], "dtype": "float32"}])";
  int64_t a = trace.compile({{"shape-propagation", hardcodedView(4)}}, "0/0", sig4);
  int64_t c = trace.compile({{"shape-propagation", hardcodedView(8)}}, "0/1", sig8);
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings.front().message.find("images.0 goes 4 -> 8"), std::string::npos)
      << report.findings.front().message;
  EXPECT_NE(report.labelA.find("images=[4,16]"), std::string::npos) << report.labelA;
}

TEST(CompileDiff, FirstDivergentPassNamesTheCompilerPass) {
  TraceFile trace;
  int64_t a =
      trace.compile({{"shape-propagation", fused(8, false)}, {"pointwise-fusion", fused(8, true)}});
  int64_t c = trace.compile(
      {{"shape-propagation", fused(16, false)}, {"pointwise-fusion", fused(16, false)}}, "0/1");
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_FALSE(report.findings.empty());
  const Finding& top = report.findings.front();
  EXPECT_EQ(top.kind, "first_divergent_pass");
  EXPECT_EQ(top.pass, "pointwise-fusion");
  EXPECT_EQ(top.message.find("frontend"), std::string::npos) << top.message;
  auto fusion = std::find_if(report.findings.begin(), report.findings.end(),
                             [](const Finding& f) { return f.kind == "fusion_diff"; });
  ASSERT_NE(fusion, report.findings.end());
  EXPECT_NE(fusion->message.find("only in A"), std::string::npos) << fusion->message;
}

TEST(CompileDiff, DivergenceInTheFirstSnapshotIsBlamedOnTheFrontend) {
  TraceFile trace;
  DiffReport report = diffTwo(trace, fused(8, false), mlp(16));
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().kind, "first_divergent_pass");
  EXPECT_NE(report.findings.front().message.find("Dynamo/aot_autograd"), std::string::npos);
}

TEST(CompileDiff, ShapeSpecialisingBranchIsNamedByTheFailedGuard) {
  // `if x.shape[0] > 8:` at line 20 adds a relu for large batches only.
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", fused(8, false)}});
  std::string branch =
      "graph @f(%x: f32[16,8]) -> (f32[16,8]) {\n"
      "  %a = aten.add.Tensor(%x, %x) {alpha=1} : f32[16,8]  loc(\"model.py\":50 \"\")\n"
      "  %r = aten.relu(%a) : f32[16,8]  loc(\"model.py\":51 \"\")\n"
      "  %e = aten.relu(%r) : f32[16,8]  loc(\"model.py\":21 \"\")\n"
      "  return %e\n}\n";
  int64_t c = trace.compile({{"shape-propagation", branch}}, "0/1");
  trace.writer().recordGuard(
      a, GuardRecord{.kind = "SHAPE_ENV",
                     .expr = "s0 <= 8",
                     .user_stack = {{"model.py", 20, "forward", "if x.shape[0] > 8:"}},
                     .failed = true});
  trace.writer().recordRecompile(c, RecompileRecord{.previous_compile_key = "0/0",
                                                    .reason = "s0 <= 8",
                                                    .failed_guard = "s0 <= 8"});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_GE(report.findings.size(), 2u);
  EXPECT_EQ(report.findings[0].kind, "failed_guard");
  ASSERT_TRUE(report.findings[0].source);
  EXPECT_EQ(report.findings[0].source->line, 20);
  EXPECT_EQ(report.findings[1].kind, "first_divergent_pass");
  EXPECT_FALSE(report.same);
}

TEST(CompileDiff, PlainSizeGuardAloneLeavesTheCompilesSame) {
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  trace.writer().recordRecompile(c, RecompileRecord{.previous_compile_key = "0/0",
                                                    .reason = "tensor 'x' size mismatch at index 0",
                                                    .failed_guard = "L['x'].size()[0] == 8"});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, "failed_guard");
  EXPECT_TRUE(report.same);
}

TEST(CompileDiff, GraphBreakInOneCompileOnly) {
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  trace.writer().recordGraphBreak(
      trace.run(),
      GraphBreakRecord{.compile_id = c,
                       .frame_name = "forward",
                       .reason = "data-dependent branch",
                       .user_stack = {{"train.py", 3, "main", ""},
                                      {"model.py", 25, "forward", "if x.sum() > 0:"}}});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, "graph_break");
  EXPECT_EQ(report.findings[0].source->line, 25);
  EXPECT_NE(report.findings[0].message.find("only in B"), std::string::npos);
}

// f's lines in branch.py as Dynamo traced them: `if h.size(0) % 2 == 0:` at line 9 takes
// line 10 for even sizes and line 12 for odd ones.
std::vector<TracedLine> branchPath(int branchLine) {
  std::vector<TracedLine> lines;
  for (int line : {7, 8, 9, branchLine, 13})
    lines.push_back({.file = "branch.py", .line = line, .function = "f"});
  return lines;
}

TEST(CompileDiff, TheConditionOfADivergedBranchIsTheTopFinding) {
  // Static shapes: no guard names the `if`; the graphs differ from the frontend on (an add in
  // one, a sub in the other), and the first divergent line is the branch, not the condition.
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", fused(16, false)}}, "0/1");
  trace.writer().recordTracedLines(a, branchPath(10));
  trace.writer().recordTracedLines(c, branchPath(12));
  trace.writer().recordRecompile(c, RecompileRecord{.previous_compile_key = "0/0",
                                                    .reason = "tensor 'x' size mismatch at index 0",
                                                    .failed_guard = "L['x'].size()[0] == 8"});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_FALSE(report.findings.empty());
  const Finding& top = report.findings.front();
  EXPECT_EQ(top.kind, findingKindName(FindingKind::DivergedBranch));
  ASSERT_TRUE(top.source);
  EXPECT_EQ(top.source->file, "branch.py");
  EXPECT_EQ(top.source->line, 9);
  EXPECT_NE(top.message.find("A went on to line 10, B went on to line 12"), std::string::npos)
      << top.message;
  EXPECT_FALSE(report.same);

  // The same lines in both compiles: no finding of this kind.
  trace.writer().recordTracedLines(c, branchPath(10));
  const TraceReader& same = trace.reader();
  for (const Finding& finding : diffCompiles({&same, a}, {&same, c}).findings)
    EXPECT_NE(finding.kind, findingKindName(FindingKind::DivergedBranch));
}

TEST(CompileDiff, ABackwardGraphTakesTheLinesItsForwardTraced) {
  // The backward graphs (recorded after their forwards, with the same compile keys) have no
  // lines of their own.
  TraceFile trace;
  int64_t forwardA = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t forwardB = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  int64_t backwardA = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t backwardB = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  trace.writer().recordTracedLines(forwardA, branchPath(10));
  trace.writer().recordTracedLines(forwardB, branchPath(12));
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, backwardA}, {&reader, backwardB});
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().kind, findingKindName(FindingKind::DivergedBranch));
  EXPECT_EQ(report.findings.front().source->line, 9);
}

TEST(CompileDiff, ABranchToAGraphBreakRanksBelowTheBreak) {
  // Large batches take the branch at line 12, which breaks the graph there.
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  trace.writer().recordTracedLines(a, branchPath(10));
  trace.writer().recordTracedLines(c, branchPath(12));
  trace.writer().recordGraphBreak(
      trace.run(), GraphBreakRecord{.compile_id = c,
                                    .frame_name = "f",
                                    .reason = "print",
                                    .user_stack = {{"branch.py", 12, "f", "print(x)"}}});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 2u);
  EXPECT_EQ(report.findings[0].kind, findingKindName(FindingKind::GraphBreak));
  EXPECT_EQ(report.findings[1].kind, findingKindName(FindingKind::DivergedBranch));
  EXPECT_EQ(report.findings[1].score, findingKindInfo(FindingKind::DivergedBranch).weakBase + 3);
}

TEST(CompileDiff, ScoresStartFromTheKindsBaseInTheTable) {
  // A graph break with its line: the base plus the bonus for naming a line. The plain size
  // guard (no line) is weak evidence: its kind's weak base and nothing more.
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", mlp(16)}}, "0/1");
  trace.writer().recordGraphBreak(
      trace.run(), GraphBreakRecord{.compile_id = c,
                                    .frame_name = "forward",
                                    .reason = "data-dependent branch",
                                    .user_stack = {{"model.py", 25, "forward", ""}}});
  trace.writer().recordRecompile(c, RecompileRecord{.previous_compile_key = "0/0",
                                                    .reason = "tensor 'x' size mismatch at index 0",
                                                    .failed_guard = "L['x'].size()[0] == 8"});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 2u);
  EXPECT_EQ(report.findings[0].kind, findingKindName(FindingKind::GraphBreak));
  EXPECT_EQ(report.findings[0].score, findingKindInfo(FindingKind::GraphBreak).base + 3);
  EXPECT_EQ(report.findings[1].kind, findingKindName(FindingKind::FailedGuard));
  EXPECT_EQ(report.findings[1].score, findingKindInfo(FindingKind::FailedGuard).weakBase);
}

TEST(CompileDiff, KernelChoicesDifferForMatchedNodes) {
  TraceFile trace;
  auto withKernel = [](int batch) {
    std::string text = mlp(batch);
    return text.replace(text.find(" : f32[" + b(batch) + ",8]  loc(\"model.py\":11"), 0,
                        " {kernel=\"k0\"}");
  };
  int64_t a = trace.compile({{"kernel-selection", withKernel(8)}});
  int64_t c = trace.compile({{"kernel-selection", withKernel(4096)}}, "0/1");
  trace.writer().recordKernel(a, KernelRecord{.name = "k0",
                                              .kind = "generated",
                                              .target = "cpu",
                                              .op_summary = "aten.mm",
                                              .reason = "small"});
  trace.writer().recordKernel(c, KernelRecord{.name = "k0",
                                              .kind = "library",
                                              .target = "cpu",
                                              .op_summary = "aten.mm via openblas:sgemm",
                                              .reason = "large"});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, "kernel_diff");
  EXPECT_NE(report.findings[0].message.find("small"), std::string::npos);
  EXPECT_NE(report.findings[0].message.find("large"), std::string::npos);
}

TEST(CompileDiff, PeakGrowingFasterThanEveryInputIsAMemoryDiff) {
  // x doubles from batch 8 to 16 and the weight stays: a peak x4 is reported, x2.2 is not.
  TraceFile trace;
  auto compile = [&](int batch, int64_t peak, const std::string& key) {
    int64_t id = trace.compile({{"shape-propagation", mlp(batch)}}, key);
    trace.writer().recordBuffers(
        id, {BufferRecord{.name = "x", .size_bytes = batch * 64 * 4, .is_graph_input = true},
             BufferRecord{.name = "w", .size_bytes = 64 * 8 * 4, .is_graph_input = true}});
    trace.writer().recordMemoryPlan(id, MemoryPlanRecord{.arena_bytes = peak, .peak_bytes = peak});
    return id;
  };
  int64_t a = compile(8, 10000, "0/0");
  int64_t fast = compile(16, 40000, "0/1");
  int64_t slow = compile(16, 22000, "0/2");
  const TraceReader& reader = trace.reader();
  DiffReport grows = diffCompiles({&reader, a}, {&reader, fast});
  ASSERT_EQ(grows.findings.size(), 1u);
  EXPECT_EQ(grows.findings[0].kind, "memory_diff");
  EXPECT_NE(grows.findings[0].message.find("peak memory grows x4 (10000 -> 40000 bytes) while "
                                           "the fastest-growing input, x, grows x2"),
            std::string::npos)
      << grows.findings[0].message;
  EXPECT_FALSE(grows.same);
  EXPECT_TRUE(diffCompiles({&reader, a}, {&reader, slow}).findings.empty());
}

// Dynamic shapes: both plans are symbolic (-1 bytes), so the sizes each compile ran at, its
// memory_layouts rows, are what is compared.
TEST(CompileDiff, SymbolicPlansCompareTheirMemoryAtTheSizesTheyRanAt) {
  TraceFile trace;
  int64_t a = trace.compile({{"memory-planning", mlp(8)}});
  int64_t c = trace.compile({{"memory-planning", mlp(16)}}, "0/1");
  for (auto [compile, batch, peak] : {std::tuple{a, 8, 4096}, std::tuple{c, 16, 65536}}) {
    trace.writer().recordBuffers(
        compile, {{.name = "x", .size_bytes = -1, .is_graph_input = true, .size_expr = "256*s0"},
                  {.name = "w", .size_bytes = 2048, .is_graph_input = true},
                  {.name = "r", .size_bytes = -1, .is_graph_output = true, .size_expr = "32*s0"}});
    trace.writer().recordMemoryPlan(
        compile, {.arena_bytes = -1, .peak_bytes = -1, .arena_expr = "0", .peak_expr = "32*s0"});
    trace.writer().recordMemoryLayout(compile, {.bindings = {{"s0", batch}},
                                                .peak_bytes = peak,
                                                .sizes = {{"x", 256 * batch}, {"w", 2048}}});
  }
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, c});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, "memory_diff");
  EXPECT_NE(report.findings[0].message.find("4096 -> 65536"), std::string::npos)
      << report.findings[0].message;
}

TEST(CompileDiff, UnparsableSnapshotIsAnErrorNamingCompileAndPass) {
  TraceFile trace;
  int64_t a = trace.compile({{"shape-propagation", mlp(8)}});
  int64_t c = trace.compile({{"shape-propagation", "graph @broken(%x: f32[8"}}, "0/1");
  const TraceReader& reader = trace.reader();
  try {
    diffCompiles({&reader, a}, {&reader, c});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "diff");
    EXPECT_NE(e.message().find("compile " + std::to_string(c)), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("shape-propagation"), std::string::npos) << e.what();
  }
}

TEST(CompileDiff, AroundPassListsWhatThePassFused) {
  TraceFile trace;
  int64_t a =
      trace.compile({{"shape-propagation", fused(8, false)}, {"pointwise-fusion", fused(8, true)}});
  const TraceReader& reader = trace.reader();
  DiffReport report = diffCompiles({&reader, a}, {&reader, a}, {"pointwise-fusion"});
  EXPECT_FALSE(report.same);
  EXPECT_TRUE(std::any_of(report.findings.begin(), report.findings.end(),
                          [](const Finding& f) { return f.kind == "fusion_diff"; }));
}

TEST(ScalingAnalysis, FlattenedOuterProductIsNonlinear) {
  TraceFile trace;
  auto flat = [](int batch) {
    std::string B = b(batch), BB = b(batch * batch);
    return "graph @g(%x: f32[" + B + ",1], %t: f32[" + B + "]) -> (f32[" + BB +
           "]) {\n"
           "  %d = aten.sub.Tensor(%x, %t) {alpha=1} : f32[" +
           B + "," + B +
           "]  loc(\"model.py\":31 \"\")\n"
           "  %f = aten.view(%d) {size=[-1]} : f32[" +
           BB +
           "]  loc(\"model.py\":32 \"\")\n"
           "  return %f\n}\n";
  };
  std::vector<CompileRef> refs;
  std::vector<int64_t> ids;
  for (int batch : {2, 4, 8})
    ids.push_back(trace.compile({{"shape-propagation", flat(batch)}}, "0/" + b(batch)));
  const TraceReader& reader = trace.reader();
  for (int64_t id : ids)
    refs.push_back({&reader, id});
  std::vector<Finding> findings = scalingAnalysis(refs);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "nonlinear_dim");
  EXPECT_EQ(findings[0].source->line, 32);
}

TEST(ScalingAnalysis, OneSymbolicCompileShowsItsBroadcastBlowup) {
  // dynamic=True: one compile, its sizes already functions of the batch s0 and the target's s1.
  TraceFile trace;
  int64_t id = trace.compile(
      {{"shape-propagation",
        "graph @loss(%x: f32[s0,1], %t: f32[s1]) -> (f32[s0,s1]) {\n"
        "  %e = aten.exp(%x) : f32[s0,1]  loc(\"model.py\":30 \"head\")\n"
        "  %d = aten.sub.Tensor(%e, %t) {alpha=1} : f32[s0,s1]  loc(\"model.py\":31 \"\")\n"
        "  return %d\n}\n"}});
  const TraceReader& reader = trace.reader();
  std::vector<Finding> findings = scalingAnalysis({{&reader, id}});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "broadcast_blowup");
  EXPECT_EQ(findings[0].source->line, 31);
}

} // namespace
} // namespace loupe::diff
