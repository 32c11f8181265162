// Node matching: two compiles of the same code pair node for node whatever their shapes and
// value names; inserted, deleted and reordered nodes leave the rest paired.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compiler/ir/parser.h"
#include "inspector/diff/node_matcher.h"

namespace loupe::diff {
namespace {

// Each pair as "name in A -> name in B" (a node is named by its first result).
std::map<std::string, std::string> pairedNames(const NodeMatching& matching) {
  std::map<std::string, std::string> out;
  for (const auto& [a, b] : matching.pairs)
    out.emplace(a->result()->name(), b->result()->name());
  return out;
}

std::vector<std::string> names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* node : nodes)
    out.push_back(node->result()->name());
  return out;
}

// Each node of `a` paired with the node of the same name.
std::map<std::string, std::string> identity(const Graph& a) {
  std::map<std::string, std::string> out;
  walk(a, [&](Node& node) { out.emplace(node.result()->name(), node.result()->name()); });
  return out;
}

void expectIdentity(const Graph& a, const NodeMatching& matching) {
  EXPECT_EQ(pairedNames(matching), identity(a));
  EXPECT_TRUE(matching.onlyInA.empty()) << ::testing::PrintToString(names(matching.onlyInA));
  EXPECT_TRUE(matching.onlyInB.empty()) << ::testing::PrintToString(names(matching.onlyInB));
}

// A small MLP block with the batch size spelled B.
std::string mlp(const std::string& batch) {
  std::string text = R"(
graph @forward(%x: f32[B,64], %w1: f32[64,256], %w2: f32[256,64]) -> (f32[B,64]) {
  %fc1 = aten.mm(%x, %w1) : f32[B,256]  loc("mlp.py":14 "fc1")
  %act = aten.gelu(%fc1) : f32[B,256]  loc("mlp.py":15)
  %fc2 = aten.mm(%act, %w2) : f32[B,64]  loc("mlp.py":16 "fc2")
  %res = aten.add.Tensor(%fc2, %x) {alpha=1} : f32[B,64]  loc("mlp.py":17)
  return %res
})";
  for (size_t at; (at = text.find("B,")) != std::string::npos;)
    text.replace(at, 1, batch);
  return text;
}

TEST(NodeMatcherTest, SameCodeAtTwoShapesMatchesFully) {
  auto a = parseGraph(mlp("8"));
  auto b = parseGraph(mlp("16"));
  NodeMatching matching = matchNodes(*a, *b);
  expectIdentity(*a, matching);
  ASSERT_EQ(matching.pairs.size(), 4u);
  EXPECT_EQ(matching.pairs[0].first, a->nodes()[0]); // in A's order
  EXPECT_EQ(matching.aToB.at(a->nodes()[2]), b->nodes()[2]);
  EXPECT_EQ(matching.bToA.at(b->nodes()[2]), a->nodes()[2]);
}

TEST(NodeMatcherTest, RenamedValuesStillMatch) {
  auto a = parseGraph(R"(
graph @g(%primals_3: f32[8,64], %primals_1: f32[64]) -> (f32[8,64]) {
  %mul = aten.mul.Tensor(%primals_3, %primals_1) : f32[8,64]  loc("m.py":3)
  %exp = aten.exp(%mul) : f32[8,64]  loc("m.py":4)
  %neg = aten.neg(%mul) : f32[8,64]  loc("m.py":5)
  %add = aten.add.Tensor(%exp, %neg) {alpha=1} : f32[8,64]  loc("m.py":6)
  return %add
})");
  auto b = parseGraph(R"(
graph @g(%primals_4: f32[16,64], %primals_2: f32[64]) -> (f32[16,64]) {
  %mul_1 = aten.mul.Tensor(%primals_4, %primals_2) : f32[16,64]  loc("m.py":3)
  %exp_1 = aten.exp(%mul_1) : f32[16,64]  loc("m.py":4)
  %neg_1 = aten.neg(%mul_1) : f32[16,64]  loc("m.py":5)
  %add_1 = aten.add.Tensor(%exp_1, %neg_1) {alpha=1} : f32[16,64]  loc("m.py":6)
  return %add_1
})");
  NodeMatching matching = matchNodes(*a, *b);
  std::map<std::string, std::string> expected{
      {"mul", "mul_1"}, {"exp", "exp_1"}, {"neg", "neg_1"}, {"add", "add_1"}};
  EXPECT_EQ(pairedNames(matching), expected);
}

