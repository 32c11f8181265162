// Graph mutation keeps use lists and outputs consistent; clone is a deep, independent copy.
#include "compiler/ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/ir/error.h"
#include "compiler/ir/printer.h"

namespace loupe {
namespace {

TensorType f32(Shape shape) {
  return TensorType{DType::F32, std::move(shape)};
}

size_t countUses(const Value* value, const Node* user) {
  return static_cast<size_t>(std::count(value->users().begin(), value->users().end(), user));
}

TEST(GraphTest, CreateNodeRecordsUsesAndDefiningNodes) {
  Graph g("f");
  Value* x = g.addInput(f32({4}), "x");
  Node* add = g.createNode("aten.add.Tensor", {x, x}, {f32({4})}, {}, {"m.py", 3, "fc"});
  EXPECT_EQ(countUses(x, add), 2u);
  EXPECT_EQ(add->result()->definingNode(), add);
  EXPECT_EQ(add->result()->owningGraph(), &g);
  EXPECT_EQ(x->definingNode(), nullptr);
  EXPECT_EQ(add->graph(), &g);
  EXPECT_EQ(add->loc().line, 3);
}

TEST(GraphTest, CreateNodeBeforeAnotherKeepsOrder) {
  Graph g;
  Value* x = g.addInput(f32({4}), "x");
  Node* last = g.createNode("aten.neg", {x}, {f32({4})});
  Node* first = g.createNode("aten.abs", {x}, {f32({4})}, {}, {}, last);
  EXPECT_EQ(g.nodes(), (std::vector<Node*>{first, last}));
  g.moveBefore(first, nullptr);
  EXPECT_EQ(g.nodes(), (std::vector<Node*>{last, first}));
}

TEST(GraphTest, SetOperandMovesTheUse) {
  Graph g;
  Value* x = g.addInput(f32({4}), "x");
  Value* y = g.addInput(f32({4}), "y");
  Node* n = g.createNode("aten.neg", {x}, {f32({4})});
  n->setOperand(0, y);
  EXPECT_TRUE(x->users().empty());
  EXPECT_EQ(countUses(y, n), 1u);
  n->setOperand(0, nullptr);
  EXPECT_TRUE(y->users().empty());
  EXPECT_EQ(n->operand(0), nullptr);
}

TEST(GraphTest, ReplaceAllUsesWithRewritesOperandsAndOutputs) {
  Graph g;
  Value* x = g.addInput(f32({4}), "x");
  Value* y = g.addInput(f32({4}), "y");
  Node* a = g.createNode("aten.mul.Tensor", {x, x}, {f32({4})});
  Node* b = g.createNode("aten.neg", {x}, {f32({4})});
  g.setOutputs({x, b->result()});
  g.replaceAllUsesWith(x, y);
  EXPECT_FALSE(x->hasUses());
  EXPECT_EQ(countUses(y, a), 2u);
  EXPECT_EQ(countUses(y, b), 1u);
  EXPECT_EQ(g.outputs()[0], y);
  EXPECT_TRUE(y->isGraphOutput());
}

TEST(GraphTest, EraseNodeRefusesWhileResultsAreUsed) {
  Graph g;
  Value* x = g.addInput(f32({4}), "x");
  Node* a = g.createNode("aten.neg", {x}, {f32({4})});
  Node* b = g.createNode("aten.abs", {a->result()}, {f32({4})});
  g.setOutputs({b->result()});
  EXPECT_THROW(g.eraseNode(a), Error);
  g.replaceAllUsesWith(b->result(), x);
  g.eraseNode(b);
  g.eraseNode(a);
  EXPECT_EQ(g.numNodes(), 0u);
  EXPECT_TRUE(x->users().empty());
}

TEST(GraphTest, EraseInputRenumbersTheRest) {
  Graph g;
  Value* x = g.addInput(f32({4}), "x");
  g.addInput(f32({4}), "unused");
  Value* z = g.addInput(f32({4}), "z");
  g.setOutputs({x});
  EXPECT_THROW(g.eraseInput(0), Error);
  g.eraseInput(1);
  ASSERT_EQ(g.numInputs(), 2u);
  EXPECT_EQ(g.input(1), z);
  EXPECT_EQ(z->index(), 1u);
}

std::unique_ptr<Graph> fusedGraph() {
  auto g = std::make_unique<Graph>("f");
  Value* x = g->addInput(f32({SymExpr::symbol("s0")}), "x");
  AttrMap attrs;
  attrs.set("kind", std::string("pointwise"));
  Node* fused = g->createNode("loupe.fused", {x}, {x->type()}, attrs, {"a.py", 1, "blk"});
  auto body = std::make_unique<Graph>();
  Value* a = body->addInput(x->type(), "a");
  Node* inner = body->createNode("aten.neg", {a}, {a->type()});
  body->setOutputs({inner->result()});
  fused->setBody(std::move(body));
  fused->result()->setName("y");
  g->setOutputs({fused->result()});
  return g;
}

TEST(GraphTest, CloneIsADeepCopyIncludingBodies) {
  auto original = fusedGraph();
  auto copy = original->clone();
  EXPECT_EQ(toText(*copy), toText(*original));
  EXPECT_EQ(copy->numNodesRecursive(), 2u);

  Node* fused = copy->nodes()[0];
  EXPECT_NE(fused->body(), original->nodes()[0]->body());
  EXPECT_EQ(fused->body()->parentNode(), fused);
  EXPECT_EQ(fused->operand(0), copy->input(0));
  EXPECT_EQ(copy->outputs()[0], fused->result());

  // Mutating the copy leaves the original alone.
  fused->body()->nodes()[0]->setOp("aten.abs");
  fused->attrs().set("kind", std::string("reduction"));
  EXPECT_EQ(original->nodes()[0]->body()->nodes()[0]->op(), "aten.neg");
  EXPECT_EQ(original->nodes()[0]->attrs().getString("kind"), "pointwise");
}

TEST(GraphTest, WalkVisitsBodiesAfterTheirFusedNode) {
  auto g = fusedGraph();
  std::vector<std::string> ops;
  walk(*g, [&](Node& n) { ops.push_back(n.op()); });
  EXPECT_EQ(ops, (std::vector<std::string>{"loupe.fused", "aten.neg"}));
}

} // namespace
} // namespace loupe
