// Pointwise ops: broadcasting (symbolic too), torch's dtype promotion, and each op's reference
// against values computed here with independent formulas.
#include <numbers>

#include "compiler/ir/error.h"
#include "compiler/ops/pointwise.h"
#include "unit_tests/compiler/ops/elementwise/op_test_support.h"

namespace loupe::testing {
namespace {

const SymExpr s0 = SymExpr::symbol("s0");

TEST(Broadcast, SymbolicDimStretchesAgainstOne) {
  Type t =
      inferOne("aten.add.Tensor", {tensorType(DType::F32, {s0, 1}), tensorType(DType::F32, {128})});
  EXPECT_EQ(t.tensor().shape, (Shape{s0, 128}));
  t = inferOne("aten.mul.Tensor",
               {tensorType(DType::F32, {2 * s0, 1, 4}), tensorType(DType::F32, {3, 1})});
  EXPECT_EQ(t.tensor().shape, (Shape{2 * s0, 3, 4}));
}

TEST(Broadcast, IncompatibleShapesNameBothShapes) {
  try {
    inferOne("aten.sub.Tensor", {tensorType(DType::F32, {4, 3}), tensorType(DType::F32, {5})});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "shape");
    EXPECT_NE(e.message().find("[4,3]"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("[5]"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("aten.sub.Tensor"), std::string::npos) << e.message();
  }
  // Distinct symbols are not assumed equal.
  EXPECT_THROW(inferOne("aten.add.Tensor", {tensorType(DType::F32, {s0}),
                                            tensorType(DType::F32, {SymExpr::symbol("s1")})}),
               Error);
}

TEST(Broadcast, IndexerMapsOutputPositionsToInputElements) {
  BroadcastIndexer rowVector({3}, {2, 3});
  BroadcastIndexer column({2, 1}, {2, 3});
  EXPECT_EQ(rowVector(4), 1); // output (1,1)
  EXPECT_EQ(column(4), 1);
  EXPECT_EQ(column(2), 0); // output (0,2)
}

struct PromotionCase {
  std::string op;
  std::vector<Type> operands;
  AttrMap attrs;
  DType expected;
};

TEST(TypePromotion, FollowsTorchResultType) {
  auto t = [](DType d, Shape s = {4}) { return tensorType(d, std::move(s)); };
  const std::vector<PromotionCase> cases = {
      {"aten.add.Tensor", {t(DType::I32), t(DType::F32)}, {}, DType::F32},
      {"aten.add.Tensor", {t(DType::F16), t(DType::F32, {})}, {}, DType::F16},
      {"aten.add.Tensor", {t(DType::I64), t(DType::F64, {})}, {}, DType::F64},
      {"aten.add.Tensor", {t(DType::Bool), t(DType::I32, {})}, {}, DType::I32},
      {"aten.mul.Tensor", {t(DType::F16), t(DType::BF16)}, {}, DType::F32},
      {"aten.add.Scalar", {t(DType::I32)}, attrs({{"other", 2.5}}), DType::F32},
      {"aten.add.Scalar", {t(DType::F16)}, attrs({{"other", 2.5}}), DType::F16},
      {"aten.mul.Scalar", {t(DType::I32)}, attrs({{"other", SymExpr(3)}}), DType::I32},
      {"aten.add.Scalar", {t(DType::Bool)}, attrs({{"other", SymExpr(1)}}), DType::I64},
      {"aten.div.Tensor", {t(DType::I64), t(DType::I64)}, {}, DType::F32},
      {"aten.div.Scalar", {t(DType::I32)}, attrs({{"other", SymExpr(2)}}), DType::F32},
      {"aten.div.Tensor_mode",
       {t(DType::I64), t(DType::I64)},
       attrs({{"rounding_mode", std::string("floor")}}),
       DType::I64},
      {"aten.div.Tensor_mode", {t(DType::I64), t(DType::I64)}, {}, DType::F32},
      {"aten.lt.Tensor", {t(DType::F32), t(DType::F64)}, {}, DType::Bool},
      {"aten.eq.Scalar", {t(DType::I64)}, attrs({{"other", 1.5}}), DType::Bool},
      {"aten.exp", {t(DType::I64)}, {}, DType::F32},
      {"aten.sigmoid", {t(DType::F16)}, {}, DType::F16},
      {"aten.neg", {t(DType::I32)}, {}, DType::I32},
      {"aten.clamp", {t(DType::I64)}, attrs({{"min", 0.5}}), DType::F32},
      {"aten.clamp_min", {t(DType::I64)}, attrs({{"min", SymExpr(0)}}), DType::I64},
      {"aten.where.self", {t(DType::Bool), t(DType::I64), t(DType::F32)}, {}, DType::F32},
      {"aten.masked_fill.Scalar",
       {t(DType::I64), t(DType::Bool)},
       attrs({{"value", 0.5}}),
       DType::I64},
      {"aten.pow.Tensor_Scalar", {t(DType::I64)}, attrs({{"exponent", 0.5}}), DType::F32},
      {"aten.rsub.Scalar", {t(DType::I64)}, attrs({{"other", 1.0}}), DType::F32},
      {"aten._to_copy", {t(DType::F32)}, attrs({{"dtype", DType::F16}}), DType::F16},
      {"aten._to_copy", {t(DType::F32)}, {}, DType::F32},
      {"prims.convert_element_type", {t(DType::F32)}, attrs({{"dtype", DType::I32}}), DType::I32},
  };
  for (const auto& c : cases)
    EXPECT_EQ(inferOne(c.op, c.operands, c.attrs).tensor().dtype, c.expected) << c.op;
}

struct UnaryCase {
  std::string op;
  std::function<double(double)> expected;
  double low = -3, high = 3;
};

TEST(UnaryOps, ReferenceMatchesIndependentFormulas) {
  const double pi = std::numbers::pi;
  const std::vector<UnaryCase> cases = {
      {"aten.neg", [](double x) { return -x; }},
      {"aten.abs", [](double x) { return x < 0 ? -x : x; }},
      {"aten.exp", [](double x) { return std::pow(std::numbers::e, x); }},
      {"aten.log", [](double x) { return std::log(x); }, 0.1, 5},
      {"aten.log1p", [](double x) { return std::log(1 + x); }, 0.01, 5},
      {"aten.expm1", [](double x) { return std::exp(x) - 1; }, 0.5, 3},
      {"aten.sqrt", [](double x) { return std::pow(x, 0.5); }, 0, 9},
      {"aten.rsqrt", [](double x) { return std::pow(x, -0.5); }, 0.1, 9},
      {"aten.reciprocal", [](double x) { return std::pow(x, -1.0); }, 0.1, 9},
      {"aten.sin", [pi](double x) { return std::cos(x - pi / 2); }},
      {"aten.cos", [pi](double x) { return std::sin(x + pi / 2); }},
      {"aten.tanh", [](double x) { return (std::exp(2 * x) - 1) / (std::exp(2 * x) + 1); }},
      {"aten.sigmoid", [](double x) { return std::exp(x) / (std::exp(x) + 1); }},
      {"aten.silu", [](double x) { return x * std::exp(x) / (std::exp(x) + 1); }},
      {"aten.relu", [](double x) { return std::max(x, 0.0); }},
      {"aten.erf", [](double x) { return 1 - std::erfc(x); }},
      {"aten.sign", [](double x) { return x > 0   ? 1.0
                                          : x < 0 ? -1.0
                                                  : 0.0; }},
      {"aten.floor",
       [](double x) { return x - std::fmod(x, 1.0) - (std::fmod(x, 1.0) < 0 ? 1 : 0); }},
      {"aten.ceil", [](double x) { return -std::floor(-x); }},
      {"aten.logical_not", [](double x) { return x == 0 ? 1.0 : 0.0; }},
  };
  for (const auto& c : cases) {
    Tensor x = randomTensor({3, 4}, c.low, c.high);
    expectValues(runOne(c.op, {x}), map(x, c.expected), 1e-9);
  }
  // Python's round: half to even.
  expectValues(runOne("aten.round", {values({0.5, 1.5, 2.5, -0.5, -1.7})}), {0, 2, 2, -0.0, -2});
  expectValues(runOne("aten.relu", {values({NAN})}), {NAN});
}

struct BinaryCase {
  std::string tensorOp;
  std::string scalarOp; // empty: none
  std::function<double(double, double)> expected;
  double low = -3, high = 3;
};

// out[i,j,k] for operands of shapes [2,1,3] and [4,1], computed with explicit loops.
std::vector<double> broadcastExpected(const Tensor& a, const Tensor& b,
                                      const std::function<double(double, double)>& f) {
  std::vector<double> out;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k)
        out.push_back(f(a.at(i * 3 + k), b.at(j)));
  return out;
}

TEST(BinaryOps, TensorAndScalarOverloadsMatchFormulas) {
  auto boolOf = [](bool v) { return v ? 1.0 : 0.0; };
  const std::vector<BinaryCase> cases = {
      {"aten.add.Tensor", "aten.add.Scalar", [](double a, double b) { return a + b; }},
      {"aten.sub.Tensor", "aten.sub.Scalar", [](double a, double b) { return a - b; }},
      {"aten.mul.Tensor", "aten.mul.Scalar", [](double a, double b) { return a * b; }},
      {"aten.div.Tensor", "aten.div.Scalar", [](double a, double b) { return a / b; }, 0.5, 3},
      {"aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar",
       [](double a, double b) { return std::exp(b * std::log(a)); }, 0.5, 3},
      {"aten.maximum", "", [](double a, double b) { return a > b ? a : b; }},
      {"aten.minimum", "", [](double a, double b) { return a < b ? a : b; }},
      {"aten.fmod.Tensor", "aten.fmod.Scalar",
       [](double a, double b) { return a - std::trunc(a / b) * b; }, 0.5, 3},
      {"aten.remainder.Tensor", "aten.remainder.Scalar",
       [](double a, double b) { return a - std::floor(a / b) * b; }, 0.5, 3},
      {"aten.eq.Tensor", "aten.eq.Scalar", [=](double a, double b) { return boolOf(a == b); }},
      {"aten.ne.Tensor", "aten.ne.Scalar", [=](double a, double b) { return boolOf(a != b); }},
      {"aten.lt.Tensor", "aten.lt.Scalar", [=](double a, double b) { return boolOf(a < b); }},
      {"aten.le.Tensor", "aten.le.Scalar", [=](double a, double b) { return boolOf(a <= b); }},
      {"aten.gt.Tensor", "aten.gt.Scalar", [=](double a, double b) { return boolOf(a > b); }},
      {"aten.ge.Tensor", "aten.ge.Scalar", [=](double a, double b) { return boolOf(a >= b); }},
      {"aten.logical_and", "", [=](double a, double b) { return boolOf(a != 0 && b != 0); }},
      {"aten.logical_or", "", [=](double a, double b) { return boolOf(a != 0 || b != 0); }},
      {"aten.logical_xor", "", [=](double a, double b) { return boolOf((a != 0) != (b != 0)); }},
      {"aten.div.Tensor_mode", "aten.div.Scalar_mode", [](double a, double b) { return a / b; },
       0.5, 3},
  };
  for (const auto& c : cases) {
    // Small integers (as doubles) make equality and the logical ops meaningful.
    const bool integral = c.tensorOp.find("eq") != std::string::npos ||
                          c.tensorOp.find("logical") != std::string::npos;
    auto sample = [&](std::vector<int64_t> shape, unsigned seed) {
      Tensor t = randomTensor(shape, c.low, c.high, DType::F64, seed);
      return integral ? Tensor::fromDoubles(map(t, [](double v) { return std::round(v); }),
                                            DType::F64, shape)
                      : t;
    };
    Tensor a = sample({2, 1, 3}, 1), b = sample({4, 1}, 2);
    Tensor out = runOne(c.tensorOp, {a, b});
    EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 4, 3})) << c.tensorOp;
    SCOPED_TRACE(c.tensorOp);
    expectValues(out, broadcastExpected(a, b, c.expected), 1e-9);
    if (c.scalarOp.empty()) continue;
    const std::string attr = c.scalarOp == "aten.pow.Tensor_Scalar" ? "exponent" : "other";
    SCOPED_TRACE(c.scalarOp);
    expectValues(runOne(c.scalarOp, {a}, attrs({{attr, 1.5}})),
                 map(a, [&](double x) { return c.expected(x, 1.5); }), 1e-9);
  }
}

