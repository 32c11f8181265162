// Test graphs as the compiler would hand them to the generators: parsed from .lir text and run
// through the default pipeline (decomposition, fusion, ...), or only the named passes; and test
// graphs both devices' generator tests compile.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "passes/pipeline.h"

namespace loupe::testing {

inline std::unique_ptr<Graph>
fusedGraph(const std::string& text, const std::vector<std::string>& passes = defaultPipeline()) {
  auto graph = parseGraph(text);
  PipelineOptions options;
  PassInstrumentation silent;
  Plan plan;
  PassContext context(options, silent, plan);
  PassManager manager;
  addPasses(manager, passes);
  manager.run(*graph, context);
  return graph;
}

// The graph's one loupe.fused node (null without one; a failure when there are more).
inline const Node* onlyFusedNode(const Graph& graph) {
  const Node* fused = nullptr;
  for (const Node* node : graph.nodes())
    if (node->op() == "loupe.fused") {
      EXPECT_EQ(fused, nullptr) << "more than one fused group";
      fused = node;
    }
  return fused;
}

// A gather at constant indices, every one within its dim (what constant folding leaves of
// upsampling's index arithmetic): read without a clamp (GroupAnalysis::gatherIndicesInBounds).
inline const char* const kConstantIndexGatherGraph = R"(
graph @constant_gather(%x: f32[3,4], %z: f32[3,6]) -> (f32[3,6]) {
  %i = loupe.constant() {data=[3.0, 0.0, 2.0, 3.0, 1.0, 0.0], dtype=i64, shape=[6]} : i64[6]
  %g = aten._unsafe_index.Tensor(%x, none, %i) : f32[3,6]
  %y = aten.add.Tensor(%g, %z) {alpha=1} : f32[3,6]
  return %y
})";

// Bilinear upsampling of relu(x) as torch decomposes it (upsample_bilinear2d): four gathers of
// x's neighbours, weighted along the columns then the rows. The input's gathered height is
// symbolic; the row indices are i64, the column ones i32. After fusion, the relu is one kernel and
// the gathers and their weighted sum another.
inline const char* const kBilinearUpsamplingGraph = R"(
graph @bilinear_upsampling(%x: f32[2,3,s0,5], %h0: i64[8,1], %h1: i64[8,1], %w0: i32[10], %w1: i32[10], %lh: f32[8,1], %lw: f32[10]) -> (f32[2,3,8,10]) {
  %r = aten.relu(%x) : f32[2,3,s0,5]
  %a = aten._unsafe_index.Tensor(%r, none, none, %h0, %w0) : f32[2,3,8,10]
  %b = aten._unsafe_index.Tensor(%r, none, none, %h0, %w1) : f32[2,3,8,10]
  %c = aten._unsafe_index.Tensor(%r, none, none, %h1, %w0) : f32[2,3,8,10]
  %d = aten._unsafe_index.Tensor(%r, none, none, %h1, %w1) : f32[2,3,8,10]
  %ba = aten.sub.Tensor(%b, %a) {alpha=1} : f32[2,3,8,10]
  %bw = aten.mul.Tensor(%ba, %lw) : f32[2,3,8,10]
  %top = aten.add.Tensor(%a, %bw) {alpha=1} : f32[2,3,8,10]
  %dc = aten.sub.Tensor(%d, %c) {alpha=1} : f32[2,3,8,10]
  %dw = aten.mul.Tensor(%dc, %lw) : f32[2,3,8,10]
  %bottom = aten.add.Tensor(%c, %dw) {alpha=1} : f32[2,3,8,10]
  %diff = aten.sub.Tensor(%bottom, %top) {alpha=1} : f32[2,3,8,10]
  %rows = aten.mul.Tensor(%diff, %lh) : f32[2,3,8,10]
  %y = aten.add.Tensor(%top, %rows) {alpha=1} : f32[2,3,8,10]
  return %y
})";

} // namespace loupe::testing
