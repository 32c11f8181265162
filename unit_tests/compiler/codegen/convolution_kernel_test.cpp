// 2-D convolution's library kernels (oneDNN for f32 where built in, im2col+gemm otherwise and for
// f64), and 1-D convolution through them, against the float64 reference, forward and backward,
// plain and transposed, over strides, padding, output padding, dilation, groups and odd sizes;
// and what kernel selection says about each.
#include <gtest/gtest.h>

#include <omp.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/codegen/cpu/library/parallel_gemm.h"
#include "compiler/codegen/cpu/library_kernels.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

struct ConvolutionCase {
  std::string name;
  std::vector<int64_t> input, weight;
  int64_t stride, padding, dilation, groups;
  BoolList mask;           // the backward's output_mask
  bool transposed = false; // then weight is [C_in, C_out / groups, kh, kw]
  int64_t outputPadding = 0;

  int64_t outputChannels() const { return transposed ? weight[1] * groups : weight[0]; }
};

AttrMap convolutionAttrs(const ConvolutionCase& form) {
  AttrMap attrs;
  attrs.set("stride", IntList{SymExpr(form.stride)});
  attrs.set("padding", IntList{SymExpr(form.padding)});
  attrs.set("dilation", IntList{SymExpr(form.dilation)});
  attrs.set("transposed", form.transposed);
  attrs.set("output_padding", IntList{SymExpr(form.outputPadding)});
  attrs.set("groups", SymExpr(form.groups));
  return attrs;
}

// `form` as a transposed convolution (its weight read as [C_in, C_out / groups, kh, kw]).
ConvolutionCase asTransposed(ConvolutionCase form, int64_t outputPadding = 0) {
  form.transposed = true;
  form.outputPadding = outputPadding;
  return form;
}

TensorType typeOf(DType dtype, const std::vector<int64_t>& shape) {
  return tensorType(dtype, Shape(shape.begin(), shape.end()));
}

// The forward's output shape, from the registry's inference.
std::vector<int64_t> outputShape(const ConvolutionCase& form) {
  auto graph = singleOp("aten.convolution",
                        {typeOf(DType::F32, form.input), typeOf(DType::F32, form.weight)},
                        convolutionAttrs(form));
  std::vector<int64_t> out;
  for (const SymExpr& d : graph->outputs()[0]->tensorType().shape)
    out.push_back(*d.constant());
  return out;
}

class ConvolutionLibraryKernel
    : public ::testing::TestWithParam<std::tuple<ConvolutionCase, DType>> {
protected:
  const ConvolutionCase& form() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  // f32 sums of a few hundred products against the double reference.
  double tolerance() const { return dtype() == DType::F32 ? 1e-4 : 1e-10; }
};

