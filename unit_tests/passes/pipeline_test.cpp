// The pass table (passes/passes.def): every row creates the pass of its name and summary, names
// are unique, the default order is the documented one, and a bad name is an error listing the
// valid ones.
#include <gtest/gtest.h>

#include <set>

#include "compiler/ir/error.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

TEST(Pipeline, EveryEntryCreatesThePassOfItsNameAndSummary) {
  for (const PassEntry& entry : allPasses()) {
    auto pass = entry.create();
    EXPECT_EQ(pass->name(), entry.name);
    EXPECT_EQ(pass->description(), entry.summary);
    EXPECT_FALSE(entry.summary.empty()) << entry.name;
    EXPECT_EQ(createPass(entry.name)->name(), entry.name);
  }
}

TEST(Pipeline, NamesAreUnique) {
  std::set<std::string_view> names;
  for (const PassEntry& entry : allPasses())
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name << " appears twice";
}

TEST(Pipeline, DefaultPipelineIsTheTableInOrder) {
  std::vector<std::string> tableOrder;
  for (const PassEntry& entry : allPasses())
    tableOrder.emplace_back(entry.name);
  EXPECT_EQ(defaultPipeline(), tableOrder);
}

TEST(Pipeline, DefaultOrderRunsRewritesBeforeFusionAndPlanning) {
  std::vector<std::string> expected = {"shape-propagation",
                                       "decomposition",
                                       "constant-folding",
                                       "algebraic-simplification",
                                       "cse",
                                       "dce",
                                       "layout",
                                       "epilogue-fusion",
                                       "pointwise-fusion",
                                       "reduction-fusion",
                                       "row-fusion",
                                       "kernel-selection",
                                       "memory-planning",
                                       "launch-planning"};
  EXPECT_EQ(defaultPipeline(), expected);
  EXPECT_EQ(parsePipeline("default"), expected);
}

TEST(Pipeline, ParsesCommaLists) {
  EXPECT_EQ(parsePipeline("cse,dce,cse"), (std::vector<std::string>{"cse", "dce", "cse"}));
}

TEST(Pipeline, UnknownNameListsValidOnes) {
  try {
    parsePipeline("cse,nope");
    FAIL() << "an unknown pass must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "pipeline");
    EXPECT_NE(e.message().find("'nope'"), std::string::npos);
    EXPECT_NE(e.message().find("memory-planning"), std::string::npos);
  }
  EXPECT_THROW(createPass(""), Error);
}

TEST(Pipeline, NameCheckNamesTheCulpritAndEveryValidPass) {
  EXPECT_TRUE(isPassName("cse"));
  EXPECT_FALSE(isPassName("CSE"));
  EXPECT_FALSE(isPassName(""));
  EXPECT_NO_THROW(checkPassName("memory-planning"));
  try {
    checkPassName("fuse");
    FAIL() << "an unknown pass must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "pipeline");
    EXPECT_EQ(e.message(), "unknown pass 'fuse' (valid passes: shape-propagation, decomposition, "
                           "constant-folding, algebraic-simplification, cse, dce, layout, "
                           "epilogue-fusion, pointwise-fusion, "
                           "reduction-fusion, row-fusion, kernel-selection, memory-planning, "
                           "launch-planning)");
  }
}

} // namespace
} // namespace loupe
