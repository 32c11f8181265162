// The bytes and FLOPs model (compiler/ops/op_cost.h) on small graphs whose arithmetic can be
// redone by hand: matmuls, a convolution and its backward, a fused group, symbolic sizes.
#include "compiler/ops/op_cost.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"

namespace loupe {
namespace {

// The cost of the node defining the graph's first output, at `bindings`.
OpCost costOfOutput(const std::string& lir, const SymbolBindings& bindings = {}) {
  auto graph = parseGraph(lir);
  return opCost(*graph->outputs().front()->definingNode(), bindings, OpRegistry::global());
}

TEST(OpCost, MatmulIsTwoMNK) {
  OpCost cost = costOfOutput(R"(graph @mm(%a: f32[4,8], %b: f32[8,16]) -> (f32[4,16]) {
  %c = aten.mm(%a, %b) : f32[4,16]
  return %c
})");
  EXPECT_EQ(cost.flops, 2.0 * 4 * 16 * 8);
  EXPECT_EQ(cost.bytes, (4 * 8 + 8 * 16 + 4 * 16) * 4);
}

TEST(OpCost, BatchedAndBiasedMatmulsCountTheBatchAndNotTheBias) {
  OpCost bmm = costOfOutput(R"(graph @bmm(%a: f16[3,4,8], %b: f16[3,8,5]) -> (f16[3,4,5]) {
  %c = aten.bmm(%a, %b) : f16[3,4,5]
  return %c
})");
  EXPECT_EQ(bmm.flops, 2.0 * 3 * 4 * 5 * 8);
  EXPECT_EQ(bmm.bytes, (3 * 4 * 8 + 3 * 8 * 5 + 3 * 4 * 5) * 2);
  OpCost addmm =
      costOfOutput(R"(graph @addmm(%bias: f32[16], %a: f32[4,8], %b: f32[8,16]) -> (f32[4,16]) {
  %c = aten.addmm(%bias, %a, %b) : f32[4,16]
  return %c
})");
  EXPECT_EQ(addmm.flops, 2.0 * 4 * 16 * 8);
  EXPECT_EQ(addmm.bytes, (16 + 4 * 8 + 8 * 16 + 4 * 16) * 4);
}

TEST(OpCost, ConvolutionIsTwoNCoutHoutWoutCinKhKw) {
  // groups=2: each output channel reads Cin/groups = 2 input channels.
  OpCost cost = costOfOutput(R"(graph @conv(%x: f32[2,4,8,8], %k: f32[6,2,3,3]) -> (f32[2,6,6,6]) {
  %c = aten.convolution(%x, %k, none) {stride=[1,1], padding=[0,0], dilation=[1,1], transposed=false, output_padding=[0,0], groups=2} : f32[2,6,6,6]
  return %c
})");
  EXPECT_EQ(cost.flops, 2.0 * 2 * 6 * 6 * 6 * 2 * 3 * 3);
  EXPECT_EQ(cost.bytes, (2 * 4 * 8 * 8 + 6 * 2 * 3 * 3 + 2 * 6 * 6 * 6) * 4);
}

TEST(OpCost, ConvolutionBackwardCountsEachGradientItComputes) {
  std::string lir =
      R"(graph @conv_bw(%g: f32[1,4,6,6], %x: f32[1,2,8,8], %k: f32[4,2,3,3]) -> (f32[1,2,8,8]) {
  %gi, %gw, %gb = aten.convolution_backward(%g, %x, %k) {bias_sizes=[4], stride=[1,1], padding=[0,0], dilation=[1,1], transposed=false, output_padding=[0,0], groups=1, output_mask=[MASK]} : (f32[1,2,8,8], f32[4,2,3,3], f32[4])
  return %gi
})";
  auto withMask = [&](const std::string& mask) {
    std::string text = lir;
    text.replace(text.find("MASK"), 4, mask);
    return costOfOutput(text).flops;
  };
  double forward = 2.0 * 1 * 4 * 6 * 6 * 2 * 3 * 3;
  EXPECT_EQ(withMask("true, false, false"), forward);
  EXPECT_EQ(withMask("true, true, false"), 2 * forward);
  EXPECT_EQ(withMask("true, true, true"), 2 * forward + 1 * 4 * 6 * 6);
}

