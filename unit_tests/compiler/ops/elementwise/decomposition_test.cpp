// Composite ops against their decompositions: the graph after decompose, run with the
// reference interpreter, must compute what the composite op's reference computes.
#include "compiler/ops/graph_builder.h"
#include "unit_tests/compiler/ops/elementwise/op_test_support.h"
#include "unit_tests/support/reference_interpreter.h"

namespace loupe::testing {
namespace {

struct Decomposed {
  std::vector<Tensor> before, after;
  std::vector<std::string> ops; // ops of the decomposed graph
};

// A one-node graph of `name` over an input of `type`, evaluated before and after decomposing.
Decomposed decompose(const std::string& name, const Type& type, const AttrMap& a,
                     const Tensor& input, const SymbolBindings& bindings = {}) {
  Graph g("composite");
  Value* x = g.addInput(type, "x");
  Node* node = g.createNode(name, {x}, inferTypes(op(name), {x}, a), a);
  g.setOutputs(node->results());
  Decomposed d;
  d.before = evaluateGraphWithReference(g, {input}, bindings);
  GraphBuilder builder(g, node, node->loc());
  std::vector<Value*> replacements = op(name).decompose(*node, builder);
  if (replacements.size() != node->numResults()) throw std::runtime_error(name + " not decomposed");
  for (size_t i = 0; i < replacements.size(); ++i) {
    EXPECT_EQ(replacements[i]->type(), node->result(i)->type()) << name << " result " << i;
    g.replaceAllUsesWith(node->result(i), replacements[i]);
  }
  g.eraseNode(node);
  for (Node* n : g.nodes())
    d.ops.push_back(n->op());
  d.after = evaluateGraphWithReference(g, {input}, bindings);
  return d;
}

void expectPrimitive(const Decomposed& d) {
  for (const auto& name : d.ops) {
    EXPECT_FALSE(op(name).decompose) << name << " is composite";
  }
}

void expectAgree(const Decomposed& d) {
  ASSERT_EQ(d.before.size(), d.after.size());
  for (size_t i = 0; i < d.before.size(); ++i)
    expectSameValues(d.after[i], d.before[i], 1e-12);
  expectPrimitive(d);
}

TEST(Decomposition, MeanIsSumThenDivide) {
  Tensor x = randomTensor({3, 4, 5});
  const Type t = tensorType(DType::F64, {3, 4, 5});
  expectAgree(
      decompose("aten.mean.dim", t, attrs({{"dim", IntList{-1, 0}}, {"keepdim", true}}), x));
  expectAgree(decompose("aten.mean.dim", t, attrs({{"dim", IntList{1}}}), x));
  Decomposed whole = decompose("aten.mean", t, {}, x);
  expectAgree(whole);
  EXPECT_EQ(whole.ops, (std::vector<std::string>{"aten.sum.dim_IntList", "aten.div.Scalar"}));
}

TEST(Decomposition, MeanOverSymbolicDims) {
  const SymExpr s0 = SymExpr::symbol("s0");
  Tensor x = randomTensor({3, 4});
  expectAgree(decompose("aten.mean.dim", tensorType(DType::F64, {s0, 4}),
                        attrs({{"dim", IntList{0}}}), x, {{"s0", 3}}));
}

TEST(Decomposition, VarianceWithCorrectionAndKeepdim) {
  Tensor x = randomTensor({4, 6});
  const Type t = tensorType(DType::F64, {4, 6});
  for (bool keepdim : {false, true}) {
    for (Attribute correction : {Attribute(NoneAttr{}), Attribute(SymExpr(0)), Attribute(0.5)}) {
      AttrMap a = attrs({{"dim", IntList{1}}, {"keepdim", keepdim}, {"correction", correction}});
      expectAgree(decompose("aten.var.correction", t, a, x));
      expectAgree(decompose("aten.var_mean.correction", t, a, x));
    }
  }
  expectAgree(decompose("aten.var.correction", t, {}, x)); // every dim, Bessel's correction
}

TEST(Decomposition, RsubIsSubtractionFromAConstant) {
  Tensor x = values({1, 2, 3}, DType::F32);
  Decomposed d = decompose("aten.rsub.Scalar", tensorType(DType::F32, {3}),
                           attrs({{"other", 1.5}, {"alpha", SymExpr(2)}}), x);
  expectAgree(d);
  expectValues(d.after[0], {-0.5, -2.5, -4.5});
  // An integer tensor minus from a float scalar promotes to f32 either way.
  Tensor i = values({1, 2, 3}, DType::I64);
  expectAgree(
      decompose("aten.rsub.Scalar", tensorType(DType::I64, {3}), attrs({{"other", 0.5}}), i));
}

} // namespace
} // namespace loupe::testing
