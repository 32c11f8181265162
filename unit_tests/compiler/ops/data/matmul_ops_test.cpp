// Matmul ops: shape and dtype checks, references against a naive float64 product written here,
// and the decompositions of addmm/baddbmm (the graph computes the same before and after).
#include <cmath>
#include <random>

#include "compiler/ops/graph_builder.h"
#include "unit_tests/compiler/ops/data/op_test_support.h"
#include "unit_tests/support/reference_interpreter.h"

namespace loupe {
namespace {

using namespace loupe::testing;

TEST(MatmulInference, ProductShapes) {
  SymExpr s0 = sym("s0");
  SymExpr s1 = sym("s1");
  EXPECT_EQ(inferOne("aten.mm", {tensorType({s0, 128}), tensorType({128, 256})}).str(),
            "f32[s0,256]");
  EXPECT_EQ(inferOne("aten.bmm",
                     {tensorType({s1, s0, 8}, DType::F16), tensorType({s1, 8, 4}, DType::F16)})
                .str(),
            "f16[s1,s0,4]");
  EXPECT_EQ(inferOne("aten.dot", {tensorType({s0}), tensorType({s0})}).str(), "f32[]");
  EXPECT_EQ(
      inferOne("aten.addmm", {tensorType({256}), tensorType({s0, 128}), tensorType({128, 256})})
          .str(),
      "f32[s0,256]");
  EXPECT_EQ(inferOne("aten.baddbmm",
                     {tensorType({1, s0, 1}), tensorType({3, s0, 8}), tensorType({3, 8, 4})},
                     attrs({{"beta", 0.5}, {"alpha", 2.0}}))
                .str(),
            "f32[3,s0,4]");
}

TEST(MatmulInference, MismatchesAreNamed) {
  SymExpr s0 = sym("s0");
  std::string message = errorMessage([&] {
    inferOne("aten.mm", {tensorType({4, s0}), tensorType({8, 2})});
  });
  EXPECT_NE(message.find("s0 vs 8"), std::string::npos) << message;
  errorMessage([&] { inferOne("aten.bmm", {tensorType({2, 4, 8}), tensorType({3, 8, 2})}); });
  errorMessage([&] { inferOne("aten.mm", {tensorType({2, 4, 8}), tensorType({8, 2})}); });
  message = errorMessage(
      [&] {
        inferOne("aten.mm", {tensorType({4, 8}), tensorType({8, 2}, DType::F16)});
      },
      "dtype");
  EXPECT_NE(message.find("f16[8,2]"), std::string::npos) << message;
  errorMessage(
      [&] {
        inferOne("aten.mm", {tensorType({4, 8}, DType::I64), tensorType({8, 2}, DType::I64)});
      },
      "dtype");
  message = errorMessage([&] {
    inferOne("aten.addmm", {tensorType({3}), tensorType({4, 8}), tensorType({8, 2})});
  });
  EXPECT_NE(message.find("aten.addmm"), std::string::npos) << message;
}

// out[b] = alpha * a[b] @ m[b] + beta * bias (bias broadcast over rows, or none), in float64.
std::vector<double> naiveProduct(const Tensor& a, const Tensor& m, const Tensor* bias, double beta,
                                 double alpha) {
  const bool batched = a.rank() == 3;
  const int64_t batch = batched ? a.size(0) : 1;
  const int64_t rows = a.size(a.rank() - 2);
  const int64_t inner = a.size(a.rank() - 1);
  const int64_t cols = m.size(m.rank() - 1);
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < inner; ++k)
          sum += a.at((b * rows + i) * inner + k) * m.at((b * inner + k) * cols + j);
        out.push_back(alpha * sum + (bias ? beta * bias->at(j) : 0.0));
      }
  return out;
}

void expectNear(const Tensor& actual, const std::vector<double>& expected) {
  std::vector<double> values = actual.toDoubles();
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(values[i], expected[i], 1e-12) << "element " << i;
}

TEST(MatmulReference, MatchesNaiveProduct) {
  std::mt19937 rng(5);
  Tensor a = randomTensor({3, 5}, rng);
  Tensor bStorage = randomTensor({4, 5}, rng);
  Tensor b = bStorage.view({5, 4}, {1, 5}, 0); // a transposed operand
  expectNear(runOne("aten.mm", {&a, &b}), naiveProduct(a, b, nullptr, 0, 1));

  Tensor bias = randomTensor({4}, rng);
  expectNear(runOne("aten.addmm", {&bias, &a, &b}, attrs({{"beta", 0.5}, {"alpha", SymExpr(2)}})),
             naiveProduct(a, b, &bias, 0.5, 2));

  Tensor batch1 = randomTensor({2, 3, 5}, rng);
  Tensor batch2 = randomTensor({2, 5, 4}, rng);
  expectNear(runOne("aten.bmm", {&batch1, &batch2}), naiveProduct(batch1, batch2, nullptr, 0, 1));
  expectNear(runOne("aten.baddbmm", {&bias, &batch1, &batch2}, attrs({{"beta", -1.0}})),
             naiveProduct(batch1, batch2, &bias, -1, 1));

  Tensor x = randomTensor({6}, rng);
  Tensor y = randomTensor({6}, rng);
  double dot = 0;
  for (int64_t i = 0; i < 6; ++i)
    dot += x.at(i) * y.at(i);
  EXPECT_NEAR(runOne("aten.dot", {&x, &y}).at(0), dot, 1e-12);
}