TEST(OpCost, FusedPointwiseIsOnePerOpPerElementAndReadsEachInputOnce) {
  // Three ops over [s0, 8]; %x is read twice inside the group but moved once.
  OpCost cost = costOfOutput(R"(graph @chain(%x: f32[s0,8], %y: f32[s0,8]) -> (f32[s0,8]) {
  %2 = loupe.fused(%x, %y) {kind="pointwise"} : f32[s0,8] {
    ^(%a: f32[s0,8], %b: f32[s0,8]):
      %0 = aten.mul.Tensor(%a, %b) : f32[s0,8]
      %1 = aten.add.Tensor(%0, %a) : f32[s0,8]
      %3 = aten.relu(%1) : f32[s0,8]
      yield %3
  }
  return %2
})",
                             {{"s0", 5}});
  EXPECT_EQ(cost.flops, 3.0 * 5 * 8);
  EXPECT_EQ(cost.bytes, 3 * 5 * 8 * 4);
}

TEST(OpCost, ReductionsCountTheirInputAndViewsNothing) {
  OpCost sum = costOfOutput(R"(graph @sum(%x: f32[4,8]) -> (f32[4]) {
  %s = aten.sum.dim_IntList(%x) {dim=[1], keepdim=false} : f32[4]
  return %s
})");
  EXPECT_EQ(sum.flops, 32.0);
  EXPECT_EQ(sum.bytes, (32 + 4) * 4);
  OpCost view = costOfOutput(R"(graph @t(%x: f32[4,8]) -> (f32[8,4]) {
  %t = aten.permute(%x) {dims=[1,0]} : f32[8,4]
  return %t
})");
  EXPECT_EQ(view, OpCost{});
}

TEST(OpCost, AttentionIsTwoProductsPerQueryKeyPairByNameFallbacksIncluded) {
  // cuDNN attention as the aten fallback a CUDA graph runs (not in the registry): 2 batches, 4
  // query heads over 2 key/value heads, 16 queries, 32 keys, head dim 8, value dim 8.
  OpCost cudnn = costOfOutput(
      R"(graph @cudnn(%q: bf16[2,4,16,8]<cuda:0>, %k: bf16[2,2,32,8]<cuda:0>, %v: bf16[2,2,32,8]<cuda:0>) -> (bf16[2,4,16,8]<cuda:0>) {
  %o, %lse = aten._scaled_dot_product_cudnn_attention(%q, %k, %v) {scale=0.125} : (bf16[2,4,16,8]<cuda:0>, f32[2,4,16,1]<cuda:0>)
  return %o
})");
  EXPECT_EQ(cudnn.flops, 2.0 * (2 * 4 * 16) * 32 * (8 + 8));
  // Loupe's own CPU kernel, causal: half the pairs; its backward five products where the
  // forward has two.
  OpCost causal = costOfOutput(
      R"(graph @cpu(%q: f32[1,2,32,4], %k: f32[1,2,32,4], %v: f32[1,2,32,4]) -> (f32[1,2,32,4]) {
  %o, %lse = aten._scaled_dot_product_flash_attention_for_cpu(%q, %k, %v) {dropout_p=0.0, is_causal=true} : (f32[1,2,32,4], f32[1,2,32])
  return %o
})");
  EXPECT_EQ(causal.flops, 2.0 * (1 * 2 * 32) * 32 * (4 + 4) / 2);
  OpCost backward = costOfOutput(
      R"(graph @bw(%g: f32[1,2,32,4], %q: f32[1,2,32,4], %k: f32[1,2,32,4], %v: f32[1,2,32,4], %o: f32[1,2,32,4], %lse: f32[1,2,32]) -> (f32[1,2,32,4]) {
  %gq, %gk, %gv = aten._scaled_dot_product_flash_attention_for_cpu_backward(%g, %q, %k, %v, %o, %lse) {dropout_p=0.0, is_causal=false} : (f32[1,2,32,4], f32[1,2,32,4], f32[1,2,32,4])
  return %gq
})");
  EXPECT_EQ(backward.flops, 2.5 * 2.0 * (1 * 2 * 32) * 32 * (4 + 4));
}

} // namespace
} // namespace loupe