TEST_P(ConvolutionLibraryKernel, ForwardWithBiasMatchesTheReference) {
  // The input arrives transposed in memory, a strided view.
  std::vector<Tensor> inputs = {transposedRandom(dtype(), form().input, 1),
                                randomTensor(dtype(), form().weight, 2),
                                randomTensor(dtype(), {form().outputChannels()}, 3)};
  auto graph = singleOp("aten.convolution", typesOf(inputs), convolutionAttrs(form()));
  KernelStats stats = runLibraryKernel(*graph, "aten.convolution", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.convolution");
  EXPECT_LT(stats.maxAbsError, tolerance());
}

TEST_P(ConvolutionLibraryKernel, BackwardMatchesTheReference) {
  AttrMap attrs = convolutionAttrs(form());
  attrs.set("bias_sizes", IntList{SymExpr(form().outputChannels())});
  attrs.set("output_mask", form().mask);
  // grad_output arrives transposed in memory, as autograd often hands it over.
  std::vector<Tensor> inputs = {transposedRandom(dtype(), outputShape(form()), 1),
                                randomTensor(dtype(), form().input, 2),
                                randomTensor(dtype(), form().weight, 3)};
  auto graph = singleOp("aten.convolution_backward", typesOf(inputs), attrs);
  KernelStats stats = runLibraryKernel(*graph, "aten.convolution_backward", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.convolution_backward");
  EXPECT_LT(stats.maxAbsError, tolerance());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvolutionLibraryKernel,
    ::testing::Combine(
        ::testing::Values(
            ConvolutionCase{"plain", {2, 3, 8, 8}, {4, 3, 3, 3}, 1, 1, 1, 1, {true, true, true}},
            ConvolutionCase{
                "strided_odd", {3, 4, 9, 7}, {6, 2, 3, 2}, 2, 1, 1, 2, {true, true, true}},
            ConvolutionCase{
                "dilated", {1, 2, 11, 10}, {3, 2, 3, 3}, 1, 2, 2, 1, {true, true, false}},
            // The last window stops short of the input's end (oneDNN's negative right padding).
            ConvolutionCase{
                "strided_unpadded", {2, 5, 10, 9}, {7, 5, 3, 3}, 2, 0, 1, 1, {true, true, true}},
            ConvolutionCase{
                "depthwise", {2, 6, 7, 8}, {6, 1, 3, 3}, 1, 1, 1, 6, {true, true, true}},
            ConvolutionCase{
                "weight_only", {2, 3, 5, 6}, {5, 3, 1, 1}, 1, 0, 1, 1, {false, true, true}},
            ConvolutionCase{
                "bias_only", {2, 3, 6, 5}, {4, 3, 2, 2}, 1, 0, 1, 1, {false, false, true}},
            ConvolutionCase{
                "input_only", {1, 8, 12, 12}, {16, 4, 5, 5}, 3, 2, 1, 2, {true, false, false}},
            // Depthwise, with a channel multiplier of 2, strided and dilated.
            ConvolutionCase{
                "depthwise_x2", {2, 3, 9, 8}, {6, 1, 3, 3}, 2, 1, 2, 3, {true, true, true}},
            // 1x1 with stride 1 and no padding: one gemm per image on the input as it is.
            ConvolutionCase{
                "pointwise_grouped", {2, 8, 7, 9}, {6, 4, 1, 1}, 1, 0, 1, 2, {true, true, true}},
            // Transposed (tr_): a U-Net's 2x upsampling, then padding, output padding, dilation
            // and groups, and the weight's gradient alone.
            asTransposed(
                {"tr_upsampling", {2, 6, 5, 7}, {6, 4, 2, 2}, 2, 0, 1, 1, {true, true, true}}),
            asTransposed({"tr_padded", {2, 4, 6, 5}, {4, 3, 3, 3}, 2, 1, 1, 1, {true, true, true}},
                         1),
            asTransposed(
                {"tr_grouped", {1, 6, 7, 6}, {6, 2, 3, 2}, 1, 2, 2, 3, {true, true, false}}),
            asTransposed({"tr_weight", {2, 3, 4, 4}, {3, 5, 3, 3}, 3, 1, 1, 1, {false, true, true}},
                         2),
            // 1-D (conv1d, ConvTranspose1d): run as 2-D over a unit height. An audio model's
            // strided feature extractor, then groups with dilation, depthwise, pointwise.
            ConvolutionCase{
                "conv1d_strided", {2, 3, 17}, {4, 3, 5}, 2, 1, 1, 1, {true, true, true}},
            ConvolutionCase{
                "conv1d_grouped_dilated", {2, 4, 15}, {6, 2, 3}, 1, 2, 2, 2, {true, true, false}},
            ConvolutionCase{
                "conv1d_depthwise", {2, 6, 12}, {6, 1, 3}, 1, 1, 1, 6, {true, true, true}},
            ConvolutionCase{
                "conv1d_pointwise", {2, 8, 9}, {4, 8, 1}, 1, 0, 1, 1, {false, true, true}},
            asTransposed({"tr_conv1d", {2, 6, 7}, {6, 4, 4}, 2, 1, 1, 1, {true, true, true}}, 1)),
        ::testing::Values(DType::F32, DType::F64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtypeName(std::get<1>(info.param)));
    });

std::optional<CpuLibraryKernel> convolutionKernel(const std::string& op, DType dtype) {
  ConvolutionCase form{"", {1, 2, 4, 4}, {3, 2, 3, 3}, 1, 1, 1, 1, {true, true, true}};
  AttrMap attrs = convolutionAttrs(form);
  std::vector<TensorType> types = {typeOf(dtype, form.input), typeOf(dtype, form.weight)};
  if (op == "aten.convolution_backward") {
    attrs.set("bias_sizes", IntList{SymExpr(3)});
    attrs.set("output_mask", form.mask);
    types.insert(types.begin(), typeOf(dtype, outputShape(form)));
  }
  auto graph = singleOp(op, types, attrs);
  return findCpuLibraryKernel(*graph->nodes().front(), nullptr);
}

// f32 runs on oneDNN where the build has it; f64, and every convolution of a build without it,
// on im2col+gemm, and the reason says which of the two kept oneDNN out.
TEST(ConvolutionLibraryKernelChoice, OneDnnForF32WhereBuiltInElseIm2col) {
  for (const char* op : {"aten.convolution", "aten.convolution_backward"}) {
    std::string suffix = std::string(op) == "aten.convolution" ? "" : "-backward";
    std::optional<CpuLibraryKernel> f32 = convolutionKernel(op, DType::F32);
    std::optional<CpuLibraryKernel> f64 = convolutionKernel(op, DType::F64);
    ASSERT_TRUE(f32 && f64) << op;
    if (cpuLibraryHasOneDnn()) {
      EXPECT_EQ(f32->implementation, "onednn:convolution" + suffix);
      EXPECT_NE(f32->reason.find("im2col+gemm"), std::string::npos) << f32->reason;
      EXPECT_NE(f64->reason.find("oneDNN has no f64 convolution"), std::string::npos);
    } else {
      EXPECT_NE(f32->reason.find("oneDNN not built in"), std::string::npos) << f32->reason;
    }
    for (const auto& im2col : cpuLibraryHasOneDnn() ? std::vector{f64} : std::vector{f32, f64})
      EXPECT_EQ(im2col->implementation, suffix.empty() ? "im2col+gemm" : "im2col+gemm backward");
  }
}

// A 1x1 convolution with stride 1 and no padding is a gemm per image whatever the build has; a
// strided or padded one is not.
// What kernel selection picks for the forward of `form` in f32.
std::optional<CpuLibraryKernel> forwardKernelFor(const ConvolutionCase& form) {
  auto graph = singleOp("aten.convolution",
                        {typeOf(DType::F32, form.input), typeOf(DType::F32, form.weight)},
                        convolutionAttrs(form));
  return findCpuLibraryKernel(*graph->nodes().front(), nullptr);
}

TEST(ConvolutionLibraryKernelChoice, DepthwiseConvolutionHasItsOwnLoop) {
  std::optional<CpuLibraryKernel> kernel =
      forwardKernelFor({"", {2, 6, 7, 7}, {6, 1, 3, 3}, 1, 1, 1, 6, {true, true, true}});
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->implementation, "depthwise:f32");
}

// A 1x1 convolution with stride 1 and no padding is a gemm per image whatever the build has; a
// strided or padded one is not.
TEST(ConvolutionLibraryKernelChoice, PointwiseConvolutionIsAGemmPerImage) {
  std::optional<CpuLibraryKernel> kernel =
      forwardKernelFor({"", {2, 8, 5, 5}, {4, 8, 1, 1}, 1, 0, 1, 1, {true, true, true}});
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->implementation, "1x1-gemm");
  for (int64_t stride : {1, 2}) {
    kernel = forwardKernelFor(
        {"", {2, 8, 5, 5}, {4, 8, 1, 1}, stride, 2 - stride, 1, 1, {true, true, true}});
    ASSERT_TRUE(kernel);
    EXPECT_NE(kernel->implementation, "1x1-gemm") << "stride " << stride;
  }
}

