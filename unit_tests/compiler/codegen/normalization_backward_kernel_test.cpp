// The batch norm and layer norm backward library kernels against their double-precision
// references, in check mode: both dtypes, odd sizes, a strided gradient, masked-off results.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// f32 gradients sum a few hundred terms of magnitude ~4 each; f64 must be exact to rounding.
double tolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-3 : 1e-10;
}

// A per-channel or per-row statistic that must be positive (a variance or an inverse std).
Tensor positiveRandom(DType dtype, const std::vector<int64_t>& shape, unsigned seed) {
  Tensor t = randomTensor(dtype, shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, 0.25 + std::abs(t.at(i)));
  return t;
}

struct BatchNormBackwardCase {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  bool train;
  BoolList mask;
};

class BatchNormBackwardKernel : public ::testing::TestWithParam<BatchNormBackwardCase> {};

TEST_P(BatchNormBackwardKernel, MatchesTheReference) {
  const BatchNormBackwardCase& form = GetParam();
  std::vector<int64_t> channels = {form.shape[1]};
  std::vector<Tensor> inputs = {
      transposedRandom(form.dtype, form.shape, 1), randomTensor(form.dtype, form.shape, 2),
      randomTensor(form.dtype, channels, 3),       randomTensor(form.dtype, channels, 4),
      positiveRandom(form.dtype, channels, 5),     randomTensor(form.dtype, channels, 6),
      positiveRandom(form.dtype, channels, 7)};
  AttrMap attrs;
  attrs.set("train", form.train);
  attrs.set("eps", 1e-5);
  attrs.set("output_mask", form.mask);
  auto graph = singleOp("aten.native_batch_norm_backward", typesOf(inputs), attrs);
  KernelStats stats = runLibraryKernel(*graph, "aten.native_batch_norm_backward", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.native_batch_norm_backward");
  EXPECT_LT(stats.maxAbsError, tolerance(form.dtype));
}

INSTANTIATE_TEST_SUITE_P(
    Forms, BatchNormBackwardKernel,
    ::testing::Values(
        BatchNormBackwardCase{"train_f32", DType::F32, {3, 5, 7, 6}, true, {true, true, true}},
        BatchNormBackwardCase{"train_f64", DType::F64, {3, 5, 7, 6}, true, {true, true, true}},
        BatchNormBackwardCase{"infer_f32", DType::F32, {2, 4, 9}, false, {true, true, true}},
        BatchNormBackwardCase{"no_spatial_f64", DType::F64, {9, 4}, true, {true, true, true}},
        BatchNormBackwardCase{
            "input_grad_only", DType::F32, {2, 3, 5, 5}, true, {true, false, false}},
        BatchNormBackwardCase{"no_input_grad", DType::F64, {2, 3, 5, 5}, true, {false, true, true}},
        // Enough work to split the channels (an odd count) across the library's threads, in
        // planes of an odd size (a vector body and a tail at every width).
        BatchNormBackwardCase{"threaded_f32", DType::F32, {6, 7, 33, 29}, true, {true, true, true}},
        BatchNormBackwardCase{"threaded_f64", DType::F64, {6, 7, 33, 29}, true, {true, true, true}},
        BatchNormBackwardCase{
            "threaded_infer_f32", DType::F32, {5, 9, 31, 31}, false, {true, true, true}}),
    [](const auto& info) { return info.param.name; });

struct LayerNormBackwardCase {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  size_t normalizedDims;
  BoolList mask;
};

class LayerNormBackwardKernel : public ::testing::TestWithParam<LayerNormBackwardCase> {};

TEST_P(LayerNormBackwardKernel, MatchesTheReference) {
  const LayerNormBackwardCase& form = GetParam();
  size_t axis = form.shape.size() - form.normalizedDims;
  std::vector<int64_t> normalized(form.shape.begin() + static_cast<std::ptrdiff_t>(axis),
                                  form.shape.end());
  std::vector<int64_t> stats(form.shape.begin(),
                             form.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  stats.resize(form.shape.size(), 1);
  std::vector<Tensor> inputs = {
      transposedRandom(form.dtype, form.shape, 1), randomTensor(form.dtype, form.shape, 2),
      randomTensor(form.dtype, stats, 3),          positiveRandom(form.dtype, stats, 4),
      randomTensor(form.dtype, normalized, 5),     randomTensor(form.dtype, normalized, 6)};
  AttrMap attrs;
  IntList normalizedShape;
  for (int64_t d : normalized)
    normalizedShape.push_back(SymExpr(d));
  attrs.set("normalized_shape", normalizedShape);
  attrs.set("output_mask", form.mask);
  auto graph = singleOp("aten.native_layer_norm_backward", typesOf(inputs), attrs);
  KernelStats result = runLibraryKernel(*graph, "aten.native_layer_norm_backward", inputs);
  EXPECT_EQ(result.implementation, "library:aten.native_layer_norm_backward");
  EXPECT_LT(result.maxAbsError, tolerance(form.dtype));
}

INSTANTIATE_TEST_SUITE_P(
    Forms, LayerNormBackwardKernel,
    ::testing::Values(
        LayerNormBackwardCase{"last_dim_f32", DType::F32, {3, 5, 7}, 1, {true, true, true}},
        LayerNormBackwardCase{"last_dim_f64", DType::F64, {3, 5, 7}, 1, {true, true, true}},
        LayerNormBackwardCase{"two_dims_f32", DType::F32, {4, 5, 9}, 2, {true, true, true}},
        LayerNormBackwardCase{"affine_only_f64", DType::F64, {6, 11}, 1, {false, true, true}},
        LayerNormBackwardCase{"input_only_f32", DType::F32, {6, 11}, 1, {true, false, false}},
        // Enough rows to be split across the library's threads, each summing its own rows.
        LayerNormBackwardCase{"threaded_f32", DType::F32, {67, 509}, 1, {true, true, true}},
        LayerNormBackwardCase{"threaded_f64", DType::F64, {3, 37, 311}, 1, {true, true, true}},
        // 300 rows (split across two threads in the first, one thread in the second): several
        // blocks of rows whose weight and bias gradients are summed in f32 before the double
        // sums (library/normalization.h), and a shorter last block.
        LayerNormBackwardCase{"row_blocks_f32", DType::F32, {2, 150, 120}, 1, {true, true, true}},
        LayerNormBackwardCase{
            "affine_row_blocks_f32", DType::F32, {300, 40}, 1, {false, true, true}}),
    [](const auto& info) { return info.param.name; });

} // namespace
} // namespace loupe::testing
