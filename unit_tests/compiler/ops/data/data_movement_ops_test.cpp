// Data movement ops: shape inference (symbolic dims included), hand-computed small cases, and
// the backward ops checked as adjoints of their forward ops with random tensors.
#include <cstdint>
#include <random>

#include "unit_tests/compiler/ops/data/op_test_support.h"

namespace loupe {
namespace {

using namespace loupe::testing;

using Values = std::vector<double>;

TEST(DataMovementInference, CatSumsTheJoinedDim) {
  SymExpr s0 = sym("s0");
  SymExpr s1 = sym("s1");
  EXPECT_EQ(
      inferOne("aten.cat", {tensorType({s0, 4}), tensorType({s1, 4}), tensorType({3, 4})}).str(),
      "f32[s0 + s1 + 3,4]");
  EXPECT_EQ(inferOne("aten.cat", {tensorType({s0, 4}), tensorType({s0, 2})},
                     attrs({{"dim", SymExpr(-1)}}))
                .str(),
            "f32[s0,6]");
  // Legacy empty 1-d tensors are skipped; dtypes promote.
  EXPECT_EQ(
      inferOne("aten.cat", {tensorType({0}), tensorType({2, s0}, DType::I32), tensorType({1, s0})})
          .str(),
      "f32[3,s0]");
  std::string message = errorMessage([&] {
    inferOne("aten.cat", {tensorType({2, 4}), tensorType({2, 5})});
  });
  EXPECT_NE(message.find("tensor 1"), std::string::npos) << message;
  EXPECT_EQ(inferOne("aten.stack", {tensorType({s0, 4}), tensorType({s0, 4})},
                     attrs({{"dim", SymExpr(1)}}))
                .str(),
            "f32[s0,2,4]");
  errorMessage([&] { inferOne("aten.stack", {tensorType({s0}), tensorType({s1})}); });
}

TEST(DataMovementInference, ResultsAreContiguous) {
  SymExpr s0 = sym("s0");
  TensorType transposed = tensorType({4, s0}, DType::F16, Shape{1, 4});
  EXPECT_EQ(inferOne("aten.clone", {transposed}).str(), "f16[4,s0]");
  EXPECT_EQ(inferOne("aten.lift_fresh_copy", {transposed}).str(), "f16[4,s0]");
  EXPECT_EQ(inferOne("aten.copy", {tensorType({s0, 3}), tensorType({3}, DType::F64)}).str(),
            "f32[s0,3]");
  errorMessage([&] { inferOne("aten.copy", {tensorType({3}), tensorType({2, 3})}); });
}

TEST(DataMovementInference, IndexingOps) {
  SymExpr s0 = sym("s0");
  SymExpr s1 = sym("s1");
  TensorType index = tensorType({s1}, DType::I64);
  EXPECT_EQ(
      inferOne("aten.index_select", {tensorType({s0, 8}), index}, attrs({{"dim", SymExpr(0)}}))
          .str(),
      "f32[s1,8]");
  EXPECT_EQ(inferOne("aten.gather", {tensorType({s0, 8}), tensorType({s0, 2}, DType::I64)},
                     attrs({{"dim", SymExpr(1)}}))
                .str(),
            "f32[s0,2]");
  EXPECT_EQ(inferOne("aten.scatter_add",
                     {tensorType({s0, 8}), tensorType({s0, 2}, DType::I64), tensorType({s0, 2})},
                     attrs({{"dim", SymExpr(1)}}))
                .str(),
            "f32[s0,8]");
  EXPECT_EQ(
      inferOne("aten.embedding", {tensorType({1000, 64}), tensorType({s0, 7}, DType::I64)}).str(),
      "f32[s0,7,64]");
  EXPECT_EQ(inferOne("aten.embedding_dense_backward",
                     {tensorType({s0, 7, 64}), tensorType({s0, 7}, DType::I64)},
                     attrs({{"num_weights", SymExpr(1000)},
                            {"padding_idx", SymExpr(-1)},
                            {"scale_grad_by_freq", false}}))
                .str(),
            "f32[1000,64]");
  std::string message = errorMessage(
      [&] {
        inferOne("aten.index_select", {tensorType({4}), tensorType({2})},
                 attrs({{"dim", SymExpr(0)}}));
      },
      "dtype");
  EXPECT_NE(message.find("index"), std::string::npos) << message;
  errorMessage([&] {
    inferOne("aten.embedding", {tensorType({10}), tensorType({3}, DType::I64)});
  });
}

TEST(DataMovementInference, PaddingAndViewBackward) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(
      inferOne("aten.constant_pad_nd", {tensorType({s0, 4})}, attrs({{"pad", IntList{1, 1, 2, 0}}}))
          .str(),
      "f32[s0 + 2,6]");
  EXPECT_EQ(
      inferOne("aten.constant_pad_nd", {tensorType({3, 4})}, attrs({{"pad", IntList{-1, -2}}}))
          .str(),
      "f32[3,1]");
  errorMessage([&] {
    inferOne("aten.constant_pad_nd", {tensorType({3})}, attrs({{"pad", IntList{-2, -2}}}));
  });
  errorMessage([&] {
    inferOne("aten.constant_pad_nd", {tensorType({3})}, attrs({{"pad", IntList{1}}}));
  });

