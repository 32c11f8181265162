// Scaling fits over three or more compiles: a dim as a small polynomial in the input dims,
// and whether it grows faster than them.
#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "inspector/diff/dim_fit.h"

namespace loupe::diff {
namespace {

std::unique_ptr<Graph> inputs(const std::string& signature) {
  return parseGraph("graph @f(" + signature + ") -> () {\n  return\n}\n");
}

SymExpr sym(const std::string& name) {
  return SymExpr::symbol(name);
}

// Batch B at 2, 3, 5 and sequence length T at 3, 5, 4.
class ThreeCompiles : public ::testing::Test {
protected:
  std::unique_ptr<Graph> graphs[3] = {inputs("%x: f32[2,3,64]"), inputs("%x: f32[3,5,64]"),
                                      inputs("%x: f32[5,4,64]")};
  DimAbstraction dims{{graphs[0].get(), graphs[1].get(), graphs[2].get()}, {"x"}};
};

TEST_F(ThreeCompiles, TheBatchItselfIsLinear) {
  auto fit = fitDim(dims, {2, 3, 5});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->expr, sym("x.0"));
  EXPECT_TRUE(fit->linear());
}

TEST_F(ThreeCompiles, ASquareOfTheBatchIsNotLinear) {
  auto fit = fitDim(dims, {4, 9, 25});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->expr, sym("x.0") * sym("x.0"));
  EXPECT_FALSE(fit->linear());
  EXPECT_EQ(fit->nonlinearIn, std::vector<std::string>{"x.0"});
}

TEST_F(ThreeCompiles, AMultipleOfTheBatchIsLinear) {
  auto fit = fitDim(dims, {6, 9, 15});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->expr, 3 * sym("x.0"));
  EXPECT_TRUE(fit->linear());
}

TEST_F(ThreeCompiles, FitsBeyondTheAbstractionsForms) {
  auto affine = fitDim(dims, {5, 7, 11});
  ASSERT_TRUE(affine);
  EXPECT_EQ(affine->expr, 2 * sym("x.0") + 1);
  EXPECT_TRUE(affine->linear());

  auto concat = fitDim(dims, {5, 8, 9}); // cat along a dim of size B and one of size T
  ASSERT_TRUE(concat);
  EXPECT_EQ(concat->expr, sym("x.0") + sym("x.1"));
  EXPECT_TRUE(concat->linear());

  auto blowup = fitDim(dims, {6, 12, 30});
  ASSERT_TRUE(blowup);
  EXPECT_EQ(blowup->expr, sym("x.0") * sym("x.0") + sym("x.0"));
  EXPECT_EQ(blowup->nonlinearIn, std::vector<std::string>{"x.0"});
}

TEST_F(ThreeCompiles, AProductOfTwoInputDimsIsLinearInEach) {
  auto fit = fitDim(dims, {6, 15, 20});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->expr, sym("x.0") * sym("x.1"));
  EXPECT_TRUE(fit->linear());
}

TEST_F(ThreeCompiles, ConstantsAndMisfits) {
  auto constant = fitDim(dims, {64, 64, 64});
  ASSERT_TRUE(constant);
  EXPECT_EQ(constant->expr, SymExpr(64));
  EXPECT_TRUE(constant->linear());
  EXPECT_EQ(fitDim(dims, {2, 7, 3}), std::nullopt);
}

TEST(DimFitTest, ASymbolicCompileStatesItsExpression) {
  auto a = inputs("%x: f32[2,64]");
  auto b = inputs("%x: f32[3,64]");
  auto c = inputs("%s0: index<s0>, %x: f32[s0,64]");
  DimAbstraction dims({a.get(), b.get(), c.get()}, {"x"});
  auto fit = fitDim(dims, {4, 9, SymExpr::parse("s0**2")});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->expr, sym("x.0") * sym("x.0"));
  EXPECT_EQ(fit->nonlinearIn, std::vector<std::string>{"x.0"});
}

TEST(DimFitTest, NonlinearInputDims) {
  EXPECT_EQ(nonlinearInputDims(sym("a") * sym("b") + 3 * sym("a")), std::vector<std::string>{});
  EXPECT_EQ(nonlinearInputDims(sym("a") * sym("a") * sym("b")), std::vector<std::string>{"a"});
  EXPECT_EQ(nonlinearInputDims(SymExpr::floorDiv(sym("a"), 2)), std::vector<std::string>{});
}

} // namespace
} // namespace loupe::diff