// A chain with a few branches, used with one node inserted, one deleted, two reordered.
const char* kChain = R"(
graph @f(%x: f32[8,64], %w: f32[64,64]) -> (f32[8,64]) {
  %mm = aten.mm(%x, %w) : f32[8,64]  loc("m.py":3 "fc")
  %r = aten.relu(%mm) : f32[8,64]  loc("m.py":4)
  %e = aten.exp(%r) : f32[8,64]  loc("m.py":5)
  %t = aten.tanh(%r) : f32[8,64]  loc("m.py":6)
  %s = aten.sigmoid(%r) : f32[8,64]  loc("m.py":7)
  %m = aten.mul.Tensor(%e, %t) : f32[8,64]  loc("m.py":8)
  %o = aten.add.Tensor(%m, %s) {alpha=1} : f32[8,64]  loc("m.py":9)
  return %o
})";

TEST(NodeMatcherTest, AnInsertedNodeIsOnlyInB) {
  auto a = parseGraph(kChain);
  auto b = parseGraph(R"(
graph @f(%x: f32[16,64], %w: f32[64,64]) -> (f32[16,64]) {
  %mm = aten.mm(%x, %w) : f32[16,64]  loc("m.py":3 "fc")
  %r = aten.relu(%mm) : f32[16,64]  loc("m.py":4)
  %extra = aten.neg(%r) : f32[16,64]  loc("m.py":10)
  %e = aten.exp(%extra) : f32[16,64]  loc("m.py":5)
  %t = aten.tanh(%r) : f32[16,64]  loc("m.py":6)
  %s = aten.sigmoid(%r) : f32[16,64]  loc("m.py":7)
  %m = aten.mul.Tensor(%e, %t) : f32[16,64]  loc("m.py":8)
  %o = aten.add.Tensor(%m, %s) {alpha=1} : f32[16,64]  loc("m.py":9)
  return %o
})");
  NodeMatching matching = matchNodes(*a, *b);
  EXPECT_EQ(pairedNames(matching), identity(*a));
  EXPECT_TRUE(matching.onlyInA.empty());
  EXPECT_EQ(names(matching.onlyInB), std::vector<std::string>{"extra"});
}

TEST(NodeMatcherTest, ADeletedNodeIsOnlyInA) {
  auto a = parseGraph(kChain);
  auto b = parseGraph(R"(
graph @f(%x: f32[16,64], %w: f32[64,64]) -> (f32[16,64]) {
  %mm = aten.mm(%x, %w) : f32[16,64]  loc("m.py":3 "fc")
  %e = aten.exp(%mm) : f32[16,64]  loc("m.py":5)
  %t = aten.tanh(%mm) : f32[16,64]  loc("m.py":6)
  %s = aten.sigmoid(%mm) : f32[16,64]  loc("m.py":7)
  %m = aten.mul.Tensor(%e, %t) : f32[16,64]  loc("m.py":8)
  %o = aten.add.Tensor(%m, %s) {alpha=1} : f32[16,64]  loc("m.py":9)
  return %o
})");
  NodeMatching matching = matchNodes(*a, *b);
  EXPECT_EQ(names(matching.onlyInA), std::vector<std::string>{"r"});
  EXPECT_TRUE(matching.onlyInB.empty());
  std::map<std::string, std::string> expected{{"mm", "mm"}, {"e", "e"}, {"t", "t"},
                                              {"s", "s"},   {"m", "m"}, {"o", "o"}};
  EXPECT_EQ(pairedNames(matching), expected);
}

TEST(NodeMatcherTest, ReorderedIndependentNodesStillMatch) {
  auto a = parseGraph(kChain);
  auto b = parseGraph(R"(
graph @f(%x: f32[16,64], %w: f32[64,64]) -> (f32[16,64]) {
  %mm = aten.mm(%x, %w) : f32[16,64]  loc("m.py":3 "fc")
  %r = aten.relu(%mm) : f32[16,64]  loc("m.py":4)
  %s = aten.sigmoid(%r) : f32[16,64]  loc("m.py":7)
  %t = aten.tanh(%r) : f32[16,64]  loc("m.py":6)
  %e = aten.exp(%r) : f32[16,64]  loc("m.py":5)
  %m = aten.mul.Tensor(%e, %t) : f32[16,64]  loc("m.py":8)
  %o = aten.add.Tensor(%m, %s) {alpha=1} : f32[16,64]  loc("m.py":9)
  return %o
})");
  expectIdentity(*a, matchNodes(*a, *b));
}