TEST(BinaryOps, AlphaScalesOther) {
  Tensor a = values({1, 2}), b = values({10, 20});
  expectValues(runOne("aten.add.Tensor", {a, b}, attrs({{"alpha", SymExpr(2)}})), {21, 42});
  expectValues(runOne("aten.sub.Tensor", {a, b}, attrs({{"alpha", 0.5}})), {-4, -8});
  expectValues(runOne("aten.add.Scalar", {a}, attrs({{"other", 3.0}, {"alpha", SymExpr(2)}})),
               {7, 8});
  expectValues(runOne("aten.rsub.Scalar", {a}, attrs({{"other", 1.0}})), {0, -1});
  expectValues(runOne("aten.rsub.Scalar", {a}, attrs({{"other", 1.0}, {"alpha", 3.0}})), {-2, -5});
}

TEST(BinaryOps, RoundingModesAndRemaindersFollowPython) {
  Tensor a = values({-7, 7, -7, 7}, DType::I64), b = values({2, 2, -2, -2}, DType::I64);
  Tensor trunc =
      runOne("aten.div.Tensor_mode", {a, b}, attrs({{"rounding_mode", std::string("trunc")}}));
  EXPECT_EQ(trunc.dtype(), DType::I64);
  expectValues(trunc, {-3, 3, 3, -3});
  expectValues(
      runOne("aten.div.Tensor_mode", {a, b}, attrs({{"rounding_mode", std::string("floor")}})),
      {-4, 3, 3, -4});
  expectValues(runOne("aten.div.Tensor_mode", {a, b}), {-3.5, 3.5, 3.5, -3.5});
  expectValues(runOne("aten.remainder.Tensor", {a, b}), {1, 1, -1, -1});
  expectValues(runOne("aten.fmod.Tensor", {a, b}), {-1, 1, -1, 1});
  EXPECT_THROW(
      runOne("aten.div.Tensor_mode", {a, b}, attrs({{"rounding_mode", std::string("ceil")}})),
      Error);
}

