// Selectors pick the compiles `loupe diff` compares; recompilePairs pairs a trace's recompiles.
#include <filesystem>
#include <gtest/gtest.h>
#include <optional>

#include "compiler/ir/error.h"
#include "inspector/diff/compile_selector.h"
#include "inspector/trace/trace_writer.h"

namespace loupe::diff {
namespace {

using Ids = std::vector<int64_t>;

// A frame compiled at batch 8 (0/0) and 16 (0/1), forward and backward each, plus another
// frame; input signatures name the inputs as Dynamo does.
class SelectorTest : public ::testing::Test {
protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "selector_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::filesystem::remove(path_);
    TraceWriter writer(path_);
    int64_t run = writer.beginRun(RunInfo{});
    auto compile = [&](const std::string& key, const std::string& kind, const std::string& frame,
                       int batch) {
      std::string signature =
          R"([{"name": "x", "shape": [")" + std::to_string(batch) +
          R"(", "64"]}, {"scalar": "2"}, {"name": "w", "shape": ["64", "32"]}])";
      return writer.beginCompile(run, CompileInfo{.compile_key = key,
                                                  .frame_name = frame,
                                                  .frame_file = "model.py",
                                                  .frame_line = 3,
                                                  .graph_kind = kind,
                                                  .input_signature_json = signature});
    };
    compile("0/0", "forward", "forward", 8);   // 1
    compile("0/0", "backward", "forward", 8);  // 2
    compile("1/0", "forward", "helper", 8);    // 3
    compile("0/1", "forward", "forward", 16);  // 4
    compile("0/1", "backward", "forward", 16); // 5
  }
  void TearDown() override { std::filesystem::remove(path_); }

  Ids select(std::string_view selector) { return selectCompiles(TraceReader(path_), selector); }

  std::string path_;
};

TEST_F(SelectorTest, IdKeyAndKind) {
  EXPECT_EQ(select("4"), (Ids{4}));
  EXPECT_EQ(select("0/1"), (Ids{4, 5}));
  EXPECT_EQ(select("0/1:bw"), (Ids{5}));
  EXPECT_EQ(select("bw"), (Ids{2, 5}));
  EXPECT_EQ(select("forward"), (Ids{1, 3, 4}));
  EXPECT_EQ(select(""), (Ids{1, 2, 3, 4, 5}));
}

TEST_F(SelectorTest, InputDimsFrameAndConjunction) {
  EXPECT_EQ(select("x=16"), (Ids{4, 5}));
  EXPECT_EQ(select("x.1=64"), (Ids{1, 2, 3, 4, 5}));
  EXPECT_EQ(select("w.1=32, batch=8"), (Ids{1, 2, 3}));
  EXPECT_EQ(select("frame=helper"), (Ids{3}));
  EXPECT_EQ(select("x=8,fw,frame=forward"), (Ids{1}));
  EXPECT_EQ(select("x=32"), Ids{});
  EXPECT_EQ(select("nosuchinput=8"), Ids{});
}

TEST_F(SelectorTest, UnparsablePartIsAUsageErrorNamingIt) {
  try {
    select("fw,sideways");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "usage");
    EXPECT_NE(e.message().find("'sideways'"), std::string::npos) << e.message();
  }
  EXPECT_THROW(select("0/1:up"), Error);
  EXPECT_THROW(select("x="), Error);
}

TEST_F(SelectorTest, RecompilesPairWithThePreviousCompileOfTheirFrameAndKind) {
  auto pairs = recompilePairs(TraceReader(path_));
  std::vector<std::pair<int64_t, int64_t>> expected{{1, 4}, {2, 5}};
  EXPECT_EQ(pairs, expected);
}

TEST_F(SelectorTest, DescribeNamesKeyKindAndInputShapes) {
  EXPECT_EQ(describeCompile(TraceReader(path_), 5),
            "compile 5 (0/1 backward, x=[16,64] w=[64,32])");
}

CompileInput named(std::string name, std::vector<std::string> dims,
                   InputKind kind = InputKind::Input) {
  return {std::move(name), std::move(dims), kind};
}

