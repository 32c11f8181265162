// The ops transformers' mask building and masked attention reach Loupe with: shape and dtype
// inference (symbolic dims included), and reference results against hand-computed values.
#include <cmath>
#include <limits>

#include "compiler/ops/graph_builder.h"
#include "unit_tests/compiler/ops/data/op_test_support.h"
#include "unit_tests/support/reference_interpreter.h"

namespace loupe {
namespace {

using namespace loupe::testing;

using Values = std::vector<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor values(const Values& v, std::vector<int64_t> shape, DType dtype = DType::F64) {
  return Tensor::fromDoubles(v, dtype, std::move(shape));
}

void expectValues(const Tensor& t, const Values& expected, double tolerance = 0) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size())) << t.describe();
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_NEAR(t.at(i), expected[static_cast<size_t>(i)], tolerance) << "element " << i;
}

// ---- bitwise ops

TEST(BitwiseOps, PromoteIntegersAndBroadcastSymbolicDims) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.bitwise_and.Tensor", {tensorType({s0, 1, 8, 1}, DType::Bool),
                                                 tensorType({1, 1, 1, 8}, DType::Bool)})
                .str(),
            "bool[s0,1,8,8]");
  EXPECT_EQ(inferOne("aten.bitwise_or.Tensor",
                     {tensorType({s0}, DType::I32), tensorType({s0}, DType::I64)})
                .str(),
            "i64[s0]");
  EXPECT_EQ(inferOne("aten.bitwise_xor.Scalar", {tensorType({s0}, DType::U8)},
                     attrs({{"other", SymExpr(3)}}))
                .str(),
            "u8[s0]");
}

TEST(BitwiseOps, RejectFloatingOperands) {
  std::string message = errorMessage(
      [] {
        inferOne("aten.bitwise_and.Tensor", {tensorType({4}), tensorType({4}, DType::Bool)});
      },
      "dtype");
  EXPECT_NE(message.find("aten.bitwise_and.Tensor"), std::string::npos) << message;
  errorMessage(
      [] {
        inferOne("aten.bitwise_or.Scalar", {tensorType({4}, DType::I64)}, attrs({{"other", 0.5}}));
      },
      "dtype");
}

TEST(BitwiseOps, ComputeOnTwosComplementIntegers) {
  Tensor a = values({12, 12, -1, 0}, {4}, DType::I64);
  Tensor b = values({10, 3, 5, 7}, {4}, DType::I64);
  expectValues(runOne("aten.bitwise_and.Tensor", {&a, &b}), {8, 0, 5, 0});
  expectValues(runOne("aten.bitwise_or.Tensor", {&a, &b}), {14, 15, -1, 7});
  expectValues(runOne("aten.bitwise_xor.Tensor", {&a, &b}), {6, 15, -6, 7});
  Tensor mask = values({1, 0, 1}, {3}, DType::Bool);
  Tensor row = values({1, 1, 0}, {1, 3}, DType::Bool);
  Tensor both = runOne("aten.bitwise_and.Tensor", {&mask, &row});
  EXPECT_EQ(both.dtype(), DType::Bool);
  expectValues(both, {1, 0, 0});
  expectValues(runOne("aten.bitwise_xor.Scalar", {&mask}, attrs({{"other", true}})), {0, 1, 0});
}

// ---- new_* factories

TEST(NewFactories, TakeSizeFromAttributesAndDTypeFromSelf) {
  SymExpr s0 = sym("s0");
  TensorType self = tensorType({3, 4}, DType::F16);
  EXPECT_EQ(inferOne("aten.new_ones", {self}, attrs({{"size", IntList{s0, 2 * s0}}})).str(),
            "f16[s0,2*s0]");
  EXPECT_EQ(inferOne("aten.new_zeros", {self}, attrs({{"size", IntList{}}, {"dtype", DType::Bool}}))
                .str(),
            "bool[]");
  EXPECT_EQ(
      inferOne("aten.new_full", {self}, attrs({{"size", IntList{5}}, {"fill_value", SymExpr(7)}}))
          .str(),
      "f16[5]");
  Tensor t = iota({2, 2});
  expectValues(runOne("aten.new_ones", {&t}, attrs({{"size", IntList{3}}})), {1, 1, 1});
  expectValues(runOne("aten.new_full", {&t}, attrs({{"size", IntList{2}}, {"fill_value", -2.5}})),
               {-2.5, -2.5});
  expectValues(runOne("aten.new_zeros", {&t}, attrs({{"size", IntList{1, 2}}})), {0, 0});
}