// `layers` identical transformer-like layers applied in sequence, each node named <op><layer>.
std::string stackedLayers(int layers, const std::string& batch, bool modulePaths) {
  std::string text = "graph @f(%h0: f32[" + batch + ",64]";
  for (int i = 0; i < layers; ++i)
    text += ", %w" + std::to_string(i) + ": f32[64,64]";
  text += ") -> (f32[" + batch + ",64]) {\n";
  for (int i = 0; i < layers; ++i) {
    std::string n = std::to_string(i);
    std::string type = " : f32[" + batch + ",64]";
    std::string module = modulePaths ? " \"layers." + n + "\"" : "";
    text += "  %mm" + n + " = aten.mm(%h" + n + ", %w" + n + ")" + type + "  loc(\"layer.py\":10" +
            module + ")\n";
    text += "  %relu" + n + " = aten.relu(%mm" + n + ")" + type + "  loc(\"layer.py\":11" + module +
            ")\n";
    text += "  %h" + std::to_string(i + 1) + " = aten.add.Tensor(%relu" + n + ", %h" + n +
            ") {alpha=1}" + type + "  loc(\"layer.py\":12" + module + ")\n";
  }
  text += "  return %h" + std::to_string(layers) + "\n}\n";
  return text;
}

TEST(NodeMatcherTest, IdenticalLayersMatchLayerByLayer) {
  for (bool modulePaths : {true, false}) {
    SCOPED_TRACE(modulePaths ? "with module paths" : "without module paths");
    auto a = parseGraph(stackedLayers(12, "8", modulePaths));
    auto b = parseGraph(stackedLayers(12, "16", modulePaths));
    expectIdentity(*a, matchNodes(*a, *b));
  }
}

TEST(NodeMatcherTest, IdenticalLayersWithOneNodeRemovedFromTheMiddle) {
  auto a = parseGraph(stackedLayers(12, "8", false));
  std::string textB = stackedLayers(12, "16", false);
  size_t line = textB.find("  %relu5 =");
  textB.erase(line, textB.find('\n', line) + 1 - line);
  textB.replace(textB.find("%relu5"), 6, "%mm5");
  auto b = parseGraph(textB);
  NodeMatching matching = matchNodes(*a, *b);
  EXPECT_EQ(names(matching.onlyInA), std::vector<std::string>{"relu5"});
  EXPECT_TRUE(matching.onlyInB.empty());
  for (const auto& [x, y] : pairedNames(matching))
    EXPECT_EQ(x, y);
}

TEST(NodeMatcherTest, StaticAndDynamicCompilesMatchFully) {
  auto a = parseGraph(mlp("8"));
  std::string dynamic = mlp("s0");
  dynamic.replace(dynamic.find("(%x"), 1, "(%sym_size: index<s0>, ");
  auto b = parseGraph(dynamic);
  ASSERT_EQ(b->numInputs(), 4u);
  expectIdentity(*a, matchNodes(*a, *b));
}

TEST(NodeMatcherTest, FusedGroupsMatchWithTheirBodies) {
  const char* text = R"(
graph @f(%x: f32[B,64], %w: f32[64,64]) -> (f32[B,64]) {
  %mm = aten.mm(%x, %w) : f32[B,64]  loc("m.py":3)
  %g = loupe.fused(%mm, %x) {kind="pointwise"} : f32[B,64] {
    ^(%a: f32[B,64], %b: f32[B,64]):
      %exp = aten.exp(%a) : f32[B,64]  loc("m.py":4)
      %relu = aten.relu(%exp) : f32[B,64]  loc("m.py":5)
      %add = aten.add.Tensor(%relu, %b) {alpha=1} : f32[B,64]  loc("m.py":6)
      yield %add
  }
  return %g
})";
  auto at = [&](const std::string& batch) {
    std::string out = text;
    for (size_t i; (i = out.find("B,")) != std::string::npos;)
      out.replace(i, 1, batch);
    return parseGraph(out);
  };
  auto a = at("8");
  auto b = at("16");
  NodeMatching matching = matchNodes(*a, *b);
  expectIdentity(*a, matching);
  // The group's pair comes before its members'.
  ASSERT_EQ(matching.pairs.size(), 5u);
  EXPECT_EQ(matching.pairs[1].first->op(), "loupe.fused");
  EXPECT_EQ(matching.pairs[2].first->result()->name(), "exp");
}