TEST(BinaryOps, MaximumAndMinimumPropagateNaN) {
  Tensor a = values({NAN, 1, 2}), b = values({1, NAN, 3});
  expectValues(runOne("aten.maximum", {a, b}), {NAN, NAN, 3});
  expectValues(runOne("aten.minimum", {a, b}), {NAN, NAN, 2});
}

TEST(SelectionOps, WhereAndMaskedFill) {
  Tensor cond = values({1, 0, 1}, DType::Bool);
  Tensor a = values({1, 2, 3}), b = values({-1});
  expectValues(runOne("aten.where.self", {cond, a, b}), {1, -1, 3});
  EXPECT_THROW(
      inferOne("aten.where.self", {tensorType(DType::F32, {3}), tensorType(DType::F32, {3}),
                                   tensorType(DType::F32, {3})}),
      Error);

  Tensor mask = values({0, 1, 0, 1}, DType::Bool, {1, 4});
  Tensor self = values({1, 2, 3, 4, 5, 6, 7, 8}, DType::F32, {2, 4});
  expectValues(runOne("aten.masked_fill.Scalar", {self, mask}, attrs({{"value", -1.0}})),
               {1, -1, 3, -1, 5, -1, 7, -1});
  expectValues(runOne("aten.masked_fill.Tensor", {self, mask, values({9}, DType::F32)}),
               {1, 9, 3, 9, 5, 9, 7, 9});
  // A mask may not widen self.
  EXPECT_THROW(inferOne("aten.masked_fill.Scalar",
                        {tensorType(DType::F32, {4}), tensorType(DType::Bool, {2, 4})},
                        attrs({{"value", 0.0}})),
               Error);
}

