// The embedding, embedding backward and cat library kernels against their references, in check
// mode: negative and repeated indices, strided weights and inputs, several dtypes.
#include <gtest/gtest.h>

#include <string>

#include "compiler/codegen/cpu/library_kernels.h"
#include "compiler/ir/error.h"

#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

// Indices in [-5, 5]: negative ones count from the end, and 11 of them over fewer rows repeat.
Tensor indices(const std::vector<int64_t>& shape, unsigned seed) {
  return randomTensor(DType::I64, shape, seed);
}

class EmbeddingKernel : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingKernel, LooksUpRowsOfAContiguousOrStridedWeight) {
  for (bool strided : {false, true}) {
    std::vector<int64_t> weightShape = {11, 6};
    Tensor weight = strided ? transposedRandom(GetParam(), weightShape, 1)
                            : randomTensor(GetParam(), weightShape, 1);
    std::vector<Tensor> inputs = {weight, indices({3, 4}, 2)};
    auto graph = singleOp("aten.embedding", typesOf(inputs), AttrMap());
    KernelStats stats = runLibraryKernel(*graph, "aten.embedding", inputs);
    EXPECT_EQ(stats.implementation, "library:aten.embedding");
    EXPECT_EQ(stats.maxAbsError, 0.0) << (strided ? "strided" : "contiguous");
  }
}

