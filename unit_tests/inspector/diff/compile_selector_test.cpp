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

} // namespace
} // namespace loupe::diff