// ---- index.Tensor

TEST(IndexTensor, AdjacentIndicesReplaceTheirDimsInPlace) {
  SymExpr s0 = sym("s0");
  SymExpr s1 = sym("s1");
  // position_ids[batch_index, query_index] as transformers builds its 4-d masks.
  EXPECT_EQ(inferOne("aten.index.Tensor",
                     {tensorType({s0, 8}, DType::I64), tensorType({s0, 1, 1, 1}, DType::I64),
                      tensorType({1, 1, 8, 1}, DType::I64)})
                .str(),
            "i64[s0,1,8,1]");
  // A `none` slot keeps its dim; dims past the last index are kept too.
  std::vector<Type> operands = {tensorType({s0, 5, 6}), tensorType({s1}, DType::I64)};
  EXPECT_EQ(
      opInfo("aten.index.Tensor").infer({&operands[0], nullptr, &operands[1]}, {}).at(0).str(),
      "f32[s0,s1,6]");
}

TEST(IndexTensor, SeparatedIndicesGoInFront) {
  std::vector<Type> operands = {tensorType({3, 4, 5}), tensorType({2, 1}, DType::I64),
                                tensorType({7}, DType::I32)};
  EXPECT_EQ(opInfo("aten.index.Tensor")
                .infer({&operands[0], &operands[1], nullptr, &operands[2]}, {})
                .at(0)
                .str(),
            "f32[2,7,4]");
}

TEST(IndexTensor, RejectsMasksAndMismatchedIndices) {
  std::string message = errorMessage([] {
    inferOne("aten.index.Tensor", {tensorType({4}), tensorType({4}, DType::Bool)});
  });
  EXPECT_NE(message.find("mask"), std::string::npos) << message;
  errorMessage([] {
    inferOne("aten.index.Tensor",
             {tensorType({4, 4}), tensorType({2}, DType::I64), tensorType({3}, DType::I64)});
  });
  errorMessage([] {
    inferOne("aten.index.Tensor",
             {tensorType({4}), tensorType({1}, DType::I64), tensorType({1}, DType::I64)});
  });
}

TEST(IndexTensor, GathersElementsWithNegativeIndicesCountingFromTheEnd) {
  Tensor self = iota({3, 4}); // self[r][c] = 4r + c
  Tensor rows = indexTensor({0, 2, -1}, {3, 1});
  Tensor columns = indexTensor({1, -1}, {1, 2});
  Tensor out = runOne("aten.index.Tensor", {&self, &rows, &columns});
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{3, 2}));
  expectValues(out, {1, 3, 9, 11, 9, 11});

  // self[:, [2, 0]]: a none slot, then an index.
  Tensor cube = iota({2, 3, 2}); // cube[a][b][c] = 6a + 2b + c
  Tensor pick = indexTensor({2, 0}, {2});
  Type cubeType = typeOf(cube), pickType = typeOf(pick);
  auto types = opInfo("aten.index.Tensor").infer({&cubeType, nullptr, &pickType}, {});
  Tensor picked =
      runReference(opInfo("aten.index.Tensor"), {&cube, nullptr, &pick}, {}, types, {}).at(0);
  EXPECT_EQ(picked.shape(), (std::vector<int64_t>{2, 2, 2}));
  expectValues(picked, {4, 5, 0, 1, 10, 11, 6, 7});

  Tensor outOfRange = indexTensor({3}, {1});
  errorMessage([&] { runOne("aten.index.Tensor", {&self, &outOfRange}); }, "runtime");
}

TEST(IndexPut, ValuesBroadcastToTheIndexedShape) {
  SymExpr s0 = sym("s0");
  // The backward of weight[position_ids]: zeros with grad rows added at the positions.
  EXPECT_EQ(
      inferOne("aten.index_put",
               {tensorType({16, 32}), tensorType({s0, 4}, DType::I64), tensorType({s0, 4, 32})},
               attrs({{"accumulate", true}}))
          .str(),
      "f32[16,32]");
  errorMessage([&] {
    inferOne("aten.index_put",
             {tensorType({16, 32}), tensorType({s0}, DType::I64), tensorType({s0, 31})});
  });
  errorMessage(
      [&] {
        inferOne("aten.index_put",
                 {tensorType({16}), tensorType({2}, DType::I64), tensorType({2}, DType::F64)});
      },
      "dtype");
}