TEST_P(EmbeddingKernel, RejectsAnOutOfRangeIndexNamingIt) {
  std::vector<Tensor> inputs = {randomTensor(GetParam(), {4, 3}, 1),
                                Tensor::zeros(DType::I64, {2})};
  inputs[1].set(1, 4);
  auto graph = singleOp("aten.embedding", typesOf(inputs), AttrMap());
  try {
    runLibraryKernel(*graph, "aten.embedding", inputs);
    FAIL() << "index 4 of 4 rows was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("index 4 is out of range for a dim of size 4"),
              std::string::npos)
        << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, EmbeddingKernel, ::testing::Values(DType::F32, DType::F64),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

struct EmbeddingBackwardCase {
  std::string name;
  DType dtype;
  int64_t paddingIdx;
  bool scaleByFrequency;
};

class EmbeddingBackwardKernel : public ::testing::TestWithParam<EmbeddingBackwardCase> {};

TEST_P(EmbeddingBackwardKernel, SumsGradientRowsPerIndex) {
  const EmbeddingBackwardCase& form = GetParam();
  std::vector<Tensor> inputs = {transposedRandom(form.dtype, {3, 5, 7}, 1), indices({3, 5}, 2)};
  AttrMap attrs;
  attrs.set("num_weights", SymExpr(9));
  attrs.set("padding_idx", SymExpr(form.paddingIdx));
  attrs.set("scale_grad_by_freq", form.scaleByFrequency);
  auto graph = singleOp("aten.embedding_dense_backward", typesOf(inputs), attrs);
  KernelStats stats = runLibraryKernel(*graph, "aten.embedding_dense_backward", inputs);
  EXPECT_EQ(stats.implementation, "library:aten.embedding_dense_backward");
  EXPECT_LT(stats.maxAbsError, form.dtype == DType::F32 ? 1e-5 : 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, EmbeddingBackwardKernel,
    ::testing::Values(EmbeddingBackwardCase{"plain_f32", DType::F32, -1, false},
                      EmbeddingBackwardCase{"padding_f64", DType::F64, 2, false},
                      EmbeddingBackwardCase{"by_frequency_f32", DType::F32, 0, true}),
    [](const auto& info) { return info.param.name; });

class CatKernel : public ::testing::TestWithParam<DType> {};

TEST_P(CatKernel, JoinsContiguousStridedAndSkippedInputsExactly) {
  DType dtype = GetParam();
  for (int64_t dim : {0, 1, -1}) {
    std::vector<int64_t> first = {4, 3, 5}, second = {4, 3, 5};
    size_t d = static_cast<size_t>(dim < 0 ? dim + 3 : dim);
    second[d] = 2;
    // A legacy empty 1-d tensor between them is skipped.
    std::vector<Tensor> inputs = {randomTensor(dtype, first, 1), Tensor::zeros(dtype, {0}),
                                  transposedRandom(dtype, second, 2)};
    AttrMap attrs;
    attrs.set("dim", SymExpr(dim));
    auto graph = singleOp("aten.cat", typesOf(inputs), attrs);
    KernelStats stats = runLibraryKernel(*graph, "aten.cat", inputs);
    EXPECT_EQ(stats.implementation, "library:aten.cat");
    EXPECT_EQ(stats.maxAbsError, 0.0) << "dim " << dim;
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, CatKernel,
                         ::testing::Values(DType::F32, DType::F64, DType::I64, DType::F16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

TEST(CatKernelChoice, MixedDTypesKeepTheReference) {
  auto graph = singleOp(
      "aten.cat", {tensorType(DType::F32, {2, 3}), tensorType(DType::I64, {2, 3})}, AttrMap());
  std::string whyNot;
  EXPECT_FALSE(hasCpuLibraryKernel(*graph->nodes().front(), &whyNot));
  EXPECT_EQ(whyNot, "cat converts operand 1 to the result's dtype");
}

// Fills and view backwards run their registry implementation under a library kernel's name: the
// trace says "fill" or "view-backward", and the values are exact in every dtype.
TEST(FillKernel, ConstantFactoryOpsAreFillsInTheirOwnDType) {
  for (DType dtype : {DType::F32, DType::I64, DType::F16, DType::Bool}) {
    SCOPED_TRACE(dtypeName(dtype));
    AttrMap attrs;
    attrs.set("fill_value", 1.0);
    Tensor self = Tensor::zeros(dtype, {37, 5});
    auto graph = singleOp("aten.full_like", {tensorType(dtype, {37, 5})}, attrs);
    std::optional<CpuLibraryKernel> kernel = findCpuLibraryKernel(*graph->nodes().front(), nullptr);
    ASSERT_TRUE(kernel);
    EXPECT_EQ(kernel->implementation, "fill");
    std::vector<Tensor> out = libraryExecutable(*graph, "aten.full_like")->run({self});
    EXPECT_EQ(out[0].dtype(), dtype);
    EXPECT_EQ(out[0].toDoubles(), std::vector<double>(37 * 5, 1.0));
  }
  // A constant's elements are its data; arange's differ: each stays the registry's reference.
  AttrMap data;
  data.set("data", std::vector<double>{0.0, 1.0, 2.0});
  data.set("dtype", DType::F32);
  data.set("shape", IntList{SymExpr(3)});
  auto constant = singleOp("loupe.constant", {}, data);
  EXPECT_FALSE(hasCpuLibraryKernel(*constant->nodes().front(), nullptr));
  AttrMap range;
  range.set("end", SymExpr(8));
  auto arange = singleOp("aten.arange", {}, range);
  EXPECT_FALSE(hasCpuLibraryKernel(*arange->nodes().front(), nullptr));
}

TEST(FillKernel, SliceAndSelectBackwardWriteGradOutputIntoZeros) {
  Tensor grad = transposedRandom(DType::F32, {4, 3}, 5); // a strided grad_output
  AttrMap select;
  select.set("input_sizes", IntList{SymExpr(4), SymExpr(2), SymExpr(3)});
  select.set("dim", SymExpr(1));
  select.set("index", SymExpr(1));
  auto graph = singleOp("aten.select_backward", {tensorType(DType::F32, {4, 3})}, select);
  EXPECT_EQ(findCpuLibraryKernel(*graph->nodes().front(), nullptr)->implementation,
            "view-backward");
  Tensor out = libraryExecutable(*graph, "aten.select_backward")->run({grad})[0];
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(out.at(i * 6 + j), 0.0);
      EXPECT_EQ(out.at(i * 6 + 3 + j), grad.at(i * 3 + j));
    }
  AttrMap slice;
  slice.set("input_sizes", IntList{SymExpr(4), SymExpr(7)});
  slice.set("dim", SymExpr(1));
  slice.set("start", SymExpr(1));
  slice.set("end", SymExpr(7));
  slice.set("step", SymExpr(2));
  auto sliced = singleOp("aten.slice_backward", {tensorType(DType::F32, {4, 3})}, slice);
  KernelStats stats = runLibraryKernel(*sliced, "aten.slice_backward", {grad});
  EXPECT_EQ(stats.maxAbsError, 0.0);
  Tensor written = libraryExecutable(*sliced, "aten.slice_backward")->run({grad})[0];
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 7; ++j)
      EXPECT_EQ(written.at(i * 7 + j), j % 2 == 1 ? grad.at(i * 3 + j / 2) : 0.0);
}

} // namespace
} // namespace loupe::testing