TEST(MatmulReference, ZeroBetaIgnoresTheBias) {
  std::mt19937 rng(9);
  Tensor a = randomTensor({2, 3}, rng);
  Tensor b = randomTensor({3, 2}, rng);
  Tensor bias = Tensor::fromDoubles({NAN, NAN}, DType::F64, {2});
  expectNear(runOne("aten.addmm", {&bias, &a, &b}, attrs({{"beta", SymExpr(0)}})),
             naiveProduct(a, b, nullptr, 0, 1));
}

// ---- decompositions ----------------------------------------------------------------------------

struct Decomposed {
  std::vector<std::string> ops;
  std::vector<double> before;
  std::vector<double> after;
};

// Builds `op`(self, m1, m2) over random inputs, evaluates it, decomposes it, evaluates again.
Decomposed decomposeBiasedProduct(std::string_view op, std::vector<int64_t> selfShape,
                                  std::vector<int64_t> m1Shape, std::vector<int64_t> m2Shape,
                                  const AttrMap& attributes) {
  std::mt19937 rng(13);
  std::vector<Tensor> inputs = {randomTensor(selfShape, rng, DType::F32),
                                randomTensor(m1Shape, rng, DType::F32),
                                randomTensor(m2Shape, rng, DType::F32)};
  Graph graph;
  std::vector<Value*> operands;
  for (const Tensor& t : inputs)
    operands.push_back(graph.addInput(typeOf(t)));
  auto types = inferTypes(opInfo(op), operands, attributes);
  Node* node = graph.createNode(std::string(op), operands, types, attributes);
  graph.setOutputs({node->result()});
  Decomposed out;
  out.before = evaluateGraphWithReference(graph, inputs)[0].toDoubles();

  GraphBuilder builder(graph, node, node->loc());
  auto replaced = opInfo(op).decompose(*node, builder);
  EXPECT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced.at(0)->type(), node->result()->type());
  graph.replaceAllUsesWith(node->result(), replaced[0]);
  graph.eraseNode(node);
  for (Node* n : graph.nodes())
    out.ops.push_back(n->op());
  out.after = evaluateGraphWithReference(graph, inputs)[0].toDoubles();
  return out;
}

class MatmulDecomposition : public ::testing::Test {
protected:
  void SetUp() override {
    if (!registered("aten.mul.Scalar") || !registered("aten.add.Tensor"))
      GTEST_SKIP() << "the elementwise ops are not registered";
  }

  static void expectSameValues(const Decomposed& d) {
    ASSERT_EQ(d.before.size(), d.after.size());
    for (size_t i = 0; i < d.before.size(); ++i)
      EXPECT_NEAR(d.before[i], d.after[i], 1e-5) << i;
  }
};

TEST_F(MatmulDecomposition, AddmmBecomesMmPlusBiasEpilogue) {
  Decomposed plain = decomposeBiasedProduct("aten.addmm", {4}, {3, 5}, {5, 4}, {});
  EXPECT_EQ(plain.ops, (std::vector<std::string>{"aten.mm", "aten.add.Tensor"}));
  expectSameValues(plain);

  Decomposed scaled = decomposeBiasedProduct("aten.addmm", {3, 1}, {3, 5}, {5, 4},
                                             attrs({{"beta", 0.5}, {"alpha", SymExpr(3)}}));
  EXPECT_EQ(scaled.ops, (std::vector<std::string>{"aten.mm", "aten.mul.Scalar", "aten.mul.Scalar",
                                                  "aten.add.Tensor"}));
  expectSameValues(scaled);

  Decomposed noBias =
      decomposeBiasedProduct("aten.addmm", {4}, {3, 5}, {5, 4}, attrs({{"beta", 0.0}}));
  EXPECT_EQ(noBias.ops, (std::vector<std::string>{"aten.mm"}));
  expectSameValues(noBias);
}

TEST_F(MatmulDecomposition, BaddbmmBecomesBmmPlusBias) {
  Decomposed d = decomposeBiasedProduct("aten.baddbmm", {2, 3, 4}, {2, 3, 5}, {2, 5, 4},
                                        attrs({{"alpha", 0.25}}));
  EXPECT_EQ(d.ops, (std::vector<std::string>{"aten.bmm", "aten.mul.Scalar", "aten.add.Tensor"}));
  expectSameValues(d);
}

} // namespace
} // namespace loupe
