// The fusion partition's convexity check, which the memory plan relies on: a fused group must
// be one step, so collapsing groups must never create a cycle.
#include <gtest/gtest.h>

#include "compiler/ops/verifier.h"
#include "compiler/pass/fusion_group.h"

namespace loupe {
namespace {

Value* op(Graph& g, const std::string& name, std::vector<Value*> operands) {
  TensorType t;
  t.shape = {4};
  Node* n = g.createNode("test.op", std::move(operands), {Type(t)});
  n->result()->setName(name);
  return n->result();
}

TEST(FusionPartition, MergeThroughAnotherGroupIsRefused) {
  // p feeds x and y; a feeds x; y feeds b. Once {p, x, y} is a group, {a, b} would read the
  // group's output y while feeding its input x: collapsed, the two groups form a cycle.
  Graph g;
  TensorType t;
  t.shape = {4};
  Value* in = g.addInput(t, "in");
  Value* p = op(g, "p", {in});
  Value* a = op(g, "a", {in});
  Value* x = op(g, "x", {p, a});
  Value* y = op(g, "y", {p});
  Value* b = op(g, "b", {a, y});
  g.setOutputs({x, b});

  FusionPartition partition(g);
  auto group = [&](Value* v) { return partition.groupOf(v->definingNode()); };
  ASSERT_TRUE(partition.canMerge(group(a), group(b))) << "alone, a and b form a convex pair";
  partition.merge(group(p), group(x));
  partition.merge(group(p), group(y));
  EXPECT_FALSE(partition.canMerge(group(a), group(b)));
  EXPECT_EQ(partition.materialize("pointwise"), 1);
  EXPECT_NO_THROW(verify(g));
}

TEST(FusionPartition, PathThroughAnOutsideNodeIsRefused) {
  Graph g;
  TensorType t;
  t.shape = {4};
  Value* in = g.addInput(t, "in");
  Value* a = op(g, "a", {in});
  Value* outside = op(g, "outside", {a});
  Value* c = op(g, "c", {a, outside});
  g.setOutputs({c});

  FusionPartition partition(g);
  EXPECT_FALSE(partition.canMerge(partition.groupOf(a->definingNode()),
                                  partition.groupOf(c->definingNode())));
}

TEST(FusionPartition, CollapsedGroupYieldsOnlyValuesUsedOutside) {
  Graph g;
  TensorType t;
  t.shape = {4};
  Value* in = g.addInput(t, "in");
  Value* a = op(g, "a", {in});
  Value* b = op(g, "b", {a});
  Value* c = op(g, "c", {b, in});
  g.setOutputs({c, a});

  Node* fused =
      createFusedGroup({c->definingNode(), a->definingNode(), b->definingNode()}, "pointwise");
  ASSERT_EQ(fused->numOperands(), 1u);
  EXPECT_EQ(fused->operand(0), in);
  ASSERT_EQ(fused->numResults(), 2u); // a (a graph output) and c; b stays inside
  EXPECT_EQ(fused->result(0)->name(), "a");
  EXPECT_EQ(fused->result(1)->name(), "c");
  EXPECT_EQ(g.outputs(), (std::vector<Value*>{fused->result(1), fused->result(0)}));
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_NO_THROW(verify(g));
}

} // namespace
} // namespace loupe