TEST(NodeMatcherTest, GroupsFusedDifferentlyMatchWhenTheirBodiesOverlap) {
  auto a = parseGraph(R"(
graph @f(%x: f32[8,64]) -> (f32[8,64]) {
  %g = loupe.fused(%x) {kind="pointwise"} : f32[8,64] {
    ^(%a: f32[8,64]):
      %exp = aten.exp(%a) : f32[8,64]  loc("m.py":4)
      %relu = aten.relu(%exp) : f32[8,64]  loc("m.py":5)
      yield %relu
  }
  %t = aten.tanh(%g) : f32[8,64]  loc("m.py":6)
  return %t
})");
  auto b = parseGraph(R"(
graph @f(%x: f32[16,64]) -> (f32[16,64]) {
  %g = loupe.fused(%x) {kind="pointwise"} : f32[16,64] {
    ^(%a: f32[16,64]):
      %exp = aten.exp(%a) : f32[16,64]  loc("m.py":4)
      yield %exp
  }
  %relu = aten.relu(%g) : f32[16,64]  loc("m.py":5)
  %t = aten.tanh(%relu) : f32[16,64]  loc("m.py":6)
  return %t
})");
  NodeMatching matching = matchNodes(*a, *b);
  std::map<std::string, std::string> expected{{"g", "g"}, {"exp", "exp"}, {"t", "t"}};
  EXPECT_EQ(pairedNames(matching), expected);
  EXPECT_EQ(names(matching.onlyInA), std::vector<std::string>{"relu"});
  EXPECT_EQ(names(matching.onlyInB), std::vector<std::string>{"relu"});
  EXPECT_TRUE(matching.onlyInA[0]->graph()->parentNode() != nullptr); // inside A's group
}

TEST(NodeMatcherTest, GroupsWithDisjointBodiesDoNotMatch) {
  auto a = parseGraph(R"(
graph @f(%x: f32[8,64]) -> (f32[8,64]) {
  %g = loupe.fused(%x) : f32[8,64] {
    ^(%a: f32[8,64]):
      %exp = aten.exp(%a) : f32[8,64]  loc("m.py":4)
      yield %exp
  }
  return %g
})");
  auto b = parseGraph(R"(
graph @f(%x: f32[8,64]) -> (f32[8,64]) {
  %g = loupe.fused(%x) : f32[8,64] {
    ^(%a: f32[8,64]):
      %sin = aten.sin(%a) : f32[8,64]  loc("m.py":9)
      yield %sin
  }
  return %g
})");
  NodeMatching matching = matchNodes(*a, *b);
  EXPECT_TRUE(matching.pairs.empty());
  EXPECT_EQ(names(matching.onlyInA), std::vector<std::string>{"g"});
  EXPECT_EQ(names(matching.onlyInB), std::vector<std::string>{"g"});
}

TEST(NodeMatcherTest, DifferentSourceLinesDoNotMatch) {
  auto a = parseGraph(R"(
graph @f(%x: f32[8]) -> (f32[8]) {
  %r = aten.relu(%x) : f32[8]  loc("m.py":4)
  return %r
})");
  auto b = parseGraph(R"(
graph @f(%x: f32[8]) -> (f32[8]) {
  %r = aten.relu(%x) : f32[8]  loc("m.py":7)
  return %r
})");
  NodeMatching matching = matchNodes(*a, *b);
  EXPECT_TRUE(matching.pairs.empty());
  EXPECT_EQ(matching.onlyInA.size(), 1u);
  EXPECT_EQ(matching.onlyInB.size(), 1u);
}

} // namespace
} // namespace loupe::diff
