// The pipeline list: names resolve to passes that call themselves by that name, the default
// order is the documented one, and a bad name is an error listing the valid ones.
#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

TEST(Pipeline, EveryEntryCreatesThePassOfItsName) {
  for (const PassEntry& entry : allPasses()) {
    auto pass = entry.create();
    EXPECT_EQ(pass->name(), entry.name);
    EXPECT_FALSE(pass->description().empty()) << entry.name;
  }
}

TEST(Pipeline, DefaultOrderRunsRewritesBeforeFusionAndPlanning) {
  std::vector<std::string> expected = {"shape-propagation",
                                       "decomposition",
                                       "constant-folding",
                                       "algebraic-simplification",
                                       "cse",
                                       "dce",
                                       "layout",
                                       "pointwise-fusion",
                                       "reduction-fusion",
                                       "kernel-selection",
                                       "memory-planning"};
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

} // namespace
} // namespace loupe
