// The verifier rejects each broken rule with an Error("verify") naming the offending node.
#include "compiler/ops/verifier.h"

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "compiler/ir/parser.h"

namespace loupe {
namespace {

const SymExpr s0 = SymExpr::symbol("s0");
TensorType f32(Shape shape) {
  return TensorType{DType::F32, std::move(shape)};
}

// Expects verify() to fail on a node described as `node`, with `fragment` in the message.
void expectRejected(const Graph& g, const std::string& node, const std::string& fragment) {
  try {
    verify(g);
    ADD_FAILURE() << "verify accepted a graph that breaks: " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "verify");
    EXPECT_EQ(e.context().node, node) << e.what();
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.what();
  }
}

// %y = aten.mm(%x, %w) with x: [s0,8], w: [8,16]; outputs y.
struct MatmulGraph {
  Graph g{"f"};
  Value* x = g.addInput(f32({s0, 8}), "x");
  Value* w = g.addInput(f32({8, 16}), "w");
  Node* mm = g.createNode("aten.mm", {x, w}, {f32({s0, 16})});
  MatmulGraph() {
    mm->result()->setName("y");
    g.setOutputs({mm->result()});
  }
};

TEST(VerifierTest, AcceptsAWellFormedGraph) {
  MatmulGraph m;
  EXPECT_NO_THROW(verify(m.g));
}

TEST(VerifierTest, RejectsUseBeforeDefinition) {
  MatmulGraph m;
  Node* neg = m.g.createNode("aten.neg", {m.mm->result()}, {f32({s0, 16})});
  neg->result()->setName("n");
  m.g.moveBefore(neg, m.mm);
  expectRejected(m.g, "%n = aten.neg", "not defined before this node");
}

TEST(VerifierTest, RejectsAValueFromAnotherGraph) {
  MatmulGraph m, other;
  m.mm->setOperand(1, other.w);
  expectRejected(m.g, "%y = aten.mm", "not defined before this node");
}

TEST(VerifierTest, RejectsADuplicateName) {
  MatmulGraph m;
  m.mm->result()->setName("x");
  expectRejected(m.g, "%x = aten.mm", "%x is defined twice");
}

TEST(VerifierTest, RejectsStridesOfTheWrongRank) {
  MatmulGraph m;
  TensorType t = f32({s0, 16});
  t.strides = Shape{SymExpr(1)};
  m.mm->result()->setType(t);
  expectRejected(m.g, "%y = aten.mm", "%y has 1 strides for 2 dimensions");
}

TEST(VerifierTest, RejectsWrongOperandCount) {
  MatmulGraph m;
  m.mm->setOperands({m.x});
  expectRejected(m.g, "%y = aten.mm", "takes 2 operands, found 1");
}

TEST(VerifierTest, RejectsNoneForARequiredOperand) {
  MatmulGraph m;
  m.mm->setOperand(1, nullptr);
  expectRejected(m.g, "%y = aten.mm", "cannot be none");
}

TEST(VerifierTest, RejectsAMissingRequiredAttribute) {
  Graph g;
  AttrMap attrs;
  attrs.set("dtype", DType::F32);
  attrs.set("shape", IntList{2});
  Node* c = g.createNode("loupe.constant", {}, {f32({2})}, attrs);
  c->result()->setName("c");
  g.setOutputs({c->result()});
  expectRejected(g, "%c = loupe.constant", "requires attribute 'data'");
}

TEST(VerifierTest, RejectsResultTypesThatDisagreeWithInference) {
  MatmulGraph m;
  m.mm->result()->setType(f32({s0, 8}));
  m.g.setOutputs({m.mm->result()});
  expectRejected(m.g, "%y = aten.mm", "differ from the inferred (f32[s0,16])");
}

// The batch stride of a view of CUDA attention's padded mask, as torch's fake tensors give it
// (simplified with the traced sizes) and as inference gives it (exact at every size).
constexpr const char* kPaddedMaskView = R"(
graph @g(%x: f32[s1,1,s0,s0]<strides=[8*s0 - s0*(s0%8) + s0**2,8*s0 - s0*(s0%8) + s0**2,-(s0%8) + s0 + 8,1]>) -> (f32[s1,2,s0,s0]<strides=[BATCH,0,-(s0%8) + s0 + 8,1]>) {
  %e = aten.expand(%x) {size=[s1,2,s0,s0]} : f32[s1,2,s0,s0]<strides=[BATCH,0,-(s0%8) + s0 + 8,1]>
  return %e
})";

