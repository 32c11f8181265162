#include <gtest/gtest.h>

#include "compiler/ops/graph_builder.h"
#include "compiler/pass/pass.h"
#include "passes/pipeline.h"

namespace loupe {
namespace {

TensorType f32(Shape shape) {
  TensorType t;
  t.shape = std::move(shape);
  return t;
}

// An unregistered op: memory planning gives its result a buffer like any other computation.
Value* compute(Graph& g, std::string name, std::vector<Value*> operands, TensorType type) {
  Node* n = g.createNode("test.compute", std::move(operands), {Type(std::move(type))});
  n->result()->setName(std::move(name));
  return n->result();
}

MemoryPlan runMemoryPlanning(Graph& g) {
  PipelineOptions options;
  PassInstrumentation none;
  Plan plan;
  PassContext ctx(options, none, plan);
  createMemoryPlanningPass()->run(g, ctx);
  return plan.memory;
}

const BufferAssignment* bufferOf(const MemoryPlan& plan, const std::string& value) {
  for (const auto& b : plan.buffers)
    if (b.value == value) return &b;
  return nullptr;
}

Value* permute(Graph& g, Value* v) {
  AttrMap dims;
  dims.set("dims", IntList{1, 0});
  Value* p = GraphBuilder(g, nullptr).op("aten.permute", {v}, dims);
  p->setName("p");
  return p;
}

TEST(MemoryPlanning, ViewExtendsTheLifetimeOfItsBase) {
  Graph g;
  Value* x = g.addInput(f32({4, 8}), "x");
  Value* a = compute(g, "a", {x}, f32({4, 8})); // step 0: 128 bytes
  Value* p = permute(g, a);                     // step 1: view of a
  compute(g, "b", {x}, f32({16, 8}));           // step 2: 512 bytes, unused
  Value* c = compute(g, "c", {p}, f32({8, 4})); // step 3: reads a through p
  Value* d = compute(g, "d", {c}, f32({8, 4})); // step 4
  g.setOutputs({d});

  MemoryPlan plan = runMemoryPlanning(g);
  EXPECT_EQ(bufferOf(plan, "p"), nullptr) << "a view gets no buffer of its own";
  ASSERT_NE(bufferOf(plan, "a"), nullptr);
  EXPECT_EQ(bufferOf(plan, "a")->firstUse, 0);
  EXPECT_EQ(bufferOf(plan, "a")->lastUse, 3);
  // Step 2 holds a (128) and b (512); without the view, a would be dead by then. The output d
  // (128) is handed to the caller, outside the arena.
  EXPECT_TRUE(plan.concrete);
  EXPECT_EQ(plan.arenaBytes, SymExpr(640));
  EXPECT_EQ(plan.outputBytes, SymExpr(128));
  EXPECT_EQ(plan.peakBytes, SymExpr(640 + 128));
  EXPECT_NE(bufferOf(plan, "a")->offset, bufferOf(plan, "b")->offset);
}

TEST(MemoryPlanning, GraphOutputsLiveToTheEndAndInputsStayOutOfTheArena) {
  Graph g;
  Value* x = g.addInput(f32({4, 8}), "x");
  Value* early = compute(g, "early", {x}, f32({4, 8})); // an output computed first
  Value* tmp = compute(g, "tmp", {x}, f32({4, 8}));
  Value* late = compute(g, "late", {tmp}, f32({4, 8}));
  g.setOutputs({early, late});

  MemoryPlan plan = runMemoryPlanning(g);
  const BufferAssignment* e = bufferOf(plan, "early");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->graphOutput);
  EXPECT_EQ(e->lastUse, 2);
  const BufferAssignment* in = bufferOf(plan, "x");
  ASSERT_NE(in, nullptr);
  EXPECT_TRUE(in->graphInput);
  EXPECT_EQ(in->offset, -1);
  // Only tmp is in the arena: the outputs are handed to the caller, x is the caller's.
  EXPECT_EQ(e->offset, -1);
  EXPECT_EQ(bufferOf(plan, "late")->offset, -1);
  EXPECT_EQ(bufferOf(plan, "tmp")->offset, 0);
  EXPECT_EQ(plan.arenaBytes, SymExpr(128));
  EXPECT_EQ(plan.outputBytes, SymExpr(2 * 128));
  EXPECT_EQ(plan.peakBytes, SymExpr(3 * 128));
}

TEST(MemoryPlanning, OutputsThatCannotBeHandedOutAsTheyAreCountAsCopies) {
  Graph g;
  Value* x = g.addInput(f32({4, 8}), "x");
  Value* a = compute(g, "a", {x}, f32({4, 8}));
  Value* p = permute(g, x); // a view of an input: copied
  // x itself (the caller's tensor, free), a once (its own allocation), a again (a copy), p.
  g.setOutputs({x, a, a, p});

  MemoryPlan plan = runMemoryPlanning(g);
  EXPECT_EQ(plan.arenaBytes, SymExpr(0));
  EXPECT_EQ(plan.outputBytes, SymExpr(3 * 128));
  EXPECT_EQ(plan.peakBytes, SymExpr(3 * 128));
}

TEST(MemoryPlanning, ViewOfAnOutputKeepsItsBaseToTheEnd) {
  Graph g;
  Value* x = g.addInput(f32({4, 8}), "x");
  Value* a = compute(g, "a", {x}, f32({4, 8}));
  Value* p = permute(g, a);
  compute(g, "later", {x}, f32({4, 8}));
  g.setOutputs({p});

  MemoryPlan plan = runMemoryPlanning(g);
  const BufferAssignment* base = bufferOf(plan, "a");
  ASSERT_NE(base, nullptr);
  EXPECT_TRUE(base->graphOutput);
  EXPECT_EQ(base->lastUse, 2);
}

TEST(MemoryPlanning, SymbolicSizesGiveASymbolicPeakAndNoOffsets) {
  Graph g;
  SymExpr s0 = SymExpr::symbol("s0");
  Value* x = g.addInput(f32({s0, 8}), "x");
  Value* a = compute(g, "a", {x}, f32({s0, 8}));
  Value* b = compute(g, "b", {a}, f32({s0, 8}));
  g.setOutputs({b});

  MemoryPlan plan = runMemoryPlanning(g);
  EXPECT_FALSE(plan.concrete);
  EXPECT_EQ(bufferOf(plan, "a")->bytes, 32 * s0);
  EXPECT_EQ(bufferOf(plan, "a")->offset, -1);
  EXPECT_EQ(plan.arenaBytes, 32 * s0); // a; b is the output
  EXPECT_EQ(plan.peakBytes, 64 * s0);
}

} // namespace
} // namespace loupe
