// The .lir format is lossless: parsing printed text rebuilds the same graph, and printing it
// again gives the same bytes.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "random_graph.h"

namespace loupe {
namespace {

// Attribute equality where NaN equals NaN: the format keeps NaN but not its payload or sign.
bool sameAttrs(const AttrMap& a, const AttrMap& b) {
  if (a.values().size() != b.values().size()) return false;
  for (const auto& [name, value] : a.values()) {
    const Attribute* other = b.find(name);
    if (!other || attributeStr(value) != attributeStr(*other) || value.index() != other->index())
      return false;
  }
  return true;
}

// Structural equality: same inputs, ops, operand wiring, attributes, types, locations, bodies.
// Names are compared where the original had one (empty names are numbered when printed).
void expectSameGraph(const Graph& expected, const Graph& actual) {
  ASSERT_EQ(expected.numInputs(), actual.numInputs());
  std::map<const Value*, const Value*> mapped;
  auto map = [&](const Value* from, const Value* to) {
    mapped[from] = to;
    EXPECT_EQ(from->type(), to->type());
    if (!from->name().empty()) {
      EXPECT_EQ(from->name(), to->name());
    }
  };
  for (size_t i = 0; i < expected.numInputs(); ++i)
    map(expected.input(i), actual.input(i));
  auto en = expected.nodes(), an = actual.nodes();
  ASSERT_EQ(en.size(), an.size());
  for (size_t i = 0; i < en.size(); ++i) {
    const Node &e = *en[i], &a = *an[i];
    EXPECT_EQ(e.op(), a.op());
    EXPECT_TRUE(sameAttrs(e.attrs(), a.attrs())) << e.describe();
    EXPECT_EQ(e.loc(), a.loc());
    ASSERT_EQ(e.numOperands(), a.numOperands());
    for (size_t k = 0; k < e.numOperands(); ++k)
      EXPECT_EQ(e.operand(k) ? mapped.at(e.operand(k)) : nullptr, a.operand(k));
    ASSERT_EQ(e.numResults(), a.numResults());
    for (size_t k = 0; k < e.numResults(); ++k)
      map(e.result(k), a.result(k));
    ASSERT_EQ(e.hasBody(), a.hasBody());
    if (e.hasBody()) expectSameGraph(*e.body(), *a.body());
  }
  ASSERT_EQ(expected.outputs().size(), actual.outputs().size());
  for (size_t i = 0; i < expected.outputs().size(); ++i)
    EXPECT_EQ(mapped.at(expected.outputs()[i]), actual.outputs()[i]);
}

void expectRoundTrip(const Graph& g) {
  std::string text = toText(g);
  std::unique_ptr<Graph> parsed;
  try {
    parsed = parseGraph(text);
  } catch (const std::exception& e) {
    FAIL() << e.what() << "\n" << text;
  }
  EXPECT_EQ(toText(*parsed), text);
  expectSameGraph(g, *parsed);
}

// Hand-written text in the canonical spelling must print back unchanged.
void expectPrintsUnchanged(const std::string& text) {
  auto g = parseGraph(text);
  EXPECT_EQ(toText(*g), text);
}

TEST(LirRoundTripTest, TheDocumentedExample) {
  const std::string canonical =
      R"(graph @forward(%x: f32[s0,128], %w: f32[256,128]) -> (f32[s0,256]) {
  %0 = aten.permute(%w) {dims=[1, 0]} : f32[128,256]<strides=[1,128]>
  %1 = aten.mm(%x, %0) : f32[s0,256]  loc("mlp.py":14 "fc1")
  %mean, %rstd = aten.foo(%1, none) {dtype=f32, eps=1e-05, flag=true, mask=[true, false], mode="tanh", opt=none, scales=[0.5, 2.0], sizes=[s0, 2*s0]} : (f32[s0,1], f32[s0,1])
  %2 = loupe.fused(%1, %x) {kind="pointwise"} : f32[s0,256] {
    ^(%a: f32[s0,256], %b: f32[s0,128]):
      %c = aten.gelu(%a) : f32[s0,256]
      yield %c
  }
  return %2
}
)";
  expectPrintsUnchanged(canonical);
  // Floats print in their shortest exact spelling; other spellings of the same value parse.
  std::string longhand = canonical;
  longhand.replace(longhand.find("eps=1e-05"), 9, "eps=1.0e-05");
  EXPECT_EQ(toText(*parseGraph(longhand)), canonical);
}