TEST(BinaryOps, TrueDivideIsDivisionPromotingIntegersToFloat) {
  Tensor a = values({1, 7, -3}, DType::I64), b = values({2, 2, 4}, DType::I64);
  Tensor quotient = runOne("aten.true_divide.Tensor", {a, b});
  EXPECT_EQ(quotient.dtype(), DType::F32);
  expectValues(quotient, {0.5, 3.5, -0.75});
  // As in torch, a 0-d operand of the same category does not widen the result.
  EXPECT_EQ(inferOne("aten.true_divide.Tensor",
                     {tensorType(DType::F32, {s0, 4}), tensorType(DType::F64, {})})
                .str(),
            "f32[s0,4]");
}

TEST(Dropout, InferenceGivesTheOutputAndABoolMask) {
  std::vector<Type> results = infer("aten.native_dropout", {tensorType(DType::F32, {s0, 8})},
                                    attrs({{"p", 0.1}, {"train", true}}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].str(), "f32[s0,8]");
  EXPECT_EQ(results[1].str(), "bool[s0,8]");
  EXPECT_THROW(infer("aten.native_dropout", {tensorType(DType::I64, {4})}, attrs({{"p", 0.1}})),
               Error);
  // Random draws must survive CSE and DCE; the backward is an ordinary pointwise op.
  EXPECT_FALSE(op("aten.native_dropout").pure);
  EXPECT_TRUE(op("aten.native_dropout_backward").pure);
}

