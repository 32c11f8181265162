// Row groups (passes/row_fusion.cpp: reductions over the same rows and the work that reads their
// results back along the row) as generated kernels against the reference: attention's softmax
// with its scale and causal mask taken in, at row lengths on both sides of the reduction lanes
// and of every vector width, with rows the mask fills entirely, through strided views, in f32
// and f64; and which values the kernel keeps in its row buffers (kernel_emitter.cpp) instead of
// computing them again in a later pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

AttrMap lastDim() {
  AttrMap attrs;
  attrs.set("dim", IntList{SymExpr(-1)});
  attrs.set("keepdim", true);
  return attrs;
}

AttrMap scalar(const std::string& name, double value) {
  AttrMap attrs;
  attrs.set(name, value);
  return attrs;
}

// softmax(masked_fill(x * 0.125, mask, -inf)) over the last dim, as one row group: the max, the
// sum of exp(v - max), then exp(v - max) / sum. The mask is [rows, n], broadcast over the
// leading dims as attention's causal mask is.
std::unique_ptr<Graph> maskedSoftmax(DType dtype, const Shape& shape) {
  auto graph = std::make_unique<Graph>("masked_softmax");
  Shape maskShape(shape.end() - 2, shape.end());
  std::vector<Value*> outer = {graph->addInput(tensorType(dtype, shape), "x"),
                               graph->addInput(tensorType(DType::Bool, maskShape), "mask")};
  auto body = std::make_unique<Graph>("body");
  Value* x = body->addInput(tensorType(dtype, shape), "bx");
  Value* mask = body->addInput(tensorType(DType::Bool, maskShape), "bmask");
  GraphBuilder b(*body, nullptr);
  Value* scaled = b.op("aten.mul.Scalar", {x}, scalar("other", 0.125));
  Value* v = b.op("aten.masked_fill.Scalar", {scaled, mask},
                  scalar("value", -std::numeric_limits<double>::infinity()));
  Value* max = b.op("aten.amax", {v}, lastDim());
  Value* e = b.op("aten.exp", {b.op("aten.sub.Tensor", {v, max}, scalar("alpha", 1.0))});
  Value* sum = b.op("aten.sum.dim_IntList", {e}, lastDim());
  body->setOutputs({b.op("aten.div.Tensor", {e, sum})});
  Node* fused = addFused(*graph, std::move(body), outer, "row");
  graph->setOutputs(fused->results());
  return graph;
}

// A causal mask (true above the diagonal, where attention may not look) whose first
// `maskedRows` rows are masked whole: their softmax is NaN, as in torch.
Tensor causalMask(int64_t rows, int64_t n, int64_t maskedRows) {
  Tensor mask = randomTensor(DType::Bool, {rows, n}, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      mask.set(r * n + i, r < maskedRows || i > r ? 1.0 : 0.0);
  return mask;
}

TEST(RowKernel, MaskedSoftmaxMatchesTheReferenceAtEveryRowLength) {
  for (DType dtype : {DType::F32, DType::F64})
    // 2 and 7: shorter than the lanes; 8 and 16: whole lanes; 37 and 257: a tail after them
    // (257 rows make the kernel parallel, above its threshold).
    for (int64_t n : {2, 7, 8, 16, 37, 257}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " n = " + std::to_string(n));
      Shape shape{2, 3, SymExpr(n), SymExpr(n)};
      auto graph = maskedSoftmax(dtype, shape);
      expectGeneratedMatchesReference(
          *graph, {randomTensor(dtype, {2, 3, n, n}, 1), causalMask(n, n, std::min<int64_t>(n, 2))},
          dtype == DType::F32 ? 1e-5 : 1e-12);
    }
}

TEST(RowKernel, MaskedSoftmaxReadsStridedInputsThroughTheGeneralLoop) {
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dtype));
    auto graph = maskedSoftmax(dtype, {2, 3, 19, 19});
    expectGeneratedMatchesReference(
        *graph, {transposedRandom(dtype, {2, 3, 19, 19}, 2), causalMask(19, 19, 1)},
        dtype == DType::F32 ? 1e-5 : 1e-12);
  }
}

// The masked, scaled scores (two ops) and exp(v - max) (two more) are each read by a later pass,
// so each has a row buffer; the division, stored by the last pass, needs none.
TEST(RowKernel, KeepsValuesOfTwoOrMoreOpsThatALaterPassReadsInRowBuffers) {
  auto graph = maskedSoftmax(DType::F32, {2, 3, 19, 19});
  std::string source = generateCpuKernel(*graph->nodes().front(), "softmax").source;
  EXPECT_NE(source.find("row0[i3 + l] = "), std::string::npos) << source;
  EXPECT_NE(source.find("row1[i3 + l] = "), std::string::npos) << source;
  EXPECT_EQ(source.find("row2"), std::string::npos) << source;
  EXPECT_NE(source.find("#pragma omp parallel if"), std::string::npos) << source;
  EXPECT_NE(source.find("free(row1);"), std::string::npos) << source;
}

// Layer norm's x - mean, one op, is computed again rather than kept: no row buffer.
TEST(RowKernel, ComputesOneOpValuesAgainInsteadOfKeepingThem) {
  Graph graph("layer_norm");
  Value* outer = graph.addInput(tensorType(DType::F32, {6, 37}), "x");
  auto body = std::make_unique<Graph>("body");
  Value* x = body->addInput(tensorType(DType::F32, {6, 37}), "bx");
  GraphBuilder b(*body, nullptr);
  Value* mean = b.op("aten.mean.dim", {x}, lastDim());
  Value* centered = b.op("aten.sub.Tensor", {x, mean}, scalar("alpha", 1.0));
  Value* var = b.op("aten.mean.dim", {b.op("aten.mul.Tensor", {centered, centered})}, lastDim());
  body->setOutputs({b.op("aten.div.Tensor", {centered, var})});
  Node* fused = addFused(graph, std::move(body), {outer}, "row");
  graph.setOutputs(fused->results());
  std::string source = generateCpuKernel(*graph.nodes().front(), "norm").source;
  EXPECT_EQ(source.find("row0"), std::string::npos) << source;
  expectGeneratedMatchesReference(graph, {randomTensor(DType::F32, {6, 37}, 3)});
}

} // namespace
} // namespace loupe::testing
