// Reductions: dims (negative, repeated, empty = all), keepdim with symbolic shapes, torch's
// result dtypes, and the reference against sums and scans written out here.
#include "compiler/ir/error.h"
#include "unit_tests/compiler/ops/elementwise/op_test_support.h"

namespace loupe::testing {
namespace {

const SymExpr s0 = SymExpr::symbol("s0");

AttrMap dims(IntList d, bool keepdim = false) {
  return attrs({{"dim", d}, {"keepdim", keepdim}});
}

TEST(ReductionShapes, SymbolicDimsKeepdimAndNegativeDims) {
  const Type x = tensorType(DType::F32, {s0, 128});
  EXPECT_EQ(inferOne("aten.sum.dim_IntList", {x}, dims({-1})).tensor().shape, (Shape{s0}));
  EXPECT_EQ(inferOne("aten.sum.dim_IntList", {x}, dims({-1}, true)).tensor().shape, (Shape{s0, 1}));
  EXPECT_EQ(inferOne("aten.amax", {x}, dims({0})).tensor().shape, (Shape{128}));
  EXPECT_EQ(inferOne("aten.mean.dim", {x}, dims({}, true)).tensor().shape, (Shape{1, 1}));
  EXPECT_EQ(inferOne("aten.sum.dim_IntList", {x}, attrs({{"dim", NoneAttr{}}})).tensor().shape,
            Shape{});
  EXPECT_EQ(inferOne("aten.sum", {x}).tensor().shape, Shape{});
  EXPECT_EQ(inferOne("aten.argmax", {x}).tensor().shape, Shape{});
  EXPECT_EQ(inferOne("aten.any.dim", {x}, attrs({{"dim", SymExpr(1)}})).tensor().shape,
            (Shape{s0}));
  auto maxDim = infer("aten.max.dim", {x}, attrs({{"dim", SymExpr(0)}, {"keepdim", true}}));
  ASSERT_EQ(maxDim.size(), 2u);
  EXPECT_EQ(maxDim[0].tensor().shape, (Shape{1, 128}));
  EXPECT_EQ(maxDim[1].tensor().dtype, DType::I64);
  EXPECT_EQ(infer("aten.var_mean.correction", {x}, dims({1})).size(), 2u);
}

TEST(ReductionShapes, BadDimsAreShapeErrors) {
  const Type x = tensorType(DType::F32, {2, 3});
  EXPECT_THROW(inferOne("aten.sum.dim_IntList", {x}, dims({2})), Error);
  EXPECT_THROW(inferOne("aten.sum.dim_IntList", {x}, dims({-3})), Error);
  EXPECT_THROW(inferOne("aten.sum.dim_IntList", {x}, dims({1, -1})), Error);
  // A 0-d tensor accepts dim 0 and -1.
  EXPECT_EQ(
      inferOne("aten.sum.dim_IntList", {tensorType(DType::F32, {})}, dims({-1})).tensor().shape,
      Shape{});
}

TEST(ReductionDTypes, FollowTorch) {
  auto dtypeOf = [](const std::string& name, DType in, AttrMap a = {}) {
    return inferOne(name, {tensorType(in, {4})}, a).tensor().dtype;
  };
  EXPECT_EQ(dtypeOf("aten.sum", DType::I32), DType::I64);
  EXPECT_EQ(dtypeOf("aten.sum", DType::Bool), DType::I64);
  EXPECT_EQ(dtypeOf("aten.sum", DType::F16), DType::F16);
  EXPECT_EQ(dtypeOf("aten.sum", DType::F16, attrs({{"dtype", DType::F32}})), DType::F32);
  EXPECT_EQ(dtypeOf("aten.prod", DType::U8), DType::I64);
  EXPECT_EQ(dtypeOf("aten.amax", DType::I32, dims({0})), DType::I32);
  EXPECT_EQ(dtypeOf("aten.argmin", DType::F32), DType::I64);
  EXPECT_EQ(dtypeOf("aten.any", DType::F32), DType::Bool);
  EXPECT_EQ(dtypeOf("aten.all", DType::U8), DType::U8);
  EXPECT_EQ(dtypeOf("aten.mean", DType::I64, attrs({{"dtype", DType::F64}})), DType::F64);
  EXPECT_THROW(dtypeOf("aten.mean", DType::I64), Error);
  EXPECT_THROW(dtypeOf("aten.var.correction", DType::I32), Error);
}

// x[i][j][k] = values 0..23 shaped [2,3,4] with a few negatives.
Tensor cube() {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i)
    v.push_back((i * 7 % 11) - 4);
  return Tensor::fromDoubles(v, DType::F64, {2, 3, 4});
}

double element(const Tensor& t, int i, int j, int k) {
  return t.at(i * 12 + j * 4 + k);
}

TEST(ReductionReference, SumOverDimPairsMatchesLoops) {
  Tensor x = cube();
  std::vector<double> expected;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        s += element(x, i, j, k);
    expected.push_back(s);
  }
  Tensor out = runOne("aten.sum.dim_IntList", {x}, dims({0, -1}, true));
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{1, 3, 1}));
  expectValues(out, expected);
  double total = 0;
  for (double v : x.toDoubles())
    total += v;
  expectValues(runOne("aten.sum", {x}), {total});
  expectValues(runOne("aten.sum.dim_IntList", {x}, dims({})), {total});
  expectValues(runOne("aten.mean", {x}), {total / 24});
}