std::string withBatchStride(const std::string& stride) {
  std::string text = kPaddedMaskView;
  for (size_t at = text.find("BATCH"); at != std::string::npos; at = text.find("BATCH"))
    text.replace(at, 5, stride);
  return text;
}

TEST(VerifierTest, AcceptsStridesThatTorchSimplifiedWithTheTracedSizes) {
  EXPECT_NO_THROW(parseGraph(withBatchStride("2*s0**2")));
  // Where neither side has a division or a modulo, a different stride is an error.
  auto graph = parseGraph(withBatchStride("2*s0**2"));
  Node* expand = graph->nodes()[0];
  SymExpr s0 = SymExpr::symbol("s0");
  Type input = expand->operand(0)->type();
  input.tensor().strides = Shape{s0 * SymExpr(5), s0 * SymExpr(5), s0, SymExpr(1)};
  Type wrong = expand->result()->type();
  wrong.tensor().strides = Shape{s0 * SymExpr(3), SymExpr(0), s0, SymExpr(1)};
  graph->input(0)->setType(input);
  expand->result()->setType(wrong);
  graph->setOutputs({expand->result()});
  expectRejected(*graph, "%e = aten.expand", "differ from the inferred");
}

TEST(VerifierTest, ReportsShapeErrorsFromInferenceAtTheNode) {
  MatmulGraph m;
  m.mm->setOperands({m.x, m.x});
  expectRejected(m.g, "%y = aten.mm", "");
}

// %y = loupe.fused(%x) whose body is ^(%a): %b = aten.neg(%a); yield %b.
struct FusedGraph {
  Graph g{"f"};
  Value* x = g.addInput(f32({s0}), "x");
  Node* fused = g.createNode("loupe.fused", {x}, {f32({s0})});
  Graph* body;
  FusedGraph() {
    auto b = std::make_unique<Graph>();
    Value* a = b->addInput(f32({s0}), "a");
    Node* neg = b->createNode("aten.neg", {a}, {f32({s0})});
    neg->result()->setName("b");
    b->setOutputs({neg->result()});
    body = b.get();
    fused->setBody(std::move(b));
    fused->result()->setName("y");
    g.setOutputs({fused->result()});
  }
};

TEST(VerifierTest, AcceptsAMatchingFusedBody) {
  FusedGraph f;
  EXPECT_NO_THROW(verify(f.g));
}

TEST(VerifierTest, RejectsFusedBodyInputCountMismatch) {
  FusedGraph f;
  f.body->addInput(f32({s0}), "extra");
  expectRejected(f.g, "%y = loupe.fused", "fused body has 2 inputs for 1 operands");
}

TEST(VerifierTest, RejectsFusedBodyInputTypeMismatch) {
  FusedGraph f;
  f.x->setType(f32({s0, 2}));
  expectRejected(f.g, "%y = loupe.fused", "fused body input 0 has type f32[s0]");
}

TEST(VerifierTest, RejectsFusedBodyYieldMismatch) {
  FusedGraph f;
  f.fused->result()->setType(TensorType{DType::F16, {s0}});
  expectRejected(f.g, "%y = loupe.fused", "yields f32[s0] for result 0 of type f16[s0]");
}

TEST(VerifierTest, RejectsABodyThatReachesOutside) {
  FusedGraph f;
  f.body->nodes()[0]->setOperand(0, f.x);
  expectRejected(f.g, "%b = aten.neg", "(%x) is not defined before this node in this graph");
}

TEST(VerifierTest, RejectsAnOutputThatIsNotDefined) {
  MatmulGraph m, other;
  m.g.setOutputs({m.mm->result(), other.mm->result()});
  try {
    verify(m.g);
    ADD_FAILURE() << "verify accepted an output from another graph";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("output 1 is not a value defined in graph @f"), std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace loupe