  EXPECT_EQ(inferOne("aten.slice_backward", {tensorType({s0 - 1, 4})},
                     attrs({{"input_sizes", IntList{s0, 4}},
                            {"dim", SymExpr(0)},
                            {"start", SymExpr(1)},
                            {"end", SymExpr(INT64_MAX)},
                            {"step", SymExpr(1)}}))
                .str(),
            "f32[s0,4]");
  std::string message = errorMessage([&] {
    inferOne("aten.select_backward", {tensorType({5})},
             attrs({{"input_sizes", IntList{s0, 4}}, {"dim", SymExpr(0)}, {"index", SymExpr(0)}}));
  });
  EXPECT_NE(message.find("aten.select.int"), std::string::npos) << message;
}

// ---- references on hand-computed cases ---------------------------------------------------------

TEST(DataMovementReference, CatAndStack) {
  Tensor a = iota({2, 2});
  Tensor b = Tensor::fromDoubles({10, 11}, DType::F32, {2, 1});
  Tensor empty = Tensor::empty(DType::F32, {0});
  EXPECT_EQ(runOne("aten.cat", {&a, &empty, &b}, attrs({{"dim", SymExpr(1)}})).toDoubles(),
            (Values{0, 1, 10, 2, 3, 11}));
  EXPECT_EQ(runOne("aten.cat", {&a, &a}).toDoubles(), (Values{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(runOne("aten.stack", {&a, &a}, attrs({{"dim", SymExpr(2)}})).toDoubles(),
            (Values{0, 0, 1, 1, 2, 2, 3, 3}));
}

TEST(DataMovementReference, CloneAndCopy) {
  Tensor x = iota({2, 3});
  Tensor transposed = x.view({3, 2}, {1, 3}, 0);
  Tensor cloned = runOne("aten.clone", {&transposed});
  EXPECT_TRUE(cloned.isContiguous());
  EXPECT_EQ(cloned.toDoubles(), (Values{0, 3, 1, 4, 2, 5}));
  Tensor lifted = runOne("aten.lift_fresh_copy", {&transposed});
  EXPECT_TRUE(lifted.isContiguous());
  EXPECT_EQ(lifted.toDoubles(), (Values{0, 3, 1, 4, 2, 5}));
  Tensor self = Tensor::zeros(DType::I32, {2, 3});
  Tensor src = Tensor::fromDoubles({1.5, -2.5, 3}, DType::F64, {3});
  Tensor copied = runOne("aten.copy", {&self, &src});
  EXPECT_EQ(copied.dtype(), DType::I32);
  EXPECT_EQ(copied.toDoubles(), (Values{1, -2, 3, 1, -2, 3}));
}

TEST(DataMovementReference, IndexSelectGatherScatterAdd) {
  Tensor x = iota({3, 3});
  Tensor rows = indexTensor({2, 0, 2}, {3});
  EXPECT_EQ(runOne("aten.index_select", {&x, &rows}, attrs({{"dim", SymExpr(0)}})).toDoubles(),
            (Values{6, 7, 8, 0, 1, 2, 6, 7, 8}));
  EXPECT_EQ(runOne("aten.index_select", {&x, &rows}, attrs({{"dim", SymExpr(1)}})).toDoubles(),
            (Values{2, 0, 2, 5, 3, 5, 8, 6, 8}));
  Tensor index = indexTensor({0, 2, 1, 1}, {2, 2});
  EXPECT_EQ(runOne("aten.gather", {&x, &index}, attrs({{"dim", SymExpr(1)}})).toDoubles(),
            (Values{0, 2, 4, 4}));
  Tensor zeros = Tensor::zeros(DType::F32, {2, 3});
  Tensor src = Tensor::fromDoubles({1, 2, 3, 4}, DType::F32, {2, 2});
  EXPECT_EQ(
      runOne("aten.scatter_add", {&zeros, &index, &src}, attrs({{"dim", SymExpr(1)}})).toDoubles(),
      (Values{1, 0, 2, 0, 7, 0}));
  // torch.zeros(2, 3).scatter(1, index, src) and .scatter(1, index, -1.0); the repeated
  // index 1 of row 1 keeps the last write (4), as torch's CPU kernel does.
  EXPECT_EQ(
      runOne("aten.scatter.src", {&zeros, &index, &src}, attrs({{"dim", SymExpr(1)}})).toDoubles(),
      (Values{1, 0, 2, 0, 4, 0}));
  EXPECT_EQ(
      runOne("aten.scatter.value", {&zeros, &index}, attrs({{"dim", SymExpr(1)}, {"value", -1.0}}))
          .toDoubles(),
      (Values{-1, 0, -1, 0, -1, 0}));
  Tensor outOfRange = indexTensor({3}, {1});
  errorMessage(
      [&] {
        runOne("aten.index_select", {&x, &outOfRange}, attrs({{"dim", SymExpr(0)}}));
      },
      "runtime");
}

// torch.zeros(()).scatter(0, torch.tensor(0), torch.tensor(5.)): a 0-d self is one element along
// dim 0. Median's backward on a 0-d input scatters so.
TEST(DataMovementReference, ScatterIntoAZeroDimTensor) {
  Tensor zero = Tensor::zeros(DType::F32, {});
  Tensor index = indexTensor({0}, {});
  Tensor src = Tensor::fromDoubles({5}, DType::F32, {});
  Tensor out = runOne("aten.scatter.src", {&zero, &index, &src}, attrs({{"dim", SymExpr(0)}}));
  EXPECT_EQ(out.rank(), 0u);
  EXPECT_EQ(out.toDoubles(), (Values{5}));
  EXPECT_EQ(
      runOne("aten.scatter_add", {&out, &index, &src}, attrs({{"dim", SymExpr(0)}})).toDoubles(),
      (Values{10}));
  Tensor outOfRange = indexTensor({1}, {});
  errorMessage(
      [&] {
        runOne("aten.scatter.src", {&zero, &outOfRange, &src}, attrs({{"dim", SymExpr(0)}}));
      },
      "runtime");
}

TEST(DataMovementReference, GatherAndScatterAddAreAdjoint) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({4, 5}, rng);
  std::uniform_int_distribution<int> pick(0, 4);
  Values picks;
  for (int i = 0; i < 12; ++i)
    picks.push_back(pick(rng));
  Tensor index = indexTensor(picks, {4, 3});
  Tensor g = randomTensor({4, 3}, rng);
  Tensor zeros = Tensor::zeros(DType::F64, {4, 5});
  AttrMap dim1 = attrs({{"dim", SymExpr(1)}});
  EXPECT_NEAR(innerProduct(runOne("aten.gather", {&x, &index}, dim1), g),
              innerProduct(x, runOne("aten.scatter_add", {&zeros, &index, &g}, dim1)), 1e-12);
}

TEST(DataMovementReference, Embedding) {
  Tensor weight = iota({4, 2});
  Tensor indices = indexTensor({3, 0, 3}, {3, 1});
  Tensor out = runOne("aten.embedding", {&weight, &indices});
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(out.toDoubles(), (Values{6, 7, 0, 1, 6, 7}));
}

// The gradient of embedding's weight, written as a plain scatter-add over rows.
Values embeddingGradient(const Tensor& grad, const Values& indices, int64_t numWeights,
                         int64_t padding, bool scaleByFrequency) {
  const int64_t width = grad.shape().back();
  Values counts(static_cast<size_t>(numWeights), 0);
  for (double i : indices)
    counts[static_cast<size_t>(i)] += 1;
  Values out(static_cast<size_t>(numWeights * width), 0);
  for (size_t n = 0; n < indices.size(); ++n) {
    auto row = static_cast<int64_t>(indices[n]);
    if (row == padding) continue;
    for (int64_t j = 0; j < width; ++j)
      out[static_cast<size_t>(row * width + j)] +=
          grad.at(static_cast<int64_t>(n) * width + j) /
          (scaleByFrequency ? counts[static_cast<size_t>(row)] : 1);
  }
  return out;
}

TEST(DataMovementReference, EmbeddingDenseBackwardScattersRows) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pick(0, 5);
  Values picks;
  for (int i = 0; i < 10; ++i)
    picks.push_back(pick(rng));
  Tensor indices = indexTensor(picks, {2, 5});
  Tensor grad = randomTensor({2, 5, 3}, rng);
  for (int64_t padding : {int64_t{-1}, int64_t{2}}) {
    for (bool scale : {false, true}) {
      Tensor out = runOne("aten.embedding_dense_backward", {&grad, &indices},
                          attrs({{"num_weights", SymExpr(6)},
                                 {"padding_idx", SymExpr(padding)},
                                 {"scale_grad_by_freq", scale}}));
      Values expected = embeddingGradient(grad, picks, 6, padding, scale);
      Values actual = out.toDoubles();
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < actual.size(); ++i)
        EXPECT_NEAR(actual[i], expected[i], 1e-12) << "padding " << padding << " scale " << scale;
    }
  }
}

TEST(DataMovementReference, ConstantPadPadsAndCrops) {
  Tensor x = iota({2, 2});
  EXPECT_EQ(runOne("aten.constant_pad_nd", {&x}, attrs({{"pad", IntList{1, 0}}, {"value", 9.0}}))
                .toDoubles(),
            (Values{9, 0, 1, 9, 2, 3}));
  Tensor y = iota({3, 3});
  EXPECT_EQ(
      runOne("aten.constant_pad_nd", {&y}, attrs({{"pad", IntList{-1, 1, 0, -2}}})).toDoubles(),
      (Values{1, 2, 0}));
}

// <view(x), g> == <x, view_backward(g)> for random x and g: the backward is the adjoint.
void expectAdjoint(std::string_view forward, std::string_view backward, std::vector<int64_t> shape,
                   AttrMap viewAttrs) {
  SCOPED_TRACE(std::string(backward));
  std::mt19937 rng(11);
  Tensor x = randomTensor(shape, rng);
  Tensor viewed = runOne(forward, {&x}, viewAttrs);
  Tensor g = randomTensor(viewed.shape(), rng);
  viewAttrs.set("input_sizes", IntList(shape.begin(), shape.end()));
  Tensor gradInput = runOne(backward, {&g}, viewAttrs);
  EXPECT_EQ(gradInput.shape(), shape);
  EXPECT_NEAR(innerProduct(viewed, g), innerProduct(x, gradInput), 1e-12);
}

TEST(DataMovementReference, SliceAndSelectBackwardAreAdjoints) {
  expectAdjoint("aten.slice.Tensor", "aten.slice_backward", {5, 7},
                attrs({{"dim", SymExpr(1)},
                       {"start", SymExpr(-6)},
                       {"end", SymExpr(INT64_MAX)},
                       {"step", SymExpr(2)}}));
  expectAdjoint(
      "aten.slice.Tensor", "aten.slice_backward", {6, 3},
      attrs(
          {{"dim", SymExpr(0)}, {"start", SymExpr(1)}, {"end", SymExpr(4)}, {"step", SymExpr(1)}}));
  expectAdjoint("aten.select.int", "aten.select_backward", {4, 3, 2},
                attrs({{"dim", SymExpr(1)}, {"index", SymExpr(-1)}}));
}

} // namespace
} // namespace loupe
