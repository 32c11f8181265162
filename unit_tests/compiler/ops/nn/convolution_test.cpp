// aten.convolution and its backward, plain and transposed: symbolic output sizes, clear
// channel/rank errors, hand-computed values, and the backward reference against finite
// differences.
#include "compiler/ir/error.h"
#include "unit_tests/compiler/ops/nn/nn_test_support.h"

namespace loupe::testing {
namespace {

AttrMap convAttrs(IntList stride, IntList padding, IntList dilation, int64_t groups) {
  return attrs({{"stride", std::move(stride)},
                {"padding", std::move(padding)},
                {"dilation", std::move(dilation)},
                {"transposed", false},
                {"output_padding", ints({0})},
                {"groups", SymExpr(groups)}});
}

TEST(Convolution, SymbolicBatchAndSpatialDims) {
  Type input = tensorType({sym("s0"), 3, sym("s1"), sym("s1")});
  Type weight = tensorType({8, 3, 3, 3});
  Type bias = tensorType({8});
  auto types = infer("aten.convolution", {&input, &weight, &bias},
                     convAttrs(ints({2, 2}), ints({1, 1}), ints({1, 1}), 1));
  SymExpr spatial = SymExpr::floorDiv(sym("s1") - 1, 2) + 1;
  EXPECT_EQ(types[0].tensor().shape, (Shape{sym("s0"), 8, spatial, spatial}));
  EXPECT_EQ(spatial.evaluate({{"s1", 32}}), 16);
}

TEST(Convolution, OneDimensionalWithDilation) {
  Type input = tensorType({4, 2, sym("s0")});
  Type weight = tensorType({6, 2, 3});
  auto types = infer("aten.convolution", {&input, &weight, nullptr},
                     convAttrs(ints({1}), ints({0}), ints({2}), 1));
  EXPECT_EQ(types[0].tensor().shape, (Shape{4, 6, sym("s0") - 4}));
}

TEST(Convolution, ClearErrors) {
  Type input = tensorType({1, 4, 8, 8});
  Type weight = tensorType({6, 3, 3, 3});
  try {
    infer("aten.convolution", {&input, &weight, nullptr},
          convAttrs(ints({1}), ints({0}), ints({1}), 1));
    FAIL() << "expected a channel mismatch";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "shape");
    EXPECT_NE(e.message().find("channels"), std::string::npos) << e.message();
  }
  Type grouped = tensorType({6, 2, 3, 3});
  EXPECT_NO_THROW(infer("aten.convolution", {&input, &grouped, nullptr},
                        convAttrs(ints({1}), ints({0}), ints({1}), 2)));
  Type badOut = tensorType({5, 2, 3, 3});
  EXPECT_THROW(infer("aten.convolution", {&input, &badOut, nullptr},
                     convAttrs(ints({1}), ints({0}), ints({1}), 2)),
               Error);
  Type flat = tensorType({1, 4});
  EXPECT_THROW(infer("aten.convolution", {&flat, &weight, nullptr},
                     convAttrs(ints({1}), ints({0}), ints({1}), 1)),
               Error);
  Type wrongBias = tensorType({5});
  EXPECT_THROW(infer("aten.convolution", {&input, &grouped, &wrongBias},
                     convAttrs(ints({1}), ints({0}), ints({1}), 2)),
               Error);
  // Transposed, the weight's first dim counts the input's channels: [6, 2, 3, 3] wants 6.
  AttrMap transposed = convAttrs(ints({1}), ints({0}), ints({1}), 2);
  transposed.set("transposed", true);
  try {
    infer("aten.convolution", {&input, &grouped, nullptr}, transposed);
    FAIL() << "expected a channel mismatch";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("transposed weight"), std::string::npos) << e.message();
  }
  Type transposedWeight = tensorType({4, 3, 3, 3});
  transposed.set("output_padding", ints({1}));
  try {
    infer("aten.convolution", {&input, &transposedWeight, nullptr}, transposed);
    FAIL() << "expected output_padding 1 with stride 1 to be rejected";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("output_padding"), std::string::npos) << e.message();
  }
}

AttrMap transposedAttrs(IntList stride, IntList padding, IntList outputPadding, int64_t groups,
                        IntList dilation = ints({1})) {
  AttrMap a = convAttrs(std::move(stride), std::move(padding), std::move(dilation), groups);
  a.set("transposed", true);
  a.set("output_padding", std::move(outputPadding));
  return a;
}

// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1, and
// weight.shape[1] * groups channels.
TEST(Convolution, TransposedShapes) {
  Type input = tensorType({sym("s0"), 4, sym("s1"), 5});
  Type weight = tensorType({4, 3, 3, 3});
  auto types = infer("aten.convolution", {&input, &weight, nullptr},
                     transposedAttrs(ints({2}), ints({1}), ints({1}), 1));
  EXPECT_EQ(types[0].tensor().shape, (Shape{sym("s0"), 3, sym("s1") * 2, 10}));
  Type grouped = tensorType({4, 3, 2, 2});
  Type bias = tensorType({6});
  types = infer("aten.convolution", {&input, &grouped, &bias},
                transposedAttrs(ints({1}), ints({0}), ints({0}), 2, ints({2})));
  EXPECT_EQ(types[0].tensor().shape, (Shape{sym("s0"), 6, sym("s1") + 2, 7}));
  Type wrongBias = tensorType({4});
  EXPECT_THROW(infer("aten.convolution", {&input, &grouped, &wrongBias},
                     transposedAttrs(ints({1}), ints({0}), ints({0}), 2)),
               Error);
}

TEST(Convolution, TransposedHandComputedValues) {
  // Stride 2 and a 2x2 all-ones kernel spread each input element over its own 2x2 block.
  Tensor x = tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = tensor({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = tensor({1}, {10});
  auto out =
      run("aten.convolution", {&x, &w, &b}, transposedAttrs(ints({2}), ints({0}), ints({0}), 1));
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(out[0].toDoubles(),
            (Doubles{11, 11, 12, 12, 11, 11, 12, 12, 13, 13, 14, 14, 13, 13, 14, 14}));
  // Stride 1: overlapping blocks add up; padding 1 then crops the border.
  auto overlapped = run("aten.convolution", {&x, &w, nullptr},
                        transposedAttrs(ints({1}), ints({0}), ints({0}), 1));
  EXPECT_EQ(overlapped[0].toDoubles(), (Doubles{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  auto cropped = run("aten.convolution", {&x, &w, nullptr},
                     transposedAttrs(ints({1}), ints({1}), ints({0}), 1));
  EXPECT_EQ(cropped[0].toDoubles(), (Doubles{10}));
}

TEST(Convolution, HandComputedValues) {
  // 1x1x3x3 input, 2x2 all-ones kernel, padding 1, stride 2: sums of the clipped windows.
  Tensor x = tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = tensor({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = tensor({1}, {10});
  auto out = run("aten.convolution", {&x, &w, &b}, convAttrs(ints({2}), ints({1}), ints({1}), 1));
  EXPECT_EQ(out[0].toDoubles(), (Doubles{11, 15, 21, 38}));

  // Groups: each output channel sees only its own input channel.
  Tensor x2 = tensor({1, 2, 3}, {1, 2, 3, 10, 20, 30});
  Tensor w2 = tensor({2, 1, 2}, {1, -1, 2, 0});
  auto grouped =
      run("aten.convolution", {&x2, &w2, nullptr}, convAttrs(ints({1}), ints({0}), ints({1}), 2));
  EXPECT_EQ(grouped[0].toDoubles(), (Doubles{-1, -1, 20, 40}));
}

TEST(Convolution, BackwardMatchesFiniteDifferences) {
  struct Case {
    std::vector<int64_t> input, weight;
    AttrMap attrs;
    int64_t outputChannels;
  };
  std::vector<Case> cases = {
      {{2, 4, 6, 5}, {6, 2, 3, 2}, convAttrs(ints({2, 1}), ints({1, 1}), ints({1, 2}), 2), 6},
      {{2, 3, 9}, {4, 3, 3}, convAttrs(ints({2}), ints({2}), ints({2}), 1), 4},
      // Transposed: weight [C_in, C_out / groups, ...].
      {{2, 4, 3, 4},
       {4, 3, 3, 2},
       transposedAttrs(ints({2, 1}), ints({1, 0}), ints({1, 0}), 2, ints({1, 2})),
       6},
      {{1, 3, 5}, {3, 2, 3}, transposedAttrs(ints({3}), ints({1}), ints({2}), 1), 2},
  };
  unsigned seed = 10;
  for (const Case& c : cases) {
    Tensor x = randomTensor(c.input, seed++), w = randomTensor(c.weight, seed++);
    Tensor b = randomTensor({c.outputChannels}, seed++);
    Tensor upstream =
        randomTensor(run("aten.convolution", {&x, &w, &b}, c.attrs)[0].shape(), seed++);
    AttrMap backwardAttrs = c.attrs;
    backwardAttrs.set("bias_sizes", ints({c.outputChannels}));
    backwardAttrs.set("output_mask", BoolList{true, true, true});
    auto grads = run("aten.convolution_backward", {&upstream, &x, &w}, backwardAttrs);
    auto convWith = [&](const Tensor* input, const Tensor* weight, const Tensor* bias) {
      return run("aten.convolution", {input, weight, bias}, c.attrs)[0].toDoubles();
    };
    expectGradientMatches(
        grads[0],
        [&](const Doubles& v) {
          Tensor t = tensor(x.shape(), v);
          return convWith(&t, &w, &b);
        },
        x, upstream, "grad_input");
    expectGradientMatches(
        grads[1],
        [&](const Doubles& v) {
          Tensor t = tensor(w.shape(), v);
          return convWith(&x, &t, &b);
        },
        w, upstream, "grad_weight");
    expectGradientMatches(
        grads[2],
        [&](const Doubles& v) {
          Tensor t = tensor(b.shape(), v);
          return convWith(&x, &w, &t);
        },
        b, upstream, "grad_bias");
  }
}

TEST(Convolution, BackwardMaskedResultsAreZerosOfTheRightShape) {
  Tensor x = randomTensor({1, 2, 4, 4}, 20), w = randomTensor({3, 2, 3, 3}, 21);
  Tensor upstream = randomTensor({1, 3, 2, 2}, 22);
  AttrMap a = convAttrs(ints({1}), ints({0}), ints({1}), 1);
  a.set("bias_sizes", NoneAttr{});
  a.set("output_mask", BoolList{false, true, false});
  auto grads = run("aten.convolution_backward", {&upstream, &x, &w}, a);
  EXPECT_EQ(grads[0].toDoubles(), Doubles(32, 0.0));
  EXPECT_EQ(grads[2].shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(grads[2].toDoubles(), Doubles(3, 0.0));
  Type wrongGrad = tensorType({1, 3, 3, 3}), input = tensorType({1, 2, 4, 4}),
       weight = tensorType({3, 2, 3, 3});
  EXPECT_THROW(infer("aten.convolution_backward", {&wrongGrad, &input, &weight}, a), Error);
}

// aot_autograd passes bias_sizes=[0] for a convolution without bias; any other mismatch is an
// error.
TEST(Convolution, BackwardAcceptsBiasSizesZeroForNoBias) {
  AttrMap a = convAttrs(ints({1}), ints({0}), ints({1}), 1);
  a.set("output_mask", BoolList{true, true, false});
  Type grad = tensorType({1, 3, 2, 2}), input = tensorType({1, 2, 4, 4}),
       weight = tensorType({3, 2, 3, 3});
  a.set("bias_sizes", ints({0}));
  auto types = infer("aten.convolution_backward", {&grad, &input, &weight}, a);
  EXPECT_EQ(types[2], tensorType({3}));
  a.set("bias_sizes", ints({5}));
  EXPECT_THROW(infer("aten.convolution_backward", {&grad, &input, &weight}, a), Error);
}

// torch allocates the gradients row-major whatever the layout of the convolution's input (a
// channels-last input is common after a permute); inferring the input's layout instead made
// every such backward graph fail verification and run eagerly.
TEST(Convolution, BackwardGradientsAreRowMajorForAChannelsLastInput) {
  AttrMap a = convAttrs(ints({1}), ints({0}), ints({1}), 1);
  a.set("bias_sizes", ints({3}));
  a.set("output_mask", BoolList{true, true, true});
  Type grad = tensorType({2, 3, 2, 2}), weight = tensorType({3, 4, 3, 3});
  TensorType channelsLast = tensorType({2, 4, 4, 4}).tensor();
  channelsLast.strides = Shape{64, 1, 16, 4};
  Type input = channelsLast;
  auto types = infer("aten.convolution_backward", {&grad, &input, &weight}, a);
  EXPECT_EQ(types[0], tensorType({2, 4, 4, 4}));
  EXPECT_EQ(types[1], tensorType({3, 4, 3, 3}));
}

} // namespace
} // namespace loupe::testing
