// Candidates of a reduction: a dropped producer's value becomes an input fed with what the whole
// graph computed; unread inputs are left out; outputs are the kept results nothing kept reads.

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ops/verifier.h"
#include "inspector/bisect/bisector.h"
#include "inspector/reduce/intermediate_values.h"
#include "inspector/reduce/node_subset.h"
#include "reduce_test_graph.h"

namespace loupe {
namespace {

TEST(NodeSubset, ADroppedProducerBecomesAnInputWithItsValue) {
  auto graph = testing::reduceGraph();
  auto inputs = testing::reduceInputs();
  auto values = computeIntermediateValues(*graph, inputs);
  std::vector<Node*> nodes = graph->nodes();
  ASSERT_EQ(values.size(), nodes.size());
  // Keep v3 = add(v2, y) and v4 = mul(v3, y) (nodes 4 and 5; node 0 is the constant).
  std::vector<bool> keep(nodes.size(), false);
  keep[4] = keep[5] = true;
  NodeSubset subset = extractNodeSubset(*graph, keep, inputs, values);
  verify(*subset.graph);
  ASSERT_EQ(subset.graph->numNodes(), 2u);
  ASSERT_EQ(subset.graph->numInputs(), 2u); // v2 (dropped producer) and y; x is unread
  EXPECT_EQ(subset.graph->input(0)->name(), "v2");
  EXPECT_EQ(subset.graph->input(1)->name(), "y");
  EXPECT_TRUE(subset.graph->input(0)->tensorType().shape[0].isSymbol());
  ASSERT_EQ(subset.graph->outputs().size(), 1u);
  EXPECT_EQ(subset.graph->outputs()[0]->name(), "v4");

  // Run as written, the subset reproduces the whole graph's value of v4 exactly.
  std::vector<Tensor> out = runReference(*subset.graph, subset.inputs);
  const Tensor& expected = values.at(nodes[5]->result());
  ASSERT_EQ(out[0].shape(), expected.shape());
  for (int64_t i = 0; i < expected.numel(); ++i)
    EXPECT_EQ(out[0].at(i), expected.at(i));
}

TEST(NodeSubset, KeepsAWholeGraphOutputEvenWhenAKeptNodeReadsIt) {
  auto graph = testing::reduceGraph();
  auto inputs = testing::reduceInputs();
  auto values = computeIntermediateValues(*graph, inputs);
  std::vector<bool> keep(graph->numNodes(), false);
  keep[keep.size() - 2] = keep.back() = true; // v21 (an output) and its sum
  NodeSubset subset = extractNodeSubset(*graph, keep, inputs, values);
  verify(*subset.graph);
  ASSERT_EQ(subset.graph->outputs().size(), 2u);
  EXPECT_EQ(subset.graph->outputs()[0]->name(), "v21");
  EXPECT_EQ(subset.graph->outputs()[1]->name(), "total");
}

} // namespace
} // namespace loupe