TEST(Dropout, KeepsAboutOneMinusPScaledAndReportsTheMask) {
  const int64_t n = 4000;
  Tensor x = Tensor::fromDoubles(std::vector<double>(n, 3.0), DType::F32, {n});
  std::vector<Tensor> first = run("aten.native_dropout", {x}, attrs({{"p", 0.25}}));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = first[1].at(i) != 0;
    kept += keep;
    EXPECT_NEAR(first[0].at(i), keep ? 3.0 / 0.75 : 0.0, 1e-6) << "element " << i;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.05);
  // Each call draws a new mask.
  std::vector<Tensor> second = run("aten.native_dropout", {x}, attrs({{"p", 0.25}}));
  EXPECT_NE(first[1].toDoubles(), second[1].toDoubles());
}

TEST(Dropout, EvaluationAndCertainDropAreExact) {
  Tensor x = values({1.5, -2, 0.25});
  std::vector<Tensor> off = run("aten.native_dropout", {x}, attrs({{"p", 0.5}, {"train", false}}));
  expectValues(off[0], {1.5, -2, 0.25});
  expectValues(off[1], {1, 1, 1});
  std::vector<Tensor> all = run("aten.native_dropout", {x}, attrs({{"p", 1.0}, {"train", true}}));
  expectValues(all[0], {0, 0, 0});
  expectValues(all[1], {0, 0, 0});
}