TEST(IndexPut, WritesOrAccumulatesRepeatedIndices) {
  Tensor self = values({1, 2, 3, 4}, {4});
  Tensor index = indexTensor({0, 2, 0, -1}, {4});
  Tensor update = values({10, 20, 30, 40}, {4});
  expectValues(runOne("aten.index_put", {&self, &index, &update}, attrs({{"accumulate", true}})),
               {41, 2, 23, 44});
  Tensor once = indexTensor({3, 1}, {2});
  Tensor scalar = values({-5}, {});
  expectValues(runOne("aten.index_put", {&self, &once, &scalar}), {1, -5, 3, -5});
  // A whole row per index: self[[1, 1]] += rows.
  Tensor grid = Tensor::zeros(DType::F64, {3, 2});
  Tensor rows = indexTensor({1, 1}, {2});
  Tensor grads = values({1, 2, 3, 4}, {2, 2});
  expectValues(runOne("aten.index_put", {&grid, &rows, &grads}, attrs({{"accumulate", true}})),
               {0, 0, 4, 6, 0, 0});
}

TEST(Repeat, TilesEachDimAndAddsLeadingOnes) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.repeat", {tensorType({1, 4}, DType::I64)},
                     attrs({{"repeats", IntList{s0, 1}}}))
                .str(),
            "i64[s0,4]");
  EXPECT_EQ(inferOne("aten.repeat", {tensorType({s0})}, attrs({{"repeats", IntList{2, 3}}})).str(),
            "f32[2,3*s0]");
  errorMessage([&] {
    inferOne("aten.repeat", {tensorType({2, 2})}, attrs({{"repeats", IntList{2}}}));
  });
  Tensor t = iota({2});
  expectValues(runOne("aten.repeat", {&t}, attrs({{"repeats", IntList{2, 2}}})),
               {0, 1, 0, 1, 0, 1, 0, 1});
  Tensor m = iota({2, 1});
  expectValues(runOne("aten.repeat", {&m}, attrs({{"repeats", IntList{1, 3}}})),
               {0, 0, 0, 1, 1, 1});
}

// ---- cumsum and flip

TEST(Cumsum, KeepsTheShapeAndAccumulatesIntegersInI64) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(
      inferOne("aten.cumsum", {tensorType({s0, 8}, DType::Bool)}, attrs({{"dim", SymExpr(-1)}}))
          .str(),
      "i64[s0,8]");
  EXPECT_EQ(inferOne("aten.cumsum", {tensorType({s0}, DType::F16)},
                     attrs({{"dim", SymExpr(0)}, {"dtype", DType::F32}}))
                .str(),
            "f32[s0]");
  errorMessage([&] {
    inferOne("aten.cumsum", {tensorType({s0, 8})}, attrs({{"dim", SymExpr(2)}}));
  });
}

TEST(Cumsum, RunsAlongTheGivenDim) {
  Tensor t = values({1, 2, 3, 4, 5, 6}, {2, 3});
  expectValues(runOne("aten.cumsum", {&t}, attrs({{"dim", SymExpr(1)}})), {1, 3, 6, 4, 9, 15});
  expectValues(runOne("aten.cumsum", {&t}, attrs({{"dim", SymExpr(0)}})), {1, 2, 3, 5, 7, 9});
  Tensor mask = values({1, 1, 0, 1}, {4}, DType::I32);
  Tensor positions = runOne("aten.cumsum", {&mask}, attrs({{"dim", SymExpr(-1)}}));
  EXPECT_EQ(positions.dtype(), DType::I64);
  expectValues(positions, {1, 2, 2, 3});
}