TEST(LirRoundTripTest, TrickyCorpus) {
  const char* corpus[] = {
      // no inputs, no outputs, a zero-result node
      "graph @empty() -> () {\n  aten._assert(none) {msg=\"a \\\"b\\\" \\\\ \\n \\t \\x01\"} : "
      "()\n  return\n}\n",
      // quoted names, index types, devices, strides with symbols, empty list
      "graph @\"my graph\"(%\"a b\": index<2*s0 + 1>, %\"%\": f16[2]<cuda:1>) -> (f16[2]<cuda:1>, "
      "index<2*s0 + 1>) {\n  %\"q\\\"\" = x(%\"%\") {\"my attr\"=[]} : "
      "f32[s0,4]<strides=[1,s0],cuda:0>\n"
      "  return %\"%\", %\"a b\"\n}\n",
      // awkward floats and ints
      "graph @f() -> () {\n  %0 = c() {a=-0.0, b=5e-324, c=1e+300, d=-inf, e=nan, f=[inf, 0.1, "
      "1.0], "
      "g=9223372036854775807, h=-9223372036854775808, i=((s0 - 3)//2) + 1, j=-(s1%8) + s0**2} : "
      "f32[]\n"
      "  return\n}\n",
      // locations: no module path, empty file, escapes
      "graph @f(%x: bool[0]) -> (bool[0]) {\n  %y = a(%x) : bool[0]  loc(\"m.py\":3)\n"
      "  %z = b(%y) : bool[0]  loc(\"\":0 \"enc.layers.0\")\n"
      "  %w = \"return\"(%z) : bool[0]  loc(\"d\\\\f\\\".py\":-1 \"\\x1f\")\n  return %w\n}\n",
      // nested bodies, multi-result bodies, shadowed names, none operands
      "graph @f(%x: f32[s0]) -> (f32[s0], f32[s0]) {\n  %0, %1 = loupe.fused(%x, none) : (f32[s0], "
      "f32[s0]) {\n"
      "    ^(%x: f32[s0], %1: f32[s0]):\n      %0 = loupe.fused(%x) : f32[s0] {\n        ^(%0: "
      "f32[s0]):\n"
      "          yield %0\n      }\n      yield %0, %x\n  }\n  return %1, %0\n}\n",
  };
  for (const char* text : corpus) {
    SCOPED_TRACE(text);
    expectPrintsUnchanged(text);
    expectRoundTrip(*parseGraph(text));
  }
}

TEST(LirRoundTripTest, EmptyNamesAreNumberedAroundExplicitOnes) {
  Graph g("f");
  Value* a = g.addInput(TensorType{DType::F32, {4}});
  Value* b = g.addInput(TensorType{DType::F32, {4}}, "1");
  Node* n = g.createNode("aten.add.Tensor", {a, b}, {TensorType{DType::F32, {4}}});
  g.setOutputs({n->result()});
  EXPECT_EQ(toText(g), "graph @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {\n"
                       "  %2 = aten.add.Tensor(%0, %1) : f32[4]\n  return %2\n}\n");
  expectRoundTrip(g);
}

TEST(LirRoundTripTest, LocationsCanBeLeftOut) {
  auto g = parseGraph("graph @f() -> () {\n  %0 = a() : f32[]  loc(\"m.py\":3)\n  return\n}\n");
  EXPECT_EQ(toText(*g, PrintOptions{.locations = false}),
            "graph @f() -> () {\n  %0 = a() : f32[]\n  return\n}\n");
}

TEST(LirRoundTripTest, ContiguousStridesPrintAsNoStrides) {
  Graph g("f");
  TensorType t{DType::F32, {SymExpr::symbol("s0"), 4}};
  t.strides = Shape{4, 1};
  g.setOutputs({g.addInput(t, "x")});
  EXPECT_EQ(toText(g), "graph @f(%x: f32[s0,4]) -> (f32[s0,4]) {\n  return %x\n}\n");
}

TEST(LirRoundTripTest, AModuleHoldsSeveralGraphsAndComments) {
  auto graphs = parseModule("// leading comment\ngraph @a() -> () { return } // trailing\n"
                            "graph @b(%x: i64[]) -> (i64[]) {\n  // inside\n  return %x\n}\n");
  ASSERT_EQ(graphs.size(), 2u);
  EXPECT_EQ(graphs[0]->name(), "a");
  EXPECT_EQ(graphs[1]->name(), "b");
}

TEST(LirRoundTripTest, TwoHundredRandomGraphs) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expectRoundTrip(*testing::randomGraph(seed));
    if (HasFatalFailure()) return;
  }
}

} // namespace
} // namespace loupe
