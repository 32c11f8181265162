// Dim abstraction: a dim is explained by the simplest expression over the input dims that holds
// in every compile, which is how the differ compares graphs "up to shapes".
#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"
#include "inspector/diff/dim_abstraction.h"

namespace loupe::diff {
namespace {

// A compile reduced to its inputs: "%x: f32[8,64], %y: f32[8]".
std::unique_ptr<Graph> inputs(const std::string& signature) {
  return parseGraph("graph @f(" + signature + ") -> () {\n  return\n}\n");
}

SymExpr sym(const std::string& name) {
  return SymExpr::symbol(name);
}

SymExpr expr(const std::string& text) {
  return SymExpr::parse(text);
}

class TwoBatchSizes : public ::testing::Test {
protected:
  std::unique_ptr<Graph> a = inputs("%x: f32[8,64], %t: i64[8,5]");
  std::unique_ptr<Graph> b = inputs("%x: f32[16,64], %t: i64[16,7]");
  DimAbstraction dims{{a.get(), b.get()}, {"x", "t"}};
};

TEST_F(TwoBatchSizes, TheBatchIsTheFirstInputsDim) {
  EXPECT_EQ(dims.explain({8, 16}), sym("x.0"));
}

TEST_F(TwoBatchSizes, AMultipleOfTheBatch) {
  EXPECT_EQ(dims.explain({16, 32}), 2 * sym("x.0"));
}

TEST_F(TwoBatchSizes, AFlattenIsAProductOfTwoInputDims) {
  EXPECT_EQ(dims.explain({40, 112}), sym("x.0") * sym("t.1"));
  EXPECT_EQ(dims.explain({40 * 64, 112 * 64}), 64 * sym("x.0") * sym("t.1"));
}

TEST_F(TwoBatchSizes, AnExactFractionAndAnOffset) {
  EXPECT_EQ(dims.explain({4, 8}), SymExpr::floorDiv(sym("x.0"), 2));
  EXPECT_EQ(dims.explain({10, 18}), sym("x.0") + 2);
  EXPECT_EQ(dims.explain({4, 6}), sym("t.1") - 1);
}

TEST_F(TwoBatchSizes, AConstantStaysAConstant) {
  EXPECT_EQ(dims.explain({64, 64}), SymExpr(64));
  EXPECT_FALSE(dims.varies("x.1"));
}

TEST_F(TwoBatchSizes, ADimStuckAtTheFirstBatchSizeIsTheConstant) {
  // What a hard-coded `view(8, -1)` looks like: 8 where the batch went from 8 to 16.
  EXPECT_EQ(dims.explain({8, 8}), SymExpr(8));
  EXPECT_EQ(dims.inputDimsEqualTo(0, 8), (std::vector<std::string>{"x.0", "t.0"}));
  EXPECT_TRUE(dims.varies("x.0"));
  EXPECT_EQ(dims.valueOf("x.0", 1), 16);
}

TEST_F(TwoBatchSizes, ValuesNoInputDimFollowsHaveNoExplanation) {
  EXPECT_EQ(dims.explain({3, 7}), std::nullopt);
}

TEST(DimAbstractionTest, AmbiguityIsResolvedAcrossCompiles) {
  // The batch equals the hidden size in the first compile only.
  auto a = inputs("%x: f32[8,8]");
  auto b = inputs("%x: f32[16,8]");
  DimAbstraction dims({a.get(), b.get()}, {"x"});
  EXPECT_EQ(dims.explain({8, 16}), sym("x.0"));
}

TEST(DimAbstractionTest, EquallyGoodInputDimsGiveTheFirst) {
  auto a = inputs("%x: f32[8], %y: f32[8]");
  auto b = inputs("%x: f32[16], %y: f32[16]");
  DimAbstraction dims({a.get(), b.get()});
  EXPECT_EQ(dims.explain({8, 16}), sym("in0.0"));
}

TEST(DimAbstractionTest, StaticAndDynamicCompilesOfOneFrame) {
  auto a = inputs("%x: f32[8,64]");
  auto b = inputs("%s77: index<s77>, %x: f32[s77,64]");
  DimAbstraction dims({a.get(), b.get()}, {"x"});
  EXPECT_EQ(dims.explain({8, sym("s77")}), sym("x.0"));
  EXPECT_EQ(dims.explain({16, expr("2*s77")}), 2 * sym("x.0"));
  EXPECT_EQ(dims.explain({512, expr("s77*64")}), 64 * sym("x.0"));
  EXPECT_EQ(dims.explain({64, 64}), SymExpr(64));
  EXPECT_EQ(dims.explain({9, sym("s77")}), std::nullopt);
  EXPECT_EQ(dims.explain({8, 8}), SymExpr(8)); // hard-coded where the dynamic compile has s77
  EXPECT_EQ(dims.valueOf("x.0", 1), std::nullopt);
  EXPECT_TRUE(dims.varies("x.0"));
}

TEST(DimAbstractionTest, OneCompileUsesItsSymbolsElseConstants) {
  auto dynamic = inputs("%x: f32[s0,64]");
  DimAbstraction symbolic({dynamic.get()});
  EXPECT_EQ(symbolic.explain({expr("s0*64")}), 64 * sym("in0.0"));
  EXPECT_EQ(symbolic.explain({32}), SymExpr(32));

  auto fixed = inputs("%x: f32[8,64]");
  DimAbstraction concrete({fixed.get()});
  EXPECT_EQ(concrete.explain({8}), SymExpr(8));
}

TEST(DimAbstractionTest, ASymbolNoInputDimNamesIsKeptWhenEveryCompileHasIt) {
  auto a = inputs("%x: f32[s0]");
  auto b = inputs("%x: f32[s0]");
  DimAbstraction dims({a.get(), b.get()});
  EXPECT_EQ(dims.explain({sym("u0"), sym("u0")}), sym("u0"));
  EXPECT_EQ(dims.explain({sym("u0"), sym("u1")}), std::nullopt);
}

TEST(DimAbstractionTest, InputDimNamesPrintAsWritten) {
  EXPECT_EQ(sym("x.0").str(), "x.0");
  EXPECT_EQ((2 * sym("x.0")).str(), "2*x.0");
}

TEST(DimAbstractionTest, CompilesOfDifferentFramesAreRejected) {
  auto one = inputs("%x: f32[8,64]");
  auto two = inputs("%x: f32[8,64], %y: f32[64]");
  auto flat = inputs("%x: f32[512]");
  try {
    DimAbstraction({one.get(), two.get()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "diff");
    EXPECT_NE(e.message().find("2 tensor inputs where compile 0 has 1"), std::string::npos)
        << e.message();
  }
  EXPECT_THROW(DimAbstraction({one.get(), flat.get()}), Error);
  DimAbstraction dims({one.get()});
  EXPECT_THROW(dims.explain({8, 16}), Error);
  EXPECT_THROW(dims.varies("y.0"), Error);
}

} // namespace
} // namespace loupe::diff
