// Pooling ops: output sizes (symbolic and ceil_mode), hand-computed values, and backward
// references against finite differences of the forward references.
#include "compiler/ir/error.h"
#include "unit_tests/compiler/ops/nn/nn_test_support.h"

namespace loupe::testing {
namespace {

Shape shapeOf(const std::vector<Type>& types, size_t i = 0) {
  return types.at(i).tensor().shape;
}

TEST(MaxPool, SymbolicOutputSizeAndIndexDtype) {
  Type input = tensorType({sym("s0"), 3, sym("s1"), sym("s1")});
  auto types =
      infer("aten.max_pool2d_with_indices", {&input},
            attrs({{"kernel_size", ints({3})}, {"stride", ints({2})}, {"padding", ints({1})}}));
  SymExpr expected = SymExpr::floorDiv(sym("s1") - 1, 2) + 1;
  EXPECT_EQ(shapeOf(types), (Shape{sym("s0"), 3, expected, expected}));
  EXPECT_EQ(types[1].tensor().dtype, DType::I64);
  EXPECT_EQ(expected.evaluate({{"s1", 7}}), 4); // windows start at -1, 1, 3, 5
}

TEST(MaxPool, CeilModeDropsAWindowStartingPastTheInput) {
  Type input = tensorType({1, 1, 5, 5});
  auto sizeFor = [&](bool ceil) {
    return shapeOf(
        infer("aten.max_pool2d_with_indices", {&input},
              attrs({{"kernel_size", ints({1})}, {"stride", ints({3})}, {"ceil_mode", ceil}})));
  };
  // Windows start at 0 and 3; a third would start at 6, past the input.
  EXPECT_EQ(sizeFor(false), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(sizeFor(true), (Shape{1, 1, 2, 2}));
  Type five = tensorType({1, 1, 5, 5});
  auto ceilTwo =
      infer("aten.max_pool2d_with_indices", {&five},
            attrs({{"kernel_size", ints({2})}, {"stride", ints({2})}, {"ceil_mode", true}}));
  EXPECT_EQ(shapeOf(ceilTwo), (Shape{1, 1, 3, 3})); // the last window covers row 4 alone
}

TEST(MaxPool, SymbolicCeilModeWithOverlappingWindows) {
  Type input = tensorType({2, sym("s0"), sym("s1")});
  auto types =
      infer("aten.max_pool2d_with_indices", {&input},
            attrs({{"kernel_size", ints({3})}, {"stride", ints({2})}, {"ceil_mode", true}}));
  Shape s = shapeOf(types);
  ASSERT_EQ(s.size(), 3u);
  for (int64_t h : {5, 6, 7, 8}) // ceil((h - 3) / 2) + 1
    EXPECT_EQ(s[2].evaluate({{"s1", h}}), (h - 3 + 1) / 2 + 1) << h;
}

TEST(MaxPool, RejectsUndecidableSymbolicCeilModeAndBadRanks) {
  Type input = tensorType({1, 1, sym("s0"), 8});
  try {
    infer("aten.max_pool2d_with_indices", {&input},
          attrs({{"kernel_size", ints({1})}, {"stride", ints({3})}, {"ceil_mode", true}}));
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "shape");
    EXPECT_NE(e.message().find("s0"), std::string::npos) << e.message();
  }
  Type flat = tensorType({4, 4});
  EXPECT_THROW(infer("aten.max_pool2d_with_indices", {&flat}, attrs({{"kernel_size", ints({2})}})),
               Error);
  Type big = tensorType({1, 1, 4, 4});
  EXPECT_THROW(infer("aten.max_pool2d_with_indices", {&big},
                     attrs({{"kernel_size", ints({2})}, {"padding", ints({2})}})),
               Error);
}

TEST(MaxPool, ValuesAndFlatPlaneIndices) {
  Tensor x = tensor({1, 1, 4, 4}, {1, 9, 2, 3,  //
                                   4, 0, 8, 7,  //
                                   5, 6, 15, 1, //
                                   2, 3, 4, 0});
  auto out = run("aten.max_pool2d_with_indices", {&x}, attrs({{"kernel_size", ints({2, 2})}}));
  EXPECT_EQ(out[0].toDoubles(), (Doubles{9, 8, 6, 15}));
  EXPECT_EQ(out[1].toDoubles(), (Doubles{1, 6, 9, 10}));
}

TEST(MaxPool, PaddingNeverWinsAndNaNPropagates) {
  Tensor x = tensor({1, 2, 2}, {-5, -6, -7, NAN});
  auto out =
      run("aten.max_pool2d_with_indices", {&x},
          attrs({{"kernel_size", ints({2})}, {"stride", ints({2})}, {"padding", ints({1})}}));
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(out[0].toDoubles()[0], -5); // the window holds padding and -5 only
  EXPECT_TRUE(std::isnan(out[0].toDoubles()[3]));
  EXPECT_EQ(out[1].toDoubles(), (Doubles{0, 1, 2, 3}));
}

TEST(MaxPool, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({2, 2, 5, 6}, 1);
  AttrMap a = attrs({{"kernel_size", ints({3, 2})},
                     {"stride", ints({2, 1})},
                     {"padding", ints({1, 1})},
                     {"dilation", ints({1, 2})},
                     {"ceil_mode", true}});
  auto forward = run("aten.max_pool2d_with_indices", {&x}, a);
  Tensor upstream = randomTensor(forward[0].shape(), 2);
  auto grad = run("aten.max_pool2d_with_indices_backward", {&upstream, &x, &forward[1]}, a);
  expectGradientMatches(
      grad[0],
      [&](const Doubles& v) {
        Tensor t = tensor(x.shape(), v);
        return run("aten.max_pool2d_with_indices", {&t}, a)[0].toDoubles();
      },
      x, upstream, "max_pool2d grad_input");
}

TEST(AvgPool, PaddingCountsAndDivisorOverride) {
  Tensor x = tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  AttrMap base = attrs({{"kernel_size", ints({2})}, {"stride", ints({2})}, {"padding", ints({1})}});
  EXPECT_EQ(run("aten.avg_pool2d", {&x}, base)[0].toDoubles(), (Doubles{0.25, 1.25, 2.75, 7}));
  AttrMap excludePad = base;
  excludePad.set("count_include_pad", false);
  EXPECT_EQ(run("aten.avg_pool2d", {&x}, excludePad)[0].toDoubles(), (Doubles{1, 2.5, 5.5, 7}));
  AttrMap divisor = base;
  divisor.set("divisor_override", SymExpr(2));
  EXPECT_EQ(run("aten.avg_pool2d", {&x}, divisor)[0].toDoubles(), (Doubles{0.5, 2.5, 5.5, 14}));
}

TEST(AvgPool, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({2, 3, 5, 4}, 3);
  for (bool includePad : {true, false}) {
    AttrMap a = attrs({{"kernel_size", ints({3, 2})},
                       {"stride", ints({2, 2})},
                       {"padding", ints({1, 1})},
                       {"ceil_mode", true},
                       {"count_include_pad", includePad},
                       {"divisor_override", NoneAttr{}}});
    auto forward = run("aten.avg_pool2d", {&x}, a);
    Tensor upstream = randomTensor(forward[0].shape(), 4);
    auto grad = run("aten.avg_pool2d_backward", {&upstream, &x}, a);
    expectGradientMatches(
        grad[0],
        [&](const Doubles& v) {
          Tensor t = tensor(x.shape(), v);
          return run("aten.avg_pool2d", {&t}, a)[0].toDoubles();
        },
        x, upstream, includePad ? "avg_pool2d include pad" : "avg_pool2d exclude pad");
  }
}

TEST(AvgPool, BackwardChecksGradOutputShape) {
  Type grad = tensorType({1, 1, 3, 3});
  Type input = tensorType({1, 1, 4, 4});
  EXPECT_THROW(infer("aten.avg_pool2d_backward", {&grad, &input},
                     attrs({{"kernel_size", ints({2})},
                            {"stride", ints({2})},
                            {"padding", ints({0})},
                            {"ceil_mode", false},
                            {"count_include_pad", true},
                            {"divisor_override", NoneAttr{}}})),
               Error);
}

TEST(AdaptiveAvgPool, OverlappingCellsAndSymbolicOutputSize) {
  Tensor x = tensor({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  // Cells cover [0,2), [1,4), [3,5).
  auto out = run("aten._adaptive_avg_pool2d", {&x}, attrs({{"output_size", ints({1, 3})}}));
  EXPECT_EQ(out[0].toDoubles(), (Doubles{1.5, 3, 4.5}));

  Type input = tensorType({sym("s0"), 8, sym("s1"), sym("s1")});
  auto types =
      infer("aten._adaptive_avg_pool2d", {&input}, attrs({{"output_size", IntList{sym("s2"), 1}}}));
  EXPECT_EQ(shapeOf(types), (Shape{sym("s0"), 8, sym("s2"), 1}));
  EXPECT_THROW(infer("aten._adaptive_avg_pool2d", {&input}, attrs({{"output_size", ints({2})}})),
               Error);
}

TEST(AdaptiveAvgPool, BackwardMatchesFiniteDifferences) {
  Tensor x = randomTensor({2, 7, 5}, 5); // unbatched [C, H, W]
  AttrMap a = attrs({{"output_size", ints({3, 4})}});
  auto forward = run("aten._adaptive_avg_pool2d", {&x}, a);
  Tensor upstream = randomTensor(forward[0].shape(), 6);
  auto grad = run("aten._adaptive_avg_pool2d_backward", {&upstream, &x});
  expectGradientMatches(
      grad[0],
      [&](const Doubles& v) {
        Tensor t = tensor(x.shape(), v);
        return run("aten._adaptive_avg_pool2d", {&t}, a)[0].toDoubles();
      },
      x, upstream, "adaptive_avg_pool2d grad_input");
}

} // namespace
} // namespace loupe::testing