// A GPT-2-like compile: input_ids, then `parameters` weights of [64,64] and a buffer.
std::vector<CompileInput> modelInputs(const std::string& batch, size_t parameters) {
  std::vector<CompileInput> inputs{named("input_ids", {batch, "64"})};
  for (size_t i = 0; i < parameters; ++i)
    inputs.push_back(
        named("self.h" + std::to_string(i) + ".weight", {"64", "64"}, InputKind::Parameter));
  inputs.push_back(named("self.mask", {"64", "64"}, InputKind::Buffer));
  return inputs;
}

TEST(DescribeInputs, InputsListedParametersAndBuffersCounted) {
  EXPECT_EQ(describeInputs(modelInputs("2", 28)), "input_ids=[2,64] +28 parameters, 1 buffer");
}

TEST(DescribeInputs, AgainstAnotherCompileOnlyDifferingParametersAreListed) {
  std::vector<CompileInput> a = modelInputs("2", 28), b = modelInputs("s72", 28);
  EXPECT_EQ(describeInputs(a, &b), "input_ids=[2,64] +28 parameters, 1 buffer unchanged");
  EXPECT_EQ(describeInputs(b, &a), "input_ids=[s72,64] +28 parameters, 1 buffer unchanged");
  b[5].dims = {"s72", "64"};
  EXPECT_EQ(describeInputs(b, &a),
            "input_ids=[s72,64] self.h4.weight=[s72,64] +27 parameters, 1 buffer unchanged");
  EXPECT_EQ(describeInputs(a, &b),
            "input_ids=[2,64] self.h4.weight=[64,64] +27 parameters, 1 buffer unchanged");
}

TEST(DescribeInputs, ManyDifferingAreCappedAndUnnamedInputsCountedByPosition) {
  std::vector<CompileInput> a = modelInputs("2", 6), b = modelInputs("4", 6);
  for (size_t i = 1; i <= 6; ++i)
    b[i].dims = {"4", "64"};
  EXPECT_EQ(describeInputs(b, &a),
            "input_ids=[4,64] self.h0.weight=[4,64] self.h1.weight=[4,64] "
            "self.h2.weight=[4,64] self.h3.weight=[4,64] +2 more that differ, 1 buffer unchanged");
  std::vector<CompileInput> savedA{named("", {"2", "64"}), named("", {"64"})};
  std::vector<CompileInput> savedB{named("", {"4", "64"}), named("", {"64"})};
  EXPECT_EQ(describeInputs(savedB), "+2 unnamed inputs");
  EXPECT_EQ(describeInputs(savedB, &savedA), "#0=[4,64] +1 unnamed input unchanged");
}

// The signature's "kind" says what an input is; without it (older traces) a dotted name is a
// parameter.
TEST(DescribeInputs, KindFromSignatureOrFromADottedName) {
  std::string path = ::testing::TempDir() + "selector_kinds.db";
  std::filesystem::remove(path);
  {
    TraceWriter writer(path);
    int64_t run = writer.beginRun(RunInfo{});
    auto compile = [&](const std::string& signature) {
      return writer.beginCompile(
          run, CompileInfo{.graph_kind = "forward", .input_signature_json = signature});
    };
    compile(R"([{"name": "x", "shape": ["8"], "kind": "input"},
                {"name": "self.w", "shape": ["8"], "kind": "parameter"},
                {"name": "self.cfg.size", "shape": ["8"], "kind": "input"},
                {"name": "scale", "shape": ["8"], "kind": "buffer"}])");
    compile(R"([{"name": "x", "shape": ["8"]}, {"name": "self.w", "shape": ["8"]}])");
  }
  TraceReader trace(path);
  std::vector<CompileInput> first = compileInputs(trace, 1), second = compileInputs(trace, 2);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].kind, InputKind::Input);
  EXPECT_EQ(first[1].kind, InputKind::Parameter);
  EXPECT_EQ(first[2].kind, InputKind::Input);
  EXPECT_EQ(first[3].kind, InputKind::Buffer);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].kind, InputKind::Input);
  EXPECT_EQ(second[1].kind, InputKind::Parameter);
  EXPECT_EQ(describeCompile(trace, 1), "compile 1 (forward, x=[8] self.cfg.size=[8] +1 "
                                       "parameter, 1 buffer)");
  EXPECT_EQ(describeCompile(trace, 2, trace, 1), "compile 2 (forward, x=[8] +1 parameter "
                                                 "unchanged)");
  std::filesystem::remove(path);
}

} // namespace
} // namespace loupe::diff