// A 1-D convolution runs as the 2-D one (over a unit height): the same kernels. (The registry
// has no 3-D convolution: the frontend's fallback runs one.)
TEST(ConvolutionLibraryKernelChoice, OneDimensionalConvolutionRunsOnTheTwoDimensionalKernels) {
  std::optional<CpuLibraryKernel> oneD =
      forwardKernelFor({"", {2, 3, 17}, {4, 3, 5}, 2, 1, 1, 1, {true, true, true}});
  std::optional<CpuLibraryKernel> twoD =
      forwardKernelFor({"", {2, 3, 17, 17}, {4, 3, 5, 5}, 2, 1, 1, 1, {true, true, true}});
  ASSERT_TRUE(oneD && twoD);
  EXPECT_EQ(oneD->implementation, twoD->implementation);
  EXPECT_EQ(
      forwardKernelFor({"", {2, 6, 12}, {6, 1, 3}, 1, 1, 1, 6, {true, true, true}})->implementation,
      "depthwise:f32");
  EXPECT_EQ(
      forwardKernelFor({"", {2, 8, 9}, {4, 8, 1}, 1, 0, 1, 1, {true, true, true}})->implementation,
      "1x1-gemm");
}

// A convolution runs on the library's thread setting and leaves the caller's OpenMP setting as
// it was (oneDNN's parallel regions read it), at every setting.
TEST(ConvolutionLibraryKernelThreads, EveryThreadCountGivesTheReferenceAndKeepsOpenMpsSetting) {
  int callers = omp_get_max_threads();
  ConvolutionCase form{"", {4, 8, 12, 12}, {8, 8, 3, 3}, 1, 1, 1, 1, {true, true, true}};
  std::vector<Tensor> inputs = {randomTensor(DType::F32, form.input, 1),
                                randomTensor(DType::F32, form.weight, 2)};
  auto graph = singleOp("aten.convolution", typesOf(inputs), convolutionAttrs(form));
  for (int threads : {1, 2, 3}) {
    setCpuLibraryThreads(threads);
    KernelStats stats = runLibraryKernel(*graph, "aten.convolution", inputs);
    EXPECT_LT(stats.maxAbsError, 1e-4) << threads << " threads";
    EXPECT_EQ(omp_get_max_threads(), callers) << threads << " threads";
  }
  library::setGemmThreads(0); // back to OpenMP's default
}

} // namespace
} // namespace loupe::testing