TEST(Dropout, BackwardScalesTheKeptGradients) {
  Tensor grad = values({1, 2, 3, 4}, DType::F32, {2, 2});
  Tensor mask = values({1, 0}, DType::Bool, {2});
  Tensor dx = runOne("aten.native_dropout_backward", {grad, mask}, attrs({{"scale", 2.0}}));
  EXPECT_EQ(dx.dtype(), DType::F32);
  expectValues(dx, {2, 0, 6, 0});
  EXPECT_THROW(inferOne("aten.native_dropout_backward",
                        {tensorType(DType::F32, {4}), tensorType(DType::F32, {4})},
                        attrs({{"scale", 2.0}})),
               Error);
}

TEST(UnaryOps, ClampFamily) {
  Tensor x = values({-3, -0.5, 0.5, 3, NAN});
  expectValues(runOne("aten.clamp", {x}, attrs({{"min", -1.0}, {"max", 1.0}})),
               {-1, -0.5, 0.5, 1, NAN});
  expectValues(runOne("aten.clamp", {x}, attrs({{"min", 0.0}})), {0, 0, 0.5, 3, NAN});
  expectValues(runOne("aten.clamp", {x}, attrs({{"max", 0.0}})), {-3, -0.5, 0, 0, NAN});
  expectValues(runOne("aten.clamp", {x}, attrs({{"min", 2.0}, {"max", 1.0}})), {1, 1, 1, 1, NAN});
  expectValues(runOne("aten.clamp_min", {x}, attrs({{"min", 0.0}})), {0, 0, 0.5, 3, NAN});
  expectValues(runOne("aten.clamp_max", {x}, attrs({{"max", 0.0}})), {-3, -0.5, 0, 0, NAN});
  expectValues(runOne("aten.hardtanh", {x}), {-1, -0.5, 0.5, 1, NAN});
}

TEST(UnaryOps, BitwiseNot) {
  expectValues(runOne("aten.bitwise_not", {values({0, 1}, DType::Bool)}), {1, 0});
  expectValues(runOne("aten.bitwise_not", {values({0, 5, -3}, DType::I64)}), {-1, -6, 2});
  EXPECT_THROW(inferOne("aten.bitwise_not", {tensorType(DType::F32, {2})}), Error);
}

TEST(UnaryOps, GeluExactAndTanh) {
  // gelu(1) = Phi(1); tanh form from its published formula.
  Tensor x = values({1.0, -0.5});
  expectValues(runOne("aten.gelu", {x}), {0.8413447460685429, -0.15426876936299347}, 1e-12);
  auto tanhGelu = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
  };
  expectValues(runOne("aten.gelu", {x}, attrs({{"approximate", std::string("tanh")}})),
               map(x, tanhGelu), 1e-12);
  EXPECT_THROW(runOne("aten.gelu", {x}, attrs({{"approximate", std::string("fast")}})), Error);
}

// Backward ops against central differences of the forward op's reference.
double derivative(const std::string& forward, double x, const AttrMap& a = {}) {
  const double h = 1e-5;
  return (runOne(forward, {values({x + h})}, a).at(0) -
          runOne(forward, {values({x - h})}, a).at(0)) /
         (2 * h);
}

TEST(BackwardOps, MatchDerivativesOfTheForwardOps) {
  Tensor grad = values({0.5, -2, 3, 1.5});
  Tensor x = values({-1.3, -0.2, 0.4, 2.1});
  for (std::string approx : {"none", "tanh"}) {
    AttrMap a = attrs({{"approximate", approx}});
    std::vector<double> expected;
    for (int i = 0; i < 4; ++i)
      expected.push_back(grad.at(i) * derivative("aten.gelu", x.at(i), a));
    expectValues(runOne("aten.gelu_backward", {grad, x}, a), expected, 1e-8);
  }
  std::vector<double> silu, sigmoid, tanh;
  for (int i = 0; i < 4; ++i) {
    silu.push_back(grad.at(i) * derivative("aten.silu", x.at(i)));
    sigmoid.push_back(grad.at(i) * derivative("aten.sigmoid", x.at(i)));
    tanh.push_back(grad.at(i) * derivative("aten.tanh", x.at(i)));
  }
  expectValues(runOne("aten.silu_backward", {grad, x}), silu, 1e-8);
  // sigmoid and tanh backward take the forward output.
  expectValues(runOne("aten.sigmoid_backward", {grad, runOne("aten.sigmoid", {x})}), sigmoid, 1e-8);
  expectValues(runOne("aten.tanh_backward", {grad, runOne("aten.tanh", {x})}), tanh, 1e-8);
  expectValues(runOne("aten.threshold_backward", {grad, x}, attrs({{"threshold", 0.0}})),
               {0, 0, 3, 1.5});
}