TEST(ReductionReference, ScansAlongOneDim) {
  Tensor x = cube();
  std::vector<double> mx, mn, prod, argmx, argmn, any, all, mean;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double hi = -1e9, lo = 1e9, p = 1, s = 0;
      int hiAt = 0, loAt = 0;
      bool anyNonzero = false, allNonzero = true;
      for (int j = 0; j < 3; ++j) {
        double v = element(x, i, j, k);
        if (v > hi) hi = v, hiAt = j;
        if (v < lo) lo = v, loAt = j;
        p *= v;
        s += v;
        anyNonzero = anyNonzero || v != 0;
        allNonzero = allNonzero && v != 0;
      }
      mx.push_back(hi), mn.push_back(lo), prod.push_back(p), argmx.push_back(hiAt);
      argmn.push_back(loAt), any.push_back(anyNonzero), all.push_back(allNonzero),
          mean.push_back(s / 3);
    }
  AttrMap one = attrs({{"dim", SymExpr(1)}});
  expectValues(runOne("aten.amax", {x}, dims({1})), mx);
  expectValues(runOne("aten.amin", {x}, dims({-2})), mn);
  expectValues(runOne("aten.prod.dim_int", {x}, one), prod);
  expectValues(runOne("aten.argmax", {x}, one), argmx);
  expectValues(runOne("aten.argmin", {x}, one), argmn);
  expectValues(runOne("aten.any.dim", {x}, one), any);
  expectValues(runOne("aten.all.dim", {x}, one), all);
  expectValues(runOne("aten.mean.dim", {x}, dims({1})), mean);
  auto maxDim = run("aten.max.dim", {x}, one);
  expectValues(maxDim[0], mx);
  expectValues(maxDim[1], argmx);
  auto minDim = run("aten.min.dim", {x}, one);
  expectValues(minDim[0], mn);
  expectValues(minDim[1], argmn);
}

TEST(ReductionReference, TiesNaNAndWholeTensorForms) {
  Tensor x = values({3, 1, 3, NAN, 0});
  expectValues(runOne("aten.argmax", {values({3, 1, 3, 0})}), {0}); // first of equal maxima
  expectValues(runOne("aten.argmax", {x}), {3});                    // NaN is the maximum
  expectValues(runOne("aten.amax", {x}), {NAN});
  expectValues(runOne("aten.amin", {x}), {NAN});
  expectValues(runOne("aten.prod", {values({2, -3, 0.5})}), {-3});
  expectValues(runOne("aten.any", {values({0, 0, 2})}), {1});
  expectValues(runOne("aten.all", {values({0, 1, 2})}), {0});
  // argmax over the flattened tensor, keepdim keeps every dim as 1.
  Tensor flat = runOne("aten.argmax", {cube()}, attrs({{"keepdim", true}}));
  EXPECT_EQ(flat.shape(), (std::vector<int64_t>{1, 1, 1}));
}

TEST(ReductionReference, VarianceWithCorrections) {
  Tensor x = values({1, 2, 4, 7, 3, 3}, DType::F64, {2, 3});
  // Row means 7/3 and 13/3; squared deviations summed: 42/9 and 96/9.
  expectValues(runOne("aten.var.correction", {x}, dims({1})), {42.0 / 9 / 2, 96.0 / 9 / 2});
  expectValues(
      runOne("aten.var.correction", {x}, attrs({{"dim", IntList{1}}, {"correction", SymExpr(0)}})),
      {42.0 / 9 / 3, 96.0 / 9 / 3});
  auto varMean = run("aten.var_mean.correction", {x}, dims({1}, true));
  EXPECT_EQ(varMean[1].shape(), (std::vector<int64_t>{2, 1}));
  expectValues(varMean[0], {42.0 / 9 / 2, 96.0 / 9 / 2});
  expectValues(varMean[1], {7.0 / 3, 13.0 / 3});
}

TEST(ReductionRecipes, ExistForGeneratedReductions) {
  for (const char* name :
       {"aten.sum", "aten.sum.dim_IntList", "aten.mean", "aten.mean.dim", "aten.amax", "aten.amin",
        "aten.prod", "aten.prod.dim_int", "aten.any", "aten.any.dim", "aten.all", "aten.all.dim"}) {
    ASSERT_TRUE(op(name).reduction.has_value()) << name;
    const ReductionRecipe& r = *op(name).reduction;
    EXPECT_FALSE(r.init(DType::F32).empty()) << name;
    EXPECT_NE(r.combine("acc", "x").find("x"), std::string::npos) << name;
  }
  EXPECT_EQ(op("aten.amax").reduction->init(DType::F32), "-INFINITY");
  EXPECT_EQ(op("aten.amin").reduction->init(DType::I64), "9223372036854775807LL");
  EXPECT_EQ(op("aten.sum").reduction->combine("acc", "x"), "(acc + x)");
  EXPECT_EQ(op("aten.mean.dim").reduction->finalize("acc", "n"), "(acc / n)");
  EXPECT_FALSE(op("aten.argmax").reduction.has_value());
}

} // namespace
} // namespace loupe::testing