TEST(Flip, ReversesTheListedDims) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(
      inferOne("aten.flip", {tensorType({sym("s0"), 3})}, attrs({{"dims", IntList{0}}})).str(),
      "f32[s0,3]");
  expectValues(runOne("aten.flip", {&t}, attrs({{"dims", IntList{-1}}})), {2, 1, 0, 5, 4, 3});
  expectValues(runOne("aten.flip", {&t}, attrs({{"dims", IntList{0, 1}}})), {5, 4, 3, 2, 1, 0});
  expectValues(runOne("aten.flip", {&t}, attrs({{"dims", IntList{}}})), {0, 1, 2, 3, 4, 5});
}

// ---- tril and triu

TEST(Triangles, KeepShapeAndNeedTwoDims) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(inferOne("aten.tril", {tensorType({s0, s0}, DType::Bool)}).str(), "bool[s0,s0]");
  EXPECT_EQ(
      inferOne("aten.triu", {tensorType({2, s0, 4})}, attrs({{"diagonal", SymExpr(1)}})).str(),
      "f32[2,s0,4]");
  errorMessage([] { inferOne("aten.tril", {tensorType({4})}); });
}

TEST(Triangles, ZeroTheOtherSideOfTheDiagonal) {
  Tensor ones = values(Values(12, 1.0), {3, 4});
  expectValues(runOne("aten.tril", {&ones}), {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0});
  expectValues(runOne("aten.tril", {&ones}, attrs({{"diagonal", SymExpr(-1)}})),
               {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0});
  expectValues(runOne("aten.triu", {&ones}, attrs({{"diagonal", SymExpr(1)}})),
               {0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});
  // Each matrix of a batch separately.
  Tensor batch = iota({2, 2, 2});
  expectValues(runOne("aten.triu", {&batch}), {0, 1, 0, 3, 4, 5, 0, 7});
}

// ---- _safe_softmax

TEST(SafeSoftmax, FullyMaskedLinesGiveZeros) {
  SymExpr s0 = sym("s0");
  EXPECT_EQ(
      inferOne("aten._safe_softmax", {tensorType({s0, 2, 8, 8})}, attrs({{"dim", SymExpr(-1)}}))
          .str(),
      "f32[s0,2,8,8]");
  EXPECT_EQ(inferOne("aten._safe_softmax", {tensorType({4}, DType::F16)},
                     attrs({{"dim", SymExpr(0)}, {"dtype", DType::F32}}))
                .str(),
            "f32[4]");

  Tensor scores = values({0, std::log(3.0), -kInf, -kInf, -kInf, -kInf}, {2, 3});
  Tensor out = runOne("aten._safe_softmax", {&scores}, attrs({{"dim", SymExpr(1)}}));
  expectValues(out, {0.25, 0.75, 0, 0, 0, 0}, 1e-15);
}

TEST(SafeSoftmax, DecomposesIntoSoftmaxAndAWhere) {
  Tensor scores = values({0.5, -kInf, 2, -kInf, -kInf, -kInf, 1, -1, 0}, {3, 3});
  Graph g("safe_softmax");
  Value* x = g.addInput(tensorType({3, 3}, DType::F64), "x");
  AttrMap a = attrs({{"dim", SymExpr(-1)}});
  const OpInfo& info = opInfo("aten._safe_softmax");
  Node* node = g.createNode(info.name, {x}, inferTypes(info, {x}, a), a);
  g.setOutputs(node->results());
  std::vector<Tensor> before = evaluateGraphWithReference(g, {scores});

  GraphBuilder builder(g, node, node->loc());
  std::vector<Value*> replacements = info.decompose(*node, builder);
  ASSERT_EQ(replacements.size(), 1u);
  EXPECT_EQ(replacements[0]->type(), node->result()->type());
  g.replaceAllUsesWith(node->result(), replacements[0]);
  g.eraseNode(node);
  std::vector<Tensor> after = evaluateGraphWithReference(g, {scores});
  const double e = std::exp(1.5);
  const double row = std::exp(1.0) + std::exp(-1.0) + 1;
  expectValues(
      before[0],
      {1 / (1 + e), 0, e / (1 + e), 0, 0, 0, std::exp(1.0) / row, std::exp(-1.0) / row, 1 / row},
      1e-12);
  for (int64_t i = 0; i < 9; ++i)
    EXPECT_NEAR(after[0].at(i), before[0].at(i), 1e-12) << "element " << i;
}

} // namespace
} // namespace loupe