TEST(Conversions, TruncateTowardsZeroAndTestNonzero) {
  Tensor x = values({-1.7, 0.0, 2.9, 0.25}, DType::F32);
  Tensor i = runOne("aten._to_copy", {x}, attrs({{"dtype", DType::I32}}));
  EXPECT_EQ(i.dtype(), DType::I32);
  expectValues(i, {-1, 0, 2, 0});
  Tensor b = runOne("prims.convert_element_type", {x}, attrs({{"dtype", DType::Bool}}));
  EXPECT_EQ(b.dtype(), DType::Bool);
  expectValues(b, {1, 0, 1, 1});
}

// Attribute values that make every elementwise op's template expandable.
AttrMap sampleAttrs(const OpInfo& info) {
  AttrMap a;
  for (const AttrSpec& spec : info.attrs) {
    if (spec.name == "dtype")
      a.set("dtype", DType::F32);
    else if (!spec.defaultValue)
      a.set(spec.name, 0.75);
  }
  return a;
}

TEST(EmitScalar, EveryElementwiseOpMentionsEachOperand) {
  int count = 0;
  for (const OpInfo* info : OpRegistry::global().all()) {
    if (info->kind != OpKind::Elementwise) continue;
    ++count;
    ASSERT_TRUE(info->emitScalar) << info->name;
    std::vector<std::string> args;
    for (size_t i = 0; i < info->operands.size(); ++i)
      args.push_back("in" + std::to_string(i));
    for (DType compute : {DType::F32, DType::F64}) {
      std::string expr = info->emitScalar(args, sampleAttrs(*info), compute);
      for (const auto& arg : args)
        EXPECT_NE(expr.find(arg), std::string::npos) << info->name << ": " << expr;
      EXPECT_EQ(expr.find('$'), std::string::npos) << info->name << ": " << expr;
      EXPECT_EQ(expr.find('@'), std::string::npos) << info->name << ": " << expr;
    }
  }
  EXPECT_GE(count, 60);
}

TEST(EmitScalar, AttributesBecomeLiteralsOfTheComputeType) {
  const OpInfo& add = op("aten.add.Tensor");
  EXPECT_EQ(add.emitScalar({"a", "b"}, attrs({{"alpha", SymExpr(2)}}), DType::F32),
            "((a) + static_cast<float>(2.0) * (b))");
  const OpInfo& floorDiv = op("aten.div.Tensor_mode");
  AttrMap floor = attrs({{"rounding_mode", std::string("floor")}});
  EXPECT_NE(floorDiv.emitScalar({"a", "b"}, floor, DType::F64).find("loupe_floor"),
            std::string::npos);
  EXPECT_EQ(floorDiv.emitScalar({"a", "b"}, floor, DType::I64).find("loupe_floor"),
            std::string::npos);
  EXPECT_NE(op("aten.gelu").emitScalar({"x"}, {}, DType::F32).find("loupe_erf"), std::string::npos);
  EXPECT_NE(op("aten.gelu")
                .emitScalar({"x"}, attrs({{"approximate", std::string("tanh")}}), DType::F32)
                .find("loupe_tanh"),
            std::string::npos);
  EXPECT_EQ(scalarLiteral(INFINITY, DType::F32), "INFINITY");
}

} // namespace
} // namespace loupe::testing
